package e2e

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/collect"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

var apiServices = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// createObject creates an unstructured object of gvr in ns ("" for cluster-scoped) as kubectl
// apply would.
func (e *collectEnv) createObject(t *testing.T, gvr schema.GroupVersionResource, ns string, obj map[string]any) {
	t.Helper()
	u := &unstructured.Unstructured{Object: obj}
	if _, err := e.k.dyn.Resource(gvr).Namespace(ns).Create(t.Context(), u, metav1.CreateOptions{FieldManager: "kubectl-client-side-apply"}); err != nil {
		t.Fatalf("create %s %s/%s: %v", gvr.Resource, ns, u.GetName(), err)
	}
}

// workloadSpec is a workload's spec of one container, its pods labelled app=name.
func workloadSpec(name string) map[string]any {
	labels := map[string]any{"app": name}
	return map[string]any{"replicas": int64(1), "selector": map[string]any{"matchLabels": labels},
		"template": map[string]any{"metadata": map[string]any{"labels": labels},
			"spec": map[string]any{"containers": []any{map[string]any{"name": "app", "image": "nginx:1.27"}}}}}
}

// A user RBAC denies CloneSets has them recorded as forbidden; the Advanced StatefulSets,
// SidecarSets, Cluster API Clusters and APIServices are read, and both groups are installed.
// Runs before NamesAnUndecodableSidecarSet, whose broken SidecarSet would make the SidecarSets
// input unread.
func (e *collectEnv) readsOpenKruiseAndOptionalAPIs(t *testing.T) {
	ns := e.namespace(t, "okcase")
	gv := func(gvr schema.GroupVersionResource) string { return gvr.GroupVersion().String() }
	e.createObject(t, kruise.CloneSets, ns, map[string]any{"apiVersion": gv(kruise.CloneSets), "kind": kruise.KindCloneSet,
		"metadata": map[string]any{"name": "okcase-web", "namespace": ns}, "spec": workloadSpec("okcase-web")})
	e.createObject(t, kruise.StatefulSets, ns, map[string]any{"apiVersion": gv(kruise.StatefulSets), "kind": kruise.KindStatefulSet,
		"metadata": map[string]any{"name": "okcase-db", "namespace": ns}, "spec": workloadSpec("okcase-db")})
	// It selects pods no other case makes, so it injects into none of theirs.
	e.createObject(t, kruise.SidecarSets, "", map[string]any{"apiVersion": gv(kruise.SidecarSets), "kind": "SidecarSet",
		"metadata": map[string]any{"name": "okcase-mesh"}, "spec": map[string]any{
			"selector":   map[string]any{"matchLabels": map[string]any{"okcase-mesh": "inject"}},
			"containers": []any{map[string]any{"name": "proxy", "image": "envoy:1.31"}}}})
	e.createObject(t, teClusters, ns, map[string]any{"apiVersion": gv(teClusters), "kind": "Cluster",
		"metadata": map[string]any{"name": "okcase-prod", "namespace": ns},
		"spec":     map[string]any{"controlPlaneEndpoint": map[string]any{"host": "10.0.0.10", "port": int64(6443)}}})

	const user = "okcase-reader"
	e.grant(t, user, "", rbacv1.PolicyRule{APIGroups: []string{kruise.Group}, Resources: []string{"statefulsets", "daemonsets", "sidecarsets"}, Verbs: []string{"list"}},
		rbacv1.PolicyRule{APIGroups: []string{collect.GroupClusterAPI}, Resources: []string{"clusters"}, Verbs: []string{"list"}},
		rbacv1.PolicyRule{APIGroups: []string{apiServices.Group}, Resources: []string{"apiservices"}, Verbs: []string{"list"}})
	_, clients := faultyClients(t, e.as(user))
	s := collectWith(t, clients, collect.Options{Scope: snapshot.Scope{AllNamespaces: true}},
		snapshot.InputKruiseWorkloads, snapshot.InputSidecarSets, snapshot.InputClusterAPI, snapshot.InputAPIServices)

	want := map[snapshot.Input]string{snapshot.InputKruiseWorkloads: "forbidden: list apps.kruise.io/clonesets"}
	if got := unread(s); !reflect.DeepEqual(got, want) {
		t.Errorf("unread = %v, want %v", got, want)
	}
	var workloads, sidecarSets, clusters []string
	for _, w := range s.Workloads {
		workloads = append(workloads, w.Kind+" "+w.Namespace+"/"+w.Name)
	}
	for _, ss := range s.SidecarSets {
		sidecarSets = append(sidecarSets, ss.Name)
	}
	for _, c := range s.Clusters {
		clusters = append(clusters, c.GetNamespace()+"/"+c.GetName())
	}
	// No CloneSet at all, of any case: the list was denied.
	if slices.ContainsFunc(s.Workloads, func(w *kruise.Workload) bool { return w.Kind == kruise.KindCloneSet }) ||
		!slices.Contains(workloads, kruise.KindStatefulSet+" "+ns+"/okcase-db") {
		t.Errorf("workloads = %v, want the Advanced StatefulSet okcase-db and no CloneSet", workloads)
	}
	if !slices.Contains(sidecarSets, "okcase-mesh") || !slices.Contains(clusters, ns+"/okcase-prod") {
		t.Errorf("SidecarSets %v, Clusters %v: want okcase-mesh and %s/okcase-prod", sidecarSets, clusters, ns)
	}
	// The apiserver registers a local APIService for each group it serves itself and for each
	// CRD's (pkg/controlplane/apiserver/aggregator.go, CreateAggregatorServer: the autoregister
	// and crd-autoregister controllers): all are read.
	all, err := e.k.dyn.Resource(apiServices).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var services []string
	for _, a := range s.APIServices {
		services = append(services, a.GetName())
	}
	if len(all.Items) == 0 || len(services) != len(all.Items) || !slices.Contains(services, "v1.apps") {
		t.Errorf("APIServices read %v, want the %d the apiserver serves, v1.apps among them", services, len(all.Items))
	}
	if !s.Installed[collect.GroupKruise] || !s.Installed[collect.GroupClusterAPI] {
		t.Errorf("installed = %v, want %s and %s", s.Installed, collect.GroupKruise, collect.GroupClusterAPI)
	}
}

