// Package collect reads the cluster once per scan into a snapshot: each input the enabled checks
// need is listed once, paginated, several at a time; bulk kinds are read metadata-only and only
// candidate pods are read in full. A read that fails is recorded in the snapshot, never fatal.
package collect

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// Clients are the API clients the collector reads with.
type Clients struct {
	Kube      kubernetes.Interface
	Dynamic   dynamic.Interface
	Metadata  metadata.Interface
	Discovery discovery.DiscoveryInterface
}

// Options tune a collection.
type Options struct {
	Scope    snapshot.Scope
	Settings snapshot.Settings
	// PageSize is the limit of each LIST page (default 500). Unless it is set, the bulk pod list
	// is one response when the apiserver streams list encodings (v1.33 and later), since continue
	// pages cost it several times as much as one streamed list served from its cache.
	PageSize int64
	// Concurrency bounds the reads in flight.
	Concurrency int
	// LogSince and LogLimitBytes bound the controller logs read.
	LogSince      time.Duration
	LogLimitBytes int64
	// Candidates returns the pods to read in full, given the metadata-only snapshot.
	Candidates func(*snapshot.Snapshot) []types.UID
	// PodAnnotations are the annotations metadata-only pods keep. The others (CNI state,
	// last-applied configurations, hashes) can outweigh the rest of a pod's metadata and are
	// dropped while the pod list is decoded.
	PodAnnotations []string
}

func (o *Options) defaults() {
	if o.PageSize <= 0 {
		o.PageSize = 500
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 8
	}
	if o.LogSince <= 0 {
		o.LogSince = 30 * time.Minute
	}
	if o.LogLimitBytes <= 0 {
		o.LogLimitBytes = 8 << 20
	}
	if o.Settings == (snapshot.Settings{}) {
		o.Settings = snapshot.DefaultSettings()
	}
}

// Well-known resources the collector reads.
var (
	apiServices = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}
	capiCluster = schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta1", Resource: "clusters"}
	podsGVR     = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
)

// API groups whose presence the checks care about.
const (
	GroupKruise     = kruise.Group
	GroupClusterAPI = "cluster.x-k8s.io"
)

type collector struct {
	c    Clients
	opts Options
	snap *snapshot.Snapshot
	mu   sync.Mutex
	// resources found by discovery, for the objects input.
	resources []discovered
	discErr   error
	// covered are resources another input reads whole; the objects input does not list them again.
	covered map[schema.GroupResource]bool
	// podsRV is the resourceVersion the pod list was read at; candidates are read at it or newer.
	podsRV string
	// podPageSize is the page size of the bulk pod list; 0 reads it in one streamed response.
	podPageSize int64
	// asked are the candidate pods already read (or found gone), so no later round reads them again.
	asked map[types.UID]bool
}

type discovered struct {
	gvr        schema.GroupVersionResource
	kind       string
	namespaced bool
}

// Collect reads the inputs into a new, indexed snapshot. It fails only when the cluster cannot be
// reached at all; every other failure is recorded in Snapshot.Unread.
func Collect(ctx context.Context, c Clients, opts Options, inputs []snapshot.Input) (*snapshot.Snapshot, error) {
	pageSizeSet := opts.PageSize > 0
	opts.defaults()
	col := &collector{c: c, opts: opts, snap: &snapshot.Snapshot{
		Scope: opts.Scope, Settings: opts.Settings,
		Unread: map[snapshot.Input]error{}, Limits: map[snapshot.Input]string{}, Installed: map[string]bool{}, Logs: map[string]string{},
	}}
	sv, err := c.Discovery.ServerVersion()
	if err != nil {
		return nil, fmt.Errorf("read server version: %w", err)
	}
	col.snap.ServerVersion = sv.GitVersion
	col.podPageSize = opts.PageSize
	if !pageSizeSet && streamsLists(sv.Major, sv.Minor) {
		col.podPageSize = 0
	}
	col.discover(ctx)

	want := map[snapshot.Input]bool{}
	for _, in := range inputs {
		want[in] = true
	}
	readers := map[snapshot.Input]func(context.Context) error{
		snapshot.InputPods:            col.readPods,
		snapshot.InputNodes:           col.readNodes,
		snapshot.InputNodeLeases:      col.readNodeLeases,
		snapshot.InputEvents:          col.readEvents,
		snapshot.InputNamespaces:      col.readNamespaces,
		snapshot.InputAPIServices:     col.readAPIServices,
		snapshot.InputObjects:         col.readObjects,
		snapshot.InputKruiseWorkloads: col.readWorkloads,
		snapshot.InputSidecarSets:     col.readSidecarSets,
		snapshot.InputControllers:     col.readControllers,
		snapshot.InputClusterAPI:      col.readClusters,
	}
	col.covered = coveredResources(want)
	col.parallel(ctx, want, readers)
	if want[snapshot.InputObjects] {
		col.addCoveredObjects()
	}
	col.snap.Now = time.Now()
	col.snap.Index()

	if want[snapshot.InputPods] && opts.Candidates != nil {
		// A check may ask for more pods once it has seen the first ones (a sample of a group,
		// then the whole group), so candidates are asked for again until none are new.
		for range maxCandidateRounds {
			read, err := col.readCandidates(ctx, opts.Candidates(col.snap))
			if err != nil {
				col.unread(snapshot.InputPods, err)
				break
			}
			if read == 0 {
				break
			}
			col.snap.Index()
		}
	}
	if want[snapshot.InputControllerLogs] {
		if err := col.readLogs(ctx); err != nil {
			col.unread(snapshot.InputControllerLogs, err)
		}
	}
	col.snap.Index()
	return col.snap, nil
}

