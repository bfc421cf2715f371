package why

import (
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// deleted returns u as the apiserver leaves an object deleted while finalizers hold it.
func deleted(u *unstructured.Unstructured, finalizers ...string) *unstructured.Unstructured {
	u.SetDeletionTimestamp(&metav1.Time{Time: time.Date(2026, 11, 28, 1, 0, 0, 0, time.UTC)})
	u.SetFinalizers(finalizers)
	return u
}

func definition(scope string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "gadgets.example.org"},
		"spec": map[string]any{"group": "example.org", "scope": scope,
			"names": map[string]any{"plural": "gadgets", "kind": "Gadget"},
			"versions": []any{
				map[string]any{"name": "v1beta1", "served": true, "storage": false},
				map[string]any{"name": "v1", "served": true, "storage": true},
			}},
	}}
}

func TestClusterScope(t *testing.T) {
	pvs := Target{Resource: schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumes"}, Kind: "PersistentVolume", Name: "pv-data"}
	crds := Target{Resource: schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"},
		Kind: "CustomResourceDefinition", Name: "gadgets.example.org"}
	nodes := Target{Resource: schema.GroupVersionResource{Version: "v1", Resource: "nodes"}, Kind: "Node", Name: "kw-2"}
	gadgets := schema.GroupVersionResource{Group: "example.org", Version: "v1", Resource: "gadgets"}
	// A volume the PV controller bound to a claim: claimRef names the claim's namespace.
	bound := deleted(&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "PersistentVolume",
		"metadata": map[string]any{"name": "pv-data"},
		"spec":     map[string]any{"claimRef": map[string]any{"kind": "PersistentVolumeClaim", "namespace": "shop", "name": "data", "uid": "u1"}},
		"status":   map[string]any{"phase": "Bound"}}}, "kubernetes.io/pv-protection")
	available := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "PersistentVolume",
		"metadata": map[string]any{"name": "pv-data"}, "status": map[string]any{"phase": "Available"}}}
	node := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Node", "metadata": map[string]any{"name": "kw-2"}}}

	for _, c := range []struct {
		name      string
		t         Target
		u         *unstructured.Unstructured
		want      scope
		instances *schema.GroupVersionResource
	}{
		{"bound volume: its claim's namespace", pvs, bound,
			scope{namespace: "shop", cluster: []schema.GroupResource{persistentVolumes}}, nil},
		{"volume bound to nothing: default, where its events are", pvs, available,
			scope{namespace: "default", cluster: []schema.GroupResource{persistentVolumes}}, nil},
		{"node", nodes, node, scope{namespace: "default", cluster: []schema.GroupResource{{Resource: "nodes"}}}, nil},
		{"definition not deleted: its instances do not matter", crds, definition("Namespaced"),
			scope{namespace: "default", cluster: []schema.GroupResource{definitions}}, nil},
		{"definition deleted, namespaced instances: found by a list, at the storage version", crds,
			deleted(definition("Namespaced"), "customresourcecleanup.apiextensions.k8s.io"),
			scope{namespace: "default", cluster: []schema.GroupResource{definitions}}, &gadgets},
		{"definition deleted, cluster-scoped instances: their resource read whole", crds,
			deleted(definition("Cluster"), "customresourcecleanup.apiextensions.k8s.io"),
			scope{namespace: "default", cluster: []schema.GroupResource{definitions, gadgets.GroupResource()}}, nil},
	} {
		got, inst, err := clusterScope(c.t, c.u)
		if err != nil || !reflect.DeepEqual(got, c.want) || !reflect.DeepEqual(inst, c.instances) {
			t.Errorf("%s: clusterScope = %+v, %v, %v; want %+v, %v", c.name, got, inst, err, c.want, c.instances)
		}
	}

	// Dependents of a cluster-scoped owner may be pods of any namespace: refused.
	role := Target{Resource: schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}, Kind: "ClusterRole", Name: "ops"}
	for _, fin := range []string{metav1.FinalizerDeleteDependents, metav1.FinalizerOrphanDependents} {
		u := deleted(&unstructured.Unstructured{Object: map[string]any{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
			"metadata": map[string]any{"name": "ops"}}}, fin)
		_, _, err := clusterScope(role, u)
		if err == nil || !strings.Contains(err.Error(), "ClusterRole ops waits on finalizer "+fin) || !strings.HasSuffix(err.Error(), "run: kubectl workloaddoctor scan -A") {
			t.Errorf("%s: error %v, want a refusal pointing at scan -A", fin, err)
		}
	}
}

func TestDeletedIn(t *testing.T) {
	gr := schema.GroupResource{Group: "example.org", Resource: "gadgets"}
	item := func(ns string, deleting bool) metav1.PartialObjectMetadata {
		m := metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "g"}}
		if deleting {
			m.DeletionTimestamp = &metav1.Time{}
		}
		return m
	}
	if ns, err := deletedIn(gr, []metav1.PartialObjectMetadata{item("a", false), item("b", true), item("b", true)}); ns != "b" || err != nil {
		t.Errorf("one namespace: %q, %v", ns, err)
	}
	if ns, err := deletedIn(gr, []metav1.PartialObjectMetadata{item("a", false)}); ns != "" || err != nil {
		t.Errorf("none deleted: %q, %v", ns, err)
	}
	_, err := deletedIn(gr, []metav1.PartialObjectMetadata{item("b", true), item("a", true)})
	if want := "the gadgets.example.org being deleted are in 2 namespaces (a, b) and why reads one; run: kubectl workloaddoctor scan -A"; err == nil || err.Error() != want {
		t.Errorf("two namespaces: %v, want %q", err, want)
	}
}