// unavailableMetricsAPI registers metrics.k8s.io/v1beta1 as metrics-server's chart does, with
// no Service behind it: the aggregator cannot fetch the group version's discovery from it and
// serves it as stale in aggregated discovery (kube-aggregator v1.37.1
// pkg/apiserver/handler_discovery.go, discoveryManager.syncAPIService), which client-go's
// ServerGroupsAndResources returns as ErrGroupDiscoveryFailed (discovery/aggregated_discovery.go,
// StaleGroupVersionError). It is removed when the test ends, so later cases discover everything.
func (e *collectEnv) unavailableMetricsAPI(t *testing.T) schema.GroupVersion {
	t.Helper()
	gv := schema.GroupVersion{Group: "metrics.k8s.io", Version: "v1beta1"}
	name := gv.Version + "." + gv.Group
	svc := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiServices.GroupVersion().String(), "kind": "APIService",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{"group": gv.Group, "version": gv.Version, "groupPriorityMinimum": int64(100), "versionPriority": int64(100),
			"insecureSkipTLSVerify": true, "service": map[string]any{"namespace": metav1.NamespaceSystem, "name": "metrics-server"}}}}
	if _, err := e.k.dyn.Resource(apiServices).Create(t.Context(), svc, metav1.CreateOptions{FieldManager: "helm"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.k.dyn.Resource(apiServices).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete APIService %s: %v", name, err)
		}
	})
	disc := e.cs.Discovery()
	eventually(t, 30*time.Second, "discovery of "+gv.String()+" to fail", func(context.Context) (bool, error) {
		_, _, err := disc.ServerGroupsAndResources()
		var failed *discovery.ErrGroupDiscoveryFailed
		return errors.As(err, &failed) && failed.Groups[gv] != nil, nil
	})
	return gv
}