func (col *collector) parallel(ctx context.Context, want map[snapshot.Input]bool, readers map[snapshot.Input]func(context.Context) error) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, col.opts.Concurrency)
	names := make([]snapshot.Input, 0, len(readers))
	for in := range readers {
		names = append(names, in)
	}
	// The pod list is the longest read on a big cluster: it starts first, and the others start in
	// a fixed order as slots free up.
	sort.Slice(names, func(i, j int) bool {
		if (names[i] == snapshot.InputPods) != (names[j] == snapshot.InputPods) {
			return names[i] == snapshot.InputPods
		}
		return names[i] < names[j]
	})
	for _, in := range names {
		if !want[in] {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func(in snapshot.Input, read func(context.Context) error) {
			defer wg.Done()
			defer func() { <-sem }()
			if err := read(ctx); err != nil {
				col.unread(in, err)
			}
		}(in, readers[in])
	}
	wg.Wait()
}

func (col *collector) unread(in snapshot.Input, err error) {
	col.mu.Lock()
	defer col.mu.Unlock()
	if prev, ok := col.snap.Unread[in]; ok {
		err = fmt.Errorf("%v; %v", prev, err)
	}
	col.snap.Unread[in] = err
}

func (col *collector) add(f func(s *snapshot.Snapshot)) {
	col.mu.Lock()
	defer col.mu.Unlock()
	f(col.snap)
}

// readErr turns an API error into the short reason the report shows.
func readErr(verb, what string, err error) error {
	switch {
	case apierrors.IsForbidden(err):
		return fmt.Errorf("forbidden: %s %s", verb, what)
	case apierrors.IsNotFound(err):
		return fmt.Errorf("not found: %s %s", verb, what)
	}
	return fmt.Errorf("%s %s: %w", verb, what, err)
}

// namespace returns the namespace the scope reads; "" is all namespaces.
func (col *collector) namespace() string {
	if col.opts.Scope.AllNamespaces {
		return ""
	}
	return col.opts.Scope.Namespace
}

func resourceName(gvr schema.GroupVersionResource) string {
	if gvr.Group == "" {
		return gvr.Resource
	}
	return gvr.Group + "/" + gvr.Resource
}

// paginate calls page with the limit and continue token until the list is read whole.
func (col *collector) paginate(ctx context.Context, opts metav1.ListOptions, page func(context.Context, metav1.ListOptions) (string, error)) error {
	opts.Limit = col.opts.PageSize
	for {
		cont, err := page(ctx, opts)
		if err != nil {
			return err
		}
		if cont == "" {
			return nil
		}
		opts.Continue = cont
	}
}

func (col *collector) discover(ctx context.Context) {
	_, lists, err := col.c.Discovery.ServerGroupsAndResources()
	if err != nil {
		var gdf *discovery.ErrGroupDiscoveryFailed
		if !errors.As(err, &gdf) {
			col.discErr = fmt.Errorf("discovery: %w", err)
			return
		}
		// Some aggregated APIs are down; the rest is still usable.
		var failed []string
		for gv := range gdf.Groups {
			failed = append(failed, gv.String())
		}
		sort.Strings(failed)
		col.discErr = fmt.Errorf("discovery failed for %s", strings.Join(failed, ", "))
	}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		col.snap.Installed[gv.Group] = true
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !hasVerb(r.Verbs, "list") {
				continue
			}
			col.resources = append(col.resources, discovered{
				gvr: gv.WithResource(r.Name), kind: r.Kind, namespaced: r.Namespaced,
			})
		}
	}
	_ = ctx
}

