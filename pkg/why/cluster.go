package why

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/collect"
)

// scope is what the scan that diagnoses a target reads: one namespace, and the cluster-scoped
// resources named (snapshot.Scope.ClusterResources).
type scope struct {
	namespace string
	cluster   []schema.GroupResource
}

var (
	persistentVolumes = schema.GroupResource{Resource: "persistentvolumes"}
	definitions       = schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}
)

// clusterScope is the scope that diagnoses u, a cluster-scoped object other than a Namespace, as
// the stuck-terminating check judges it: its own resource read as a scan of every namespace
// reads it, with default, where the events about cluster-scoped objects are recorded; or with
// the namespace its chain reaches:
//   - a PersistentVolume waits, under kubernetes.io/pv-protection, for the claim it is bound to
//     (kubernetes pkg/controller/volume/pvprotection/pv_protection_controller.go, processPV:
//     the finalizer goes once the volume is not Bound), and that claim for the pods of its
//     namespace: the claim's namespace.
//   - a CustomResourceDefinition being deleted waits for its instances (apiextensions-apiserver
//     pkg/controller/finalizer/crd_finalizer.go, sync: deleteInstances, then the finalizer goes
//     once a list finds none): returned as the instances to find (instancesScope); cluster-scoped
//     instances are a resource to read whole.
//
// An object deleted with foreground or orphan propagation waits for its dependents, which may be
// in any namespace and may be pods: finding them needs the whole cluster's pods, which why never
// lists, so it refuses and points at scan -A.
func clusterScope(t Target, u *unstructured.Unstructured) (scope, *schema.GroupVersionResource, error) {
	if u.GetDeletionTimestamp() != nil {
		for _, f := range u.GetFinalizers() {
			if f == metav1.FinalizerDeleteDependents || f == metav1.FinalizerOrphanDependents {
				return scope{}, nil, fmt.Errorf("the cluster-scoped %s %s waits on finalizer %s for its dependents, which may be pods of any namespace, and why never lists the whole cluster's pods; run: kubectl workloaddoctor scan -A", t.Kind, t.Name, f)
			}
		}
	}
	sc := scope{namespace: metav1.NamespaceDefault, cluster: []schema.GroupResource{t.Resource.GroupResource()}}
	switch t.Resource.GroupResource() {
	case persistentVolumes:
		if ns, _, _ := unstructured.NestedString(u.Object, "spec", "claimRef", "namespace"); ns != "" {
			sc.namespace = ns
		}
	case definitions:
		if u.GetDeletionTimestamp() == nil {
			break
		}
		inst, namespaced, ok := instanceResource(u)
		switch {
		case !ok:
		case namespaced:
			return sc, &inst, nil
		default:
			sc.cluster = append(sc.cluster, inst.GroupResource())
		}
	}
	return sc, nil, nil
}

// instanceResource is the resource of a CustomResourceDefinition's instances, at a version it
// serves (its storage version when served), and whether they are namespaced.
func instanceResource(crd *unstructured.Unstructured) (schema.GroupVersionResource, bool, bool) {
	group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
	plural, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "plural")
	scope, _, _ := unstructured.NestedString(crd.Object, "spec", "scope")
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	version := ""
	for _, v := range versions {
		m, _ := v.(map[string]any)
		name, _ := m["name"].(string)
		served, _ := m["served"].(bool)
		storage, _ := m["storage"].(bool)
		if served && (version == "" || storage) {
			version = name
		}
	}
	if group == "" || plural == "" || version == "" {
		return schema.GroupVersionResource{}, false, false
	}
	return schema.GroupVersionResource{Group: group, Version: version, Resource: plural}, scope != "Cluster", true
}

// instancesScope finds the namespace of a definition's instances being deleted, with one
// metadata-only list of them: the diagnosis of the definition and of each instance is on that
// namespace's scan. Instances in several namespaces would need several namespaces' pods and
// events: why reads one, so it refuses them.
func instancesScope(ctx context.Context, c collect.Clients, sc scope, gvr schema.GroupVersionResource) (scope, error) {
	l, err := c.Metadata.Resource(gvr).List(ctx, metav1.ListOptions{})
	if err != nil {
		return scope{}, fmt.Errorf("list the instances of %s: %w", gvr.GroupResource(), err)
	}
	ns, err := deletedIn(gvr.GroupResource(), l.Items)
	if err != nil {
		return scope{}, err
	}
	if ns != "" {
		sc.namespace = ns
	}
	return sc, nil
}

// deletedIn is the one namespace of the objects being deleted ("" when none is).
func deletedIn(gr schema.GroupResource, items []metav1.PartialObjectMetadata) (string, error) {
	var namespaces []string
	for _, it := range items {
		if it.DeletionTimestamp != nil && !slices.Contains(namespaces, it.Namespace) {
			namespaces = append(namespaces, it.Namespace)
		}
	}
	sort.Strings(namespaces)
	if len(namespaces) > 1 {
		return "", fmt.Errorf("the %s being deleted are in %d namespaces (%s) and why reads one; run: kubectl workloaddoctor scan -A",
			gr, len(namespaces), strings.Join(namespaces, ", "))
	}
	if len(namespaces) == 1 {
		return namespaces[0], nil
	}
	return "", nil
}