// grantListAllBut grants user list on every resource discovery serves but the ones named.
func (e *collectEnv) grantListAllBut(t *testing.T, user string, denied ...schema.GroupResource) {
	t.Helper()
	_, lists, err := e.cs.Discovery().ServerGroupsAndResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		t.Fatal(err)
	}
	var rules []rbacv1.PolicyRule
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			t.Fatal(err)
		}
		rule := rbacv1.PolicyRule{APIGroups: []string{gv.Group}, Verbs: []string{"list"}}
		for _, r := range l.APIResources {
			if !strings.Contains(r.Name, "/") && !slices.Contains(denied, gv.WithResource(r.Name).GroupResource()) {
				rule.Resources = append(rule.Resources, r.Name)
			}
		}
		if len(rule.Resources) > 0 {
			rules = append(rules, rule)
		}
	}
	e.grant(t, user, "", rules...)
}

// deletingObject creates obj held by a finalizer and deletes it: the apiserver only sets its
// deletionTimestamp. The finalizer is removed when the test ends.
func deletingObject[T metav1.Object](t *testing.T, obj T, create func(context.Context, T, metav1.CreateOptions) (T, error),
	del func(context.Context, string, metav1.DeleteOptions) error,
	patch func(context.Context, string, types.PatchType, []byte, metav1.PatchOptions, ...string) (T, error)) {
	t.Helper()
	obj.SetFinalizers([]string{"example.com/hold"})
	if _, err := create(t.Context(), obj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deleteObject(t, del, obj.GetName())
	t.Cleanup(func() {
		if _, err := patch(context.Background(), obj.GetName(), types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{}); err != nil {
			t.Errorf("release %s: %v", obj.GetName(), err)
		}
	})
}

// The objects input lists every listable resource metadata-only and keeps those being deleted:
// a ConfigMap, and a Node read whole by the nodes input. An aggregated API whose discovery fails,
// a resource RBAC denies and a list failing with 500 on every try are recorded; a 404 (the
// resource went away since discovery) is not; Secrets denied are a stated limit. Pods, events,
// namespaces and component statuses are never listed.
func (e *collectEnv) collectsObjectsBeingDeleted(t *testing.T) {
	ns := e.namespace(t, "objdel")
	const group = "objdel.example.com"
	for _, kind := range []string{"Widget", "Gadget", "Thing"} {
		installLooseCRD(t, e.c, group, kind, strings.ToLower(kind)+"s")
	}
	cms := e.cs.CoreV1().ConfigMaps(ns)
	if _, err := cms.Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "objdel-kept"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deletingObject(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "objdel-stuck"}}, cms.Create, cms.Delete, cms.Patch)
	nodes := e.cs.CoreV1().Nodes()
	deletingObject(t, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "objdel-node"}}, nodes.Create, nodes.Delete, nodes.Patch)
	metrics := e.unavailableMetricsAPI(t)

	const user = "objdel-reader"
	e.grantListAllBut(t, user, schema.GroupResource{Resource: "secrets"}, schema.GroupResource{Group: group, Resource: "widgets"})
	path := func(r string) *regexp.Regexp {
		return regexp.MustCompile("^/apis/" + regexp.QuoteMeta(group) + "/v1/" + r + "$")
	}
	log, clients := faultyClients(t, e.as(user),
		&faultRule{Method: http.MethodGet, Path: path("gadgets"), Code: http.StatusInternalServerError},
		&faultRule{Method: http.MethodGet, Path: path("things"), Code: http.StatusNotFound})
	s := collectWith(t, clients, collect.Options{Scope: snapshot.Scope{AllNamespaces: true}}, snapshot.InputObjects, snapshot.InputNodes)

	if got, want := deletedObjectNames(s, "objdel-"), []string{"ConfigMap " + ns + "/objdel-stuck", "Node /objdel-node"}; !reflect.DeepEqual(got, want) {
		t.Errorf("objects being deleted = %v, want %v", got, want)
	}
	// The fault rule's Status is the one statusAnswer builds, naming pods whatever the path.
	want := "discovery failed for " + metrics.String() + "; forbidden: list " + group + "/widgets; failed: list " + group +
		"/gadgets (an error on the server (\"injected\") has prevented the request from succeeding (list pods) (tried 5 times))"
	if got := unread(s); len(got) != 1 || got[snapshot.InputObjects] != want {
		t.Errorf("unread = %v, want objects: %s", got, want)
	}
	if got := s.Limits[snapshot.InputObjects]; !strings.HasPrefix(got, "secrets not listed") {
		t.Errorf("limits = %v, want the secrets stated", s.Limits)
	}
	// Only the 500 is retried, up to the policy's five attempts; nodes are listed once, whole,
	// by their own input.
	for r, n := range map[string]int{"/apis/" + group + "/v1/gadgets": 5, "/apis/" + group + "/v1/things": 1,
		"/apis/" + group + "/v1/widgets": 1, "/api/v1/secrets": 1, "/api/v1/configmaps": 1, "/api/v1/nodes": 1,
		"/api/v1/pods": 0, "/api/v1/events": 0, "/apis/events.k8s.io/v1/events": 0, "/api/v1/namespaces": 0, "/api/v1/componentstatuses": 0} {
		if got := log.matching(http.MethodGet, r); len(got) != n {
			t.Errorf("%s listed %d times, want %d: %v", r, len(got), n, got)
		}
	}
}