func hasVerb(verbs metav1.Verbs, v string) bool {
	for _, x := range verbs {
		if x == v {
			return true
		}
	}
	return false
}

func (col *collector) readNodes(ctx context.Context) error {
	var nodes []*corev1.Node
	err := col.paginate(ctx, metav1.ListOptions{}, func(ctx context.Context, o metav1.ListOptions) (string, error) {
		l, err := col.c.Kube.CoreV1().Nodes().List(ctx, o)
		if err != nil {
			return "", readErr("list", "nodes", err)
		}
		for i := range l.Items {
			nodes = append(nodes, &l.Items[i])
		}
		return l.Continue, nil
	})
	col.add(func(s *snapshot.Snapshot) { s.Nodes = nodes })
	return err
}

func (col *collector) readNodeLeases(ctx context.Context) error {
	return col.listLeases(ctx, corev1.NamespaceNodeLease, true)
}

func (col *collector) listLeases(ctx context.Context, ns string, node bool) error {
	return col.paginate(ctx, metav1.ListOptions{}, func(ctx context.Context, o metav1.ListOptions) (string, error) {
		l, err := col.c.Kube.CoordinationV1().Leases(ns).List(ctx, o)
		if err != nil {
			return "", readErr("list", "coordination.k8s.io/leases in "+ns, err)
		}
		col.add(func(s *snapshot.Snapshot) {
			for i := range l.Items {
				if node {
					s.NodeLeases = append(s.NodeLeases, &l.Items[i])
				} else {
					s.Leases = append(s.Leases, &l.Items[i])
				}
			}
		})
		return l.Continue, nil
	})
}

// readEvents keeps only the events checks use: Warnings, and any event about an OpenKruise
// object (its SuccessfulCreate/SuccessfulDelete show the controller is alive). The apiserver
// filters them (field selectors on type and involvedObject.apiVersion), so the Normal events that
// make up most of a busy cluster's events are never sent; a server that rejects the selectors gets
// one unfiltered list, filtered here.
func (col *collector) readEvents(ctx context.Context) error {
	ns := col.namespace()
	var events []*corev1.Event
	list := func(sel string) error {
		return col.paginate(ctx, metav1.ListOptions{FieldSelector: sel}, func(ctx context.Context, o metav1.ListOptions) (string, error) {
			l, err := col.c.Kube.CoreV1().Events(ns).List(ctx, o)
			if err != nil {
				return "", err
			}
			for i := range l.Items {
				if e := l.Items[i]; e.Type == corev1.EventTypeWarning || strings.HasPrefix(e.InvolvedObject.APIVersion, kruise.Group+"/") {
					// A copy, so the page's other events are not kept alive; no check reads who wrote an event.
					e.ManagedFields = nil
					events = append(events, &e)
				}
			}
			return l.Continue, nil
		})
	}
	selectors := []string{"type=" + corev1.EventTypeWarning}
	if col.snap.Installed[GroupKruise] {
		for _, gv := range col.groupVersions(GroupKruise, "v1alpha1", "v1beta1") {
			selectors = append(selectors, "type!="+corev1.EventTypeWarning+",involvedObject.apiVersion="+gv)
		}
	}
	var err error
	for _, sel := range selectors {
		if err = list(sel); apierrors.IsBadRequest(err) {
			events = nil
			err = list("")
			break
		}
		if err != nil {
			break
		}
	}
	col.add(func(s *snapshot.Snapshot) { s.Events = events })
	if err != nil {
		return readErr("list", "events", err)
	}
	return nil
}

// groupVersions returns the versions of group that discovery found, plus the known ones, as
// group/version strings.
func (col *collector) groupVersions(group string, known ...string) []string {
	seen := map[string]bool{}
	var out []string
	add := func(v string) {
		if gv := group + "/" + v; !seen[gv] {
			seen[gv] = true
			out = append(out, gv)
		}
	}
	for _, v := range known {
		add(v)
	}
	for _, r := range col.resources {
		if r.gvr.Group == group {
			add(r.gvr.Version)
		}
	}
	return out
}

