package collect

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/fault"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/internal/uniq"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/knowledge"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// workloadList lists one kind of apps workload in a namespace ("" for all) and says where.
type workloadList func(ctx context.Context, ns string) error

// readControllerWorkloads reads the Deployments, StatefulSets and DaemonSets that controllers run
// as: in every namespace when allowed, else in the controllers' default namespaces and the scan's.
// A partial search is recorded as a coverage note naming what was searched, because the checks
// must not take "not found there" for "not installed". Only a denial narrows the search: any other
// failure of the cluster-wide list (after its retries) is an error. It returns the Deployments read
// and the failures of the namespaces the kruise-manager is looked for in.
func (col *collector) readControllerWorkloads(ctx context.Context) ([]*appsv1.Deployment, []error) {
	if deps, ok := col.readNearControllerWorkloads(ctx); ok {
		return deps, nil
	}
	return col.readAllControllerWorkloads(ctx)
}

// readNearControllerWorkloads is a one-namespace scope's cheaper first read: the workloads of
// the scope's namespace and of the namespaces the kruise-manager and the Cluster API controller
// are configured in, listed whole. That is all the checks use of them unless one searches them
// all: stuck-terminating looks for a finalizer's owner or kwok's controller among every workload
// (by image, name or container name) and says so on the snapshot (Snapshot.AskWorkloads), and
// readAskedWorkloads then reads the matches. An installed controller whose Deployment is not at
// its configured place may run anywhere, found by image (kruise.FindManager, clusterAPIManager):
// those running its image in any namespace are read too (matchWorkloads). ok is false when the
// scope is every namespace, the checks' declarations are not known, or a read failed.
func (col *collector) readNearControllerWorkloads(ctx context.Context) ([]*appsv1.Deployment, bool) {
	scope := col.namespace()
	// Without the checks' declaration (Options.Reads) the near read would always be widened.
	if scope == "" || col.opts.Reads == nil || col.opts.AsksWorkloads == nil || !col.want[snapshot.InputPods] {
		return nil, false
	}
	set := col.opts.Settings
	var near []string
	if col.snap.Installed[GroupKruise] {
		near = append(near, set.KruiseNamespace)
	}
	if col.snap.Installed[GroupClusterAPI] {
		near = append(near, knowledge.ClusterAPIManager.Namespace)
	}
	near = uniq.Of(append(near, scope, set.KruiseNamespace))
	near = slices.DeleteFunc(near, func(ns string) bool { return ns == "" })
	var (
		mu      sync.Mutex
		deps    []*appsv1.Deployment
		sets    []*appsv1.StatefulSet
		daemons []*appsv1.DaemonSet
	)
	apps := col.c.Kube.AppsV1()
	var g errgroup.Group
	g.SetLimit(col.opts.Concurrency)
	for _, ns := range near {
		g.Go(func() error {
			var d []*appsv1.Deployment
			if err := lister(col, "deployments", apps.Deployments, func(l *appsv1.DeploymentList) []appsv1.Deployment { return l.Items }, &d)(ctx, ns); err != nil {
				return err
			}
			var s []*appsv1.StatefulSet
			if err := lister(col, "statefulsets", apps.StatefulSets, func(l *appsv1.StatefulSetList) []appsv1.StatefulSet { return l.Items }, &s)(ctx, ns); err != nil {
				return err
			}
			var ds []*appsv1.DaemonSet
			if err := lister(col, "daemonsets", apps.DaemonSets, func(l *appsv1.DaemonSetList) []appsv1.DaemonSet { return l.Items }, &ds)(ctx, ns); err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			deps, sets, daemons = append(deps, d...), append(sets, s...), append(daemons, ds...)
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, false // the cluster-wide read says what was refused or failed
	}
	// A controller not at its configured place is looked for by image, as kruise.FindManager and
	// clusterAPIManager do, among every namespace's workloads.
	at := func(ns, name string) bool {
		return slices.ContainsFunc(deps, func(d *appsv1.Deployment) bool { return d.Namespace == ns && d.Name == name })
	}
	var search []snapshot.WorkloadQuery
	if col.snap.Installed[GroupKruise] && !at(set.KruiseNamespace, set.KruiseDeployment) {
		search = append(search, snapshot.WorkloadQuery{ImageRepository: kruise.ManagerImageRepository})
	}
	if w := knowledge.ClusterAPIManager; col.snap.Installed[GroupClusterAPI] && !at(w.Namespace, w.Name) {
		search = append(search, snapshot.WorkloadQuery{ImageRepository: knowledge.ClusterAPIImage})
	}
	var found workloads
	if len(search) > 0 {
		var ok bool
		if found, ok = col.matchWorkloads(ctx, search); !ok {
			return nil, false
		}
	}
	deps, sets, daemons = appendNew(deps, found.deps), appendNew(sets, found.sets), appendNew(daemons, found.daemons)
	col.add(func(s *snapshot.Snapshot) {
		s.Deployments, s.StatefulSets, s.DaemonSets, s.ControllersNear = deps, sets, daemons, true
		for _, ns := range near {
			s.HoldWorkloads(snapshot.WorkloadQuery{Namespace: ns})
		}
		s.HoldWorkloads(search...)
	})
	col.nearControllers = true
	return deps, true
}

// widenControllers replaces the near read of the controllers' workloads with the cluster-wide
// one, for the checks that search them all.
func (col *collector) widenControllers(ctx context.Context) {
	col.nearControllers = false
	col.add(func(s *snapshot.Snapshot) { s.ControllersNear = false })
	if _, errs := col.readAllControllerWorkloads(ctx); len(errs) > 0 {
		col.unread(snapshot.InputControllers, fault.Join(errs...))
	}
}

// readAllControllerWorkloads reads the controllers' workloads in every namespace when allowed,
// else in their default namespaces and the scope's (readControllerWorkloads).
func (col *collector) readAllControllerWorkloads(ctx context.Context) ([]*appsv1.Deployment, []error) {
	var deps []*appsv1.Deployment
	var sets []*appsv1.StatefulSet
	var daemons []*appsv1.DaemonSet
	apps := col.c.Kube.AppsV1()
	kinds := []struct {
		list  workloadList
		reset func()
	}{
		{lister(col, "deployments", apps.Deployments, func(l *appsv1.DeploymentList) []appsv1.Deployment { return l.Items }, &deps),
			func() { deps = nil }},
		{lister(col, "statefulsets", apps.StatefulSets, func(l *appsv1.StatefulSetList) []appsv1.StatefulSet { return l.Items }, &sets),
			func() { sets = nil }},
		{lister(col, "daemonsets", apps.DaemonSets, func(l *appsv1.DaemonSetList) []appsv1.DaemonSet { return l.Items }, &daemons),
			func() { daemons = nil }},
	}
	required := []string{col.opts.Settings.KruiseNamespace, metav1.NamespaceSystem}
	if ns := col.namespace(); ns != "" {
		required = append(required, ns)
	}
	// An unset namespace (no --kruise-namespace, no scan namespace) is none to search.
	fallback := uniq.Of(slices.DeleteFunc(append(append([]string{}, required...), knowledge.OwnerNamespaces()...),
		func(ns string) bool { return ns == "" }))
	var (
		errs    []error
		refused []string
	)
	// searched[ns] counts the refused kinds then listed in namespace ns; nil when none was refused.
	var searched map[string]int
	for _, k := range kinds {
		err := k.list(ctx, "")
		if err == nil {
			continue
		}
		k.reset()
		if !fault.Limit(err) {
			errs = append(errs, err)
			continue
		}
		refused = append(refused, err.Error())
		if searched == nil {
			searched = map[string]int{}
		}
		for _, ns := range fallback {
			if err := k.list(ctx, ns); err != nil {
				if slices.Contains(required, ns) {
					errs = append(errs, err)
				}
				continue
			}
			searched[ns]++
		}
	}
	var namespaces []string
	if searched != nil {
		namespaces = []string{}
		for _, ns := range fallback {
			// Kinds listed in all namespaces cover this one too.
			if searched[ns] == len(refused) {
				namespaces = append(namespaces, ns)
			}
		}
	}
	col.add(func(s *snapshot.Snapshot) {
		s.Deployments, s.StatefulSets, s.DaemonSets = deps, sets, daemons
		s.ControllerNamespaces = namespaces
		if namespaces != nil {
			s.Limits[snapshot.InputControllers] = partialSearchNote(namespaces, refused)
		}
	})
	return deps, errs
}

// lister lists one kind of workload of a namespace ("" for all) into a slice.
func lister[L interface{ GetContinue() string }, T any, C interface {
	List(context.Context, metav1.ListOptions) (L, error)
}](col *collector, resource string, client func(ns string) C, items func(L) []T, into *[]*T) workloadList {
	list := selectedLister(col, resource, client, items, into)
	return func(ctx context.Context, ns string) error { return list(ctx, ns, "") }
}

func where(ns string) string {
	if ns == "" {
		return "in all namespaces"
	}
	return "in " + ns
}

// partialSearchNote says which namespaces were searched for controllers and why only those.
func partialSearchNote(namespaces, refused []string) string {
	in := "no namespace"
	if len(namespaces) > 0 {
		in = "namespaces " + strings.Join(namespaces, ", ")
	}
	return fmt.Sprintf("controllers (Deployments, StatefulSets, DaemonSets) searched only in %s (%s): "+
		"a finalizer's owner running elsewhere is not seen, so no owner is reported missing; "+
		"nor are such workloads being deleted elsewhere read, whose finalizers stuck-terminating would judge", in, strings.Join(refused, "; "))
}
