package checktest

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// Object is an object of any listable resource as a metadata-only list returns it: UID
// "uid-<kind>-<name>", resourceVersion 900, created three hours ago.
func Object(gvr schema.GroupVersionResource, kind, namespace, name string, opts ...Option) snapshot.Object {
	m := &metav1.PartialObjectMetadata{
		TypeMeta: metav1.TypeMeta{APIVersion: gvr.GroupVersion().String(), Kind: kind},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: types.UID("uid-" + kind + "-" + name), ResourceVersion: "900",
			CreationTimestamp: metav1.NewTime(Ago(3 * time.Hour))},
	}
	apply(m, opts)
	return snapshot.Object{Resource: gvr, Kind: kind, Namespaced: namespace != "", Meta: m}
}

// Namespace is an active namespace with the kubernetes finalizer; DeletedSince and
// NamespaceCondition make it Terminating.
func Namespace(name string, opts ...Option) *corev1.Namespace {
	ns := &corev1.Namespace{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-ns-" + name), ResourceVersion: "77",
			Labels: map[string]string{"kubernetes.io/metadata.name": name}},
		Spec:   corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}},
		Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive},
	}
	apply(ns, opts)
	if ns.DeletionTimestamp != nil {
		ns.Status.Phase = corev1.NamespaceTerminating
	}
	return ns
}

// NamespaceCondition adds a condition the namespace controller sets while it deletes a
// namespace, 9 minutes ago.
func NamespaceCondition(t corev1.NamespaceConditionType, status corev1.ConditionStatus, reason, msg string) Option {
	return func(m metav1.Object) {
		ns := m.(*corev1.Namespace)
		ns.Status.Conditions = append(ns.Status.Conditions, corev1.NamespaceCondition{Type: t, Status: status, Reason: reason,
			Message: msg, LastTransitionTime: metav1.NewTime(Ago(9 * time.Minute))})
	}
}

// APIService is an aggregated (or, without svcName, local) APIService with its Available condition.
func APIService(name, group, version, svcNamespace, svcName, status, reason, msg string) *unstructured.Unstructured {
	spec := map[string]any{"group": group, "version": version, "groupPriorityMinimum": int64(100), "versionPriority": int64(100)}
	if svcName != "" {
		spec["service"] = map[string]any{"namespace": svcNamespace, "name": svcName, "port": int64(443)}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": name},
		"spec":     spec,
		"status": map[string]any{"conditions": []any{map[string]any{
			"type": "Available", "status": status, "reason": reason, "message": msg, "lastTransitionTime": Ago(time.Hour).Format(time.RFC3339)}}},
	}}
}

// ClusterAPICluster is a Cluster API Cluster as the cluster-api input reads it.
func ClusterAPICluster(namespace, name string, paused bool) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Cluster",
		"metadata": map[string]any{"namespace": namespace, "name": name, "uid": "uid-Cluster-" + name},
		"spec":     map[string]any{"controlPlaneEndpoint": map[string]any{"host": "10.0.0.1", "port": int64(6443)}},
	}}
	if paused {
		_ = unstructured.SetNestedField(u.Object, true, "spec", "paused")
	}
	return u
}