func (col *collector) readNamespaces(ctx context.Context) error {
	if ns := col.namespace(); ns != "" {
		n, err := col.c.Kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err != nil {
			return readErr("get", "namespaces/"+ns, err)
		}
		col.add(func(s *snapshot.Snapshot) { s.Namespaces = []*corev1.Namespace{n} })
		return nil
	}
	var out []*corev1.Namespace
	err := col.paginate(ctx, metav1.ListOptions{}, func(ctx context.Context, o metav1.ListOptions) (string, error) {
		l, err := col.c.Kube.CoreV1().Namespaces().List(ctx, o)
		if err != nil {
			return "", readErr("list", "namespaces", err)
		}
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
		return l.Continue, nil
	})
	col.add(func(s *snapshot.Snapshot) { s.Namespaces = out })
	return err
}

func (col *collector) listUnstructured(ctx context.Context, gvr schema.GroupVersionResource, ns string, opts metav1.ListOptions) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	err := col.paginate(ctx, opts, func(ctx context.Context, o metav1.ListOptions) (string, error) {
		l, err := col.c.Dynamic.Resource(gvr).Namespace(ns).List(ctx, o)
		if err != nil {
			return "", readErr("list", resourceName(gvr), err)
		}
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
		return l.GetContinue(), nil
	})
	return out, err
}

func (col *collector) readAPIServices(ctx context.Context) error {
	if !col.snap.Installed[apiServices.Group] {
		return nil
	}
	out, err := col.listUnstructured(ctx, apiServices, "", metav1.ListOptions{})
	col.add(func(s *snapshot.Snapshot) { s.APIServices = out })
	return err
}

// readObjects lists every other listable resource metadata-only, keeping only objects being
// deleted, so memory grows with the stuck objects rather than with the cluster.
func (col *collector) readObjects(ctx context.Context) error {
	ns := col.namespace()
	skip := map[schema.GroupResource]bool{
		{Resource: "pods"}: true, {Resource: "events"}: true, {Group: "events.k8s.io", Resource: "events"}: true,
		{Resource: "namespaces"}: true,
		// Same objects served under another name.
		{Group: "extensions", Resource: "ingresses"}: true,
		// Computed on each read by probing the control plane (slow, deprecated): nothing stored,
		// so nothing that can be stuck in deletion.
		{Resource: "componentstatuses"}: true,
	}
	seen := map[schema.GroupResource]bool{}
	var todo []discovered
	for _, r := range col.resources {
		gr := r.gvr.GroupResource()
		if skip[gr] || col.covered[gr] || seen[gr] || (ns != "" && !r.namespaced) {
			continue
		}
		seen[gr] = true
		todo = append(todo, r)
	}
	var (
		wg        sync.WaitGroup
		sem       = make(chan struct{}, col.opts.Concurrency)
		mu        sync.Mutex
		forbidden []string
		failed    []string
	)
	for _, r := range todo {
		wg.Add(1)
		go func(r discovered) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			var found []snapshot.Object
			err := col.paginate(ctx, metav1.ListOptions{}, func(ctx context.Context, o metav1.ListOptions) (string, error) {
				l, err := col.c.Metadata.Resource(r.gvr).Namespace(ns).List(ctx, o)
				if err != nil {
					return "", err
				}
				for i := range l.Items {
					if l.Items[i].DeletionTimestamp != nil {
						found = append(found, snapshot.Object{Resource: r.gvr, Kind: r.kind, Namespaced: r.namespaced, Meta: &l.Items[i]})
					}
				}
				return l.Continue, nil
			})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case apierrors.IsForbidden(err) && r.gvr.GroupResource() == (schema.GroupResource{Resource: "secrets"}):
				// Listing Secrets, even metadata-only, needs a right that returns secret data; the
				// scan role does not grant it, so this is a stated limit, not a coverage gap.
				col.mu.Lock()
				col.snap.Limits[snapshot.InputObjects] = "secrets not listed: these credentials may not list secrets, so stuck Secrets are not reported"
				col.mu.Unlock()
			case apierrors.IsForbidden(err):
				forbidden = append(forbidden, resourceName(r.gvr))
			case apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err):
				// Served in discovery but not listable here: nothing to report.
			case err != nil:
				failed = append(failed, fmt.Sprintf("%s (%v)", resourceName(r.gvr), err))
			}
			col.add(func(s *snapshot.Snapshot) { s.Objects = append(s.Objects, found...) })
		}(r)
	}
	wg.Wait()
	var errs []string
	if col.discErr != nil {
		errs = append(errs, col.discErr.Error())
	}
	if len(forbidden) > 0 {
		sort.Strings(forbidden)
		errs = append(errs, "forbidden: list "+summarize(forbidden, 6))
	}
	if len(failed) > 0 {
		sort.Strings(failed)
		errs = append(errs, "failed: list "+summarize(failed, 3))
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

// coveredResources are the resources that other wanted inputs list whole.
func coveredResources(want map[snapshot.Input]bool) map[schema.GroupResource]bool {
	out := map[schema.GroupResource]bool{}
	if want[snapshot.InputNodes] {
		out[schema.GroupResource{Resource: "nodes"}] = true
	}
	if want[snapshot.InputControllers] {
		out[schema.GroupResource{Group: "apps", Resource: "deployments"}] = true
	}
	if want[snapshot.InputAPIServices] {
		out[apiServices.GroupResource()] = true
	}
	if want[snapshot.InputKruiseWorkloads] {
		for _, gvr := range []schema.GroupVersionResource{kruise.CloneSets, kruise.StatefulSets, kruise.DaemonSets} {
			out[gvr.GroupResource()] = true
		}
	}
	if want[snapshot.InputClusterAPI] {
		out[capiCluster.GroupResource()] = true
	}
	return out
}

// addCoveredObjects adds the objects being deleted among those other inputs read whole, so the
// objects input still sees every resource.
func (col *collector) addCoveredObjects() {
	s := col.snap
	add := func(gvr schema.GroupVersionResource, kind string, namespaced bool, m metav1.ObjectMeta) {
		if m.DeletionTimestamp == nil || !col.covered[gvr.GroupResource()] {
			return
		}
		if ns := col.namespace(); ns != "" && m.Namespace != ns {
			return
		}
		pom := &metav1.PartialObjectMetadata{ObjectMeta: m}
		pom.APIVersion, pom.Kind = gvr.GroupVersion().String(), kind
		s.Objects = append(s.Objects, snapshot.Object{Resource: gvr, Kind: kind, Namespaced: namespaced, Meta: pom})
	}
	for _, n := range s.Nodes {
		add(schema.GroupVersionResource{Version: "v1", Resource: "nodes"}, "Node", false, n.ObjectMeta)
	}
	for _, d := range s.Deployments {
		add(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, "Deployment", true, d.ObjectMeta)
	}
	for _, a := range s.APIServices {
		add(apiServices, "APIService", false, metaOf(a))
	}
	for _, w := range s.Workloads {
		gvr := map[string]schema.GroupVersionResource{kruise.KindCloneSet: kruise.CloneSets, kruise.KindStatefulSet: kruise.StatefulSets, kruise.KindDaemonSet: kruise.DaemonSets}[w.Kind]
		add(gvr, w.Kind, true, w.ObjectMeta)
	}
	for _, c := range s.Clusters {
		add(capiCluster, "Cluster", true, metaOf(c))
	}
}

func metaOf(u *unstructured.Unstructured) metav1.ObjectMeta {
	var m metav1.ObjectMeta
	if raw, ok := u.Object["metadata"].(map[string]any); ok {
		_ = runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &m)
	}
	return m
}

