package collect

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/fault"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

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
		if skip[gr] || col.covered[gr] || seen[gr] || (!r.namespaced && !col.readsCluster(gr)) {
			continue
		}
		seen[gr] = true
		todo = append(todo, r)
	}
	// Each list fills its own slot, so the results need no lock; they are added in the order listed.
	type listed struct {
		found []snapshot.Object
		err   error
	}
	out := make([]listed, len(todo))
	var g errgroup.Group
	g.SetLimit(col.opts.Concurrency)
	for i, r := range todo {
		g.Go(func() error {
			var found []snapshot.Object
			// With a label selector only objects matching it can be findings.
			err := col.paginate(ctx, metav1.ListOptions{LabelSelector: col.opts.Scope.LabelSelector}, func(ctx context.Context, o metav1.ListOptions) (string, error) {
				l, err := col.c.Metadata.Resource(r.gvr).Namespace(listNamespace(ns, r.namespaced)).List(ctx, o)
				if err != nil {
					return "", err
				}
				for i := range l.Items {
					if l.Items[i].DeletionTimestamp != nil {
						found = append(found, snapshot.Object{Resource: r.gvr, Kind: r.kind, Namespaced: r.namespaced, Meta: &l.Items[i]})
					}
				}
				return l.Continue, nil
			}, func() { found = nil })
			out[i] = listed{found, err}
			return nil // recorded below: a failed list never stops the others
		})
	}
	_ = g.Wait()
	var forbidden, failed, converting []string
	var found []snapshot.Object
	for i, r := range todo {
		switch err := out[i].err; {
		case apierrors.IsForbidden(err) && r.gvr.GroupResource() == (schema.GroupResource{Resource: "secrets"}):
			// Listing Secrets, even metadata-only, needs a right that returns secret data; the
			// scan role does not grant it, so this is a stated limit, not a coverage gap.
			col.add(func(s *snapshot.Snapshot) {
				s.Limits[snapshot.InputObjects] = "secrets not listed: these credentials may not list secrets, so stuck Secrets are not reported"
			})
		case apierrors.IsForbidden(err):
			forbidden = append(forbidden, resourceName(r.gvr))
		case apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err):
			// Served in discovery but not listable here: nothing to report.
		case fault.ConversionFailed(err):
			// Its objects cannot be read at this version while the webhook is down: what the
			// stuck-terminating check diagnoses from the namespace condition, not a blind scan.
			converting = append(converting, fmt.Sprintf("%s (%s)", resourceName(r.gvr), conversionQuote(err)))
		case err != nil:
			failed = append(failed, fmt.Sprintf("%s (%v)", resourceName(r.gvr), err))
		}
		found = append(found, out[i].found...)
	}
	col.add(func(s *snapshot.Snapshot) { s.Objects = append(s.Objects, found...) })
	var errs []error
	if col.discErr != nil {
		errs = append(errs, col.discErr)
	}
	if len(forbidden) > 0 {
		sort.Strings(forbidden)
		errs = append(errs, fault.LimitError("forbidden: list "+summarize(forbidden, 6)))
	}
	if len(converting) > 0 {
		sort.Strings(converting)
		errs = append(errs, fault.LimitError("conversion webhook failing: list "+summarize(converting, 3)))
	}
	if len(failed) > 0 {
		sort.Strings(failed)
		errs = append(errs, errors.New("failed: list "+summarize(failed, 3)))
	}
	return fault.Join(errs...)
}

// coveredResources are the resources that other wanted inputs list whole.
func coveredResources(want map[snapshot.Input]bool) map[schema.GroupResource]bool {
	out := map[schema.GroupResource]bool{}
	if want[snapshot.InputNodes] {
		out[schema.GroupResource{Resource: "nodes"}] = true
	}
	if want[snapshot.InputControllers] {
		for _, r := range []string{"deployments", "statefulsets", "daemonsets"} {
			out[schema.GroupResource{Group: "apps", Resource: r}] = true
		}
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
	if want[snapshot.InputPersistentVolumes] {
		out[schema.GroupResource{Resource: "persistentvolumes"}] = true
	}
	if want[snapshot.InputDeletedServices] {
		out[schema.GroupResource{Resource: "services"}] = true
	}
	if want[snapshot.InputDeletedAttachments] {
		out[schema.GroupResource{Group: "storage.k8s.io", Resource: "volumeattachments"}] = true
	}
	if want[snapshot.InputAdmission] {
		for _, gvr := range admissionResources() {
			out[gvr.GroupResource()] = true
		}
	}
	return out
}

// addCoveredObjects adds the objects being deleted among those other inputs read whole, so the
// objects input still sees every resource.
func (col *collector) addCoveredObjects() {
	s := col.snap
	add := func(gvr schema.GroupVersionResource, kind string, namespaced bool, m metav1.ObjectMeta) {
		if m.DeletionTimestamp == nil || !col.covered[gvr.GroupResource()] || !col.opts.Scope.InScope(m.Labels) {
			return
		}
		if ns := col.namespace(); ns != "" && m.Namespace != ns && (m.Namespace != "" || !col.readsCluster(gvr.GroupResource())) {
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
	for _, d := range s.StatefulSets {
		add(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"}, "StatefulSet", true, d.ObjectMeta)
	}
	for _, d := range s.DaemonSets {
		add(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "daemonsets"}, "DaemonSet", true, d.ObjectMeta)
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
	for _, pv := range s.PersistentVolumes {
		add(schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumes"}, "PersistentVolume", false, pv.ObjectMeta)
	}
	for _, svc := range s.DeletedServices {
		add(schema.GroupVersionResource{Version: "v1", Resource: "services"}, "Service", true, svc.ObjectMeta)
	}
	for _, va := range s.DeletedAttachments {
		add(schema.GroupVersionResource{Group: "storage.k8s.io", Version: "v1", Resource: "volumeattachments"}, "VolumeAttachment", false, va.ObjectMeta)
	}
	for _, c := range s.Admission.ValidatingWebhooks {
		add(validatingWebhooks, "ValidatingWebhookConfiguration", false, c.ObjectMeta)
	}
	for _, c := range s.Admission.MutatingWebhooks {
		add(mutatingWebhooks, "MutatingWebhookConfiguration", false, c.ObjectMeta)
	}
	for _, p := range s.Admission.Policies {
		add(admissionPolicies, "ValidatingAdmissionPolicy", false, p.ObjectMeta)
	}
	for _, b := range s.Admission.PolicyBindings {
		add(policyBindings, "ValidatingAdmissionPolicyBinding", false, b.ObjectMeta)
	}
}

func metaOf(u *unstructured.Unstructured) metav1.ObjectMeta {
	var m metav1.ObjectMeta
	if raw, ok := u.Object["metadata"].(map[string]any); ok {
		_ = runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &m)
	}
	return m
}