// With the Cluster API manager's Deployment and leader Lease still there but cluster.x-k8s.io
// no longer served (its CRDs deleted, as `clusterctl delete --include-crd` leaves it), nothing
// of its log is read and nothing is unread. Deleting the CRDs spares starting a control plane
// without them; it runs last, as no later case may need the group.
func (e *collectEnv) skipsTheClusterAPILogWithoutClusterAPI(t *testing.T) {
	ctx := t.Context()
	if _, err := e.cs.AppsV1().Deployments(capiNamespace).Get(ctx, "capi-controller-manager", metav1.GetOptions{}); apierrors.IsNotFound(err) {
		e.capiManager(t) // run alone, without ReadsTheClusterAPILeaderLogBounded
	} else if err != nil {
		t.Fatal(err)
	}
	_, clients := faultyClients(t, e.c.RESTConfig())
	inputs := []snapshot.Input{snapshot.InputControllers, snapshot.InputClusterAPILogs}
	// The log is read while the group is served: what deleting the CRDs below takes away.
	if s := collectWith(t, clients, collect.Options{Scope: snapshot.Scope{AllNamespaces: true}}, inputs...); s.ClusterAPILog == nil {
		t.Fatalf("ClusterAPILog not read with cluster.x-k8s.io served; unread %v", unread(s))
	}
	crds := e.k.dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	list, err := crds.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, crd := range list.Items {
		if g, _, _ := unstructured.NestedString(crd.Object, "spec", "group"); g == collect.GroupClusterAPI {
			if err := crds.Delete(ctx, crd.GetName(), metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The apiserver deletes their objects, then the CRDs, and drops the group from discovery
	// (apiextensions-apiserver v1.37.1 pkg/controller/finalizer/crd_finalizer.go, CRDFinalizer.sync;
	// pkg/apiserver/customresource_discovery_controller.go, DiscoveryController.sync).
	eventually(t, 30*time.Second, collect.GroupClusterAPI+" no longer served", func(context.Context) (bool, error) {
		groups, err := e.cs.Discovery().ServerGroups()
		return err == nil && !slices.ContainsFunc(groups.Groups, func(g metav1.APIGroup) bool { return g.Name == collect.GroupClusterAPI }), err
	})

	s := collectWith(t, clients, collect.Options{Scope: snapshot.Scope{AllNamespaces: true}}, inputs...)
	if s.ClusterAPILog != nil || len(s.Unread) != 0 || s.Installed[collect.GroupClusterAPI] {
		t.Errorf("ClusterAPILog = %+v, unread %v, installed %v: want nothing read when cluster.x-k8s.io is not served",
			s.ClusterAPILog, unread(s), s.Installed)
	}
}