func summarize(items []string, max int) string {
	if len(items) <= max {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:max], ", "), len(items)-max)
}

func (col *collector) readWorkloads(ctx context.Context) error {
	if !col.snap.Installed[GroupKruise] {
		return nil
	}
	var errs []string
	for _, gvr := range []schema.GroupVersionResource{kruise.CloneSets, kruise.StatefulSets, kruise.DaemonSets} {
		if !col.served(gvr) {
			continue
		}
		items, err := col.listUnstructured(ctx, gvr, col.namespace(), metav1.ListOptions{})
		if err != nil {
			errs = append(errs, err.Error())
		}
		var ws []*kruise.Workload
		for _, u := range items {
			w, err := kruise.WorkloadFromUnstructured(u)
			if err != nil {
				errs = append(errs, err.Error())
				continue
			}
			ws = append(ws, w)
		}
		col.add(func(s *snapshot.Snapshot) { s.Workloads = append(s.Workloads, ws...) })
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

// served reports whether discovery found the resource at that version.
func (col *collector) served(gvr schema.GroupVersionResource) bool {
	for _, r := range col.resources {
		if r.gvr == gvr {
			return true
		}
	}
	return false
}

func (col *collector) readSidecarSets(ctx context.Context) error {
	if !col.served(kruise.SidecarSets) {
		return nil
	}
	items, err := col.listUnstructured(ctx, kruise.SidecarSets, "", metav1.ListOptions{})
	var out []*kruise.SidecarSet
	for _, u := range items {
		if ss, derr := kruise.SidecarSetFromUnstructured(u); derr == nil {
			out = append(out, ss)
		}
	}
	col.add(func(s *snapshot.Snapshot) { s.SidecarSets = out })
	return err
}

func (col *collector) readClusters(ctx context.Context) error {
	if !col.served(capiCluster) {
		return nil
	}
	items, err := col.listUnstructured(ctx, capiCluster, col.namespace(), metav1.ListOptions{})
	col.add(func(s *snapshot.Snapshot) { s.Clusters = items })
	return err
}

// readControllers reads Deployments (every namespace when allowed, else the controllers' default
// namespaces), then the leader Leases and pods of the kruise-manager.
func (col *collector) readControllers(ctx context.Context) error {
	var deps []*appsv1.Deployment
	listDeps := func(ns string) error {
		return col.paginate(ctx, metav1.ListOptions{}, func(ctx context.Context, o metav1.ListOptions) (string, error) {
			l, err := col.c.Kube.AppsV1().Deployments(ns).List(ctx, o)
			if err != nil {
				where := "in all namespaces"
				if ns != "" {
					where = "in " + ns
				}
				return "", readErr("list", "apps/deployments "+where, err)
			}
			for i := range l.Items {
				deps = append(deps, &l.Items[i])
			}
			return l.Continue, nil
		})
	}
	var errs []string
	if err := listDeps(""); err != nil {
		deps = nil
		namespaces := []string{col.opts.Settings.KruiseNamespace, metav1.NamespaceSystem}
		if ns := col.namespace(); ns != "" {
			namespaces = append(namespaces, ns)
		}
		for _, ns := range uniq(namespaces) {
			if err := listDeps(ns); err != nil {
				errs = append(errs, err.Error())
			}
		}
	}
	col.add(func(s *snapshot.Snapshot) { s.Deployments = deps })

	// The kruise-manager's leader Lease and pods.
	if mgr := kruise.FindManager(deps, col.opts.Settings.KruiseNamespace, col.opts.Settings.KruiseDeployment); mgr != nil {
		if err := col.listLeases(ctx, mgr.LeaseNamespace, false); err != nil {
			errs = append(errs, err.Error())
		}
		ns := mgr.Deployment.Namespace
		sel, err := metav1.LabelSelectorAsSelector(mgr.Deployment.Spec.Selector)
		if err == nil {
			l, err := col.c.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
			if err != nil {
				errs = append(errs, readErr("list", "pods in "+ns, err).Error())
			} else {
				col.add(func(s *snapshot.Snapshot) {
					for i := range l.Items {
						s.ControllerPods = append(s.ControllerPods, &l.Items[i])
					}
				})
			}
		}
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

func uniq(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// readLogs reads the kruise-manager leader's recent log, bounded in time and size, and keeps
// only the expectation lines.
func (col *collector) readLogs(ctx context.Context) error {
	mgr := kruise.FindManager(col.snap.Deployments, col.opts.Settings.KruiseNamespace, col.opts.Settings.KruiseDeployment)
	if mgr == nil {
		return nil
	}
	ns := mgr.Deployment.Namespace
	lease, ok := col.snap.Lease(mgr.LeaseNamespace, mgr.LeaseName)
	if !ok || lease.Spec.HolderIdentity == nil {
		return nil
	}
	pod := kruise.HolderPod(*lease.Spec.HolderIdentity)
	// The apiserver answers pods/log of a pod bound to no node with an empty body, not an error.
	if p, ok := col.snap.ControllerPod(ns, pod); ok && p.Spec.NodeName == "" {
		return fmt.Errorf("get pods/log of %s/%s: the leader pod is not bound to a node", ns, pod)
	}
	since := int64(col.opts.LogSince.Seconds())
	limit := col.opts.LogLimitBytes
	req := col.c.Kube.CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{
		Container: kruise.ManagerContainer, SinceSeconds: &since, LimitBytes: &limit,
	})
	stream, err := req.Stream(ctx)
	if err != nil {
		return readErr("get", "pods/log of "+ns+"/"+pod, err)
	}
	defer stream.Close()
	var kept strings.Builder
	sc := bufio.NewScanner(io.LimitReader(stream, limit))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if line := sc.Text(); kruise.IsExpectationLogLine(line) {
			kept.WriteString(line)
			kept.WriteByte('\n')
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read pods/log of %s/%s: %w", ns, pod, err)
	}
	col.add(func(s *snapshot.Snapshot) { s.Logs[ns+"/"+pod] = kept.String() })
	return nil
}
