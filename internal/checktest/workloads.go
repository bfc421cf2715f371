package checktest

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
)

// Workload is an OpenKruise workload (kruise.KindCloneSet, KindStatefulSet, KindDaemonSet) decoded
// by the collector's own decoder from the object the API returns: UID "uid-<name>", generation
// 1, created two hours ago, one replica selected by app=<name>, one container "app". Options
// shape the object before it is decoded.
func Workload(t testing.TB, kind, namespace, name string, opts ...Option) *kruise.Workload {
	t.Helper()
	apiVersion := kruise.Group + "/v1alpha1"
	if kind == kruise.KindStatefulSet {
		apiVersion = kruise.Group + "/v1beta1"
	}
	labels := map[string]any{"app": name}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": apiVersion, "kind": kind,
		"metadata": map[string]any{"namespace": namespace, "name": name, "uid": "uid-" + name, "generation": int64(1),
			"resourceVersion": "1000", "creationTimestamp": Ago(2 * time.Hour).Format(time.RFC3339)},
		"spec": map[string]any{
			"replicas": int64(1),
			"selector": map[string]any{"matchLabels": labels},
			"template": map[string]any{"metadata": map[string]any{"labels": labels},
				"spec": map[string]any{"containers": []any{map[string]any{"name": "app", "image": "nginx:1.27"}}}},
		},
	}}
	apply(u, opts)
	w, err := kruise.WorkloadFromUnstructured(u)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func set(m metav1.Object, value any, path ...string) {
	if err := unstructured.SetNestedField(m.(*unstructured.Unstructured).Object, value, path...); err != nil {
		panic(err)
	}
}

// Selector replaces the app=<name> selector and template labels with these.
func Selector(labels map[string]string) Option {
	return func(m metav1.Object) {
		ls := map[string]any{}
		for k, v := range labels {
			ls[k] = v
		}
		set(m, ls, "spec", "selector", "matchLabels")
		set(m, ls, "spec", "template", "metadata", "labels")
	}
}

// SpecField sets a field under spec, e.g. SpecField(int64(1), "updateStrategy", "maxSurge") or
// SpecField([]any{"web-a"}, "scaleStrategy", "podsToDelete").
func SpecField(value any, path ...string) Option {
	return func(m metav1.Object) { set(m, value, append([]string{"spec"}, path...)...) }
}

// Replicas sets spec.replicas.
func Replicas(n int64) Option { return func(m metav1.Object) { set(m, n, "spec", "replicas") } }

// Generation sets metadata.generation.
func Generation(n int64) Option { return func(m metav1.Object) { m.SetGeneration(n) } }

// Template replaces the pod template's containers.
func Template(cs ...corev1.Container) Option {
	return func(m metav1.Object) { set(m, ToUnstructured(cs...), "spec", "template", "spec", "containers") }
}

// UpdateStrategy sets how the workload updates pods: a CloneSet's updateStrategy.type, an
// Advanced StatefulSet's rollingUpdate.podUpdatePolicy.
func UpdateStrategy(policy string) Option {
	return func(m metav1.Object) {
		if m.(*unstructured.Unstructured).GetKind() == kruise.KindStatefulSet {
			set(m, map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{"podUpdatePolicy": policy}}, "spec", "updateStrategy")
			return
		}
		set(m, policy, "spec", "updateStrategy", "type")
	}
}

// Paused pauses the update (updateStrategy.paused).
func Paused() Option {
	return func(m metav1.Object) { set(m, true, "spec", "updateStrategy", "paused") }
}

// Partition sets updateStrategy.partition (an integer or a percentage).
func Partition(v any) Option {
	return func(m metav1.Object) { set(m, v, "spec", "updateStrategy", "partition") }
}

// LifecycleHooks sets spec.lifecycle, e.g. {"preNormal": {"finalizersHandler": [...]}}.
func LifecycleHooks(lifecycle map[string]any) Option {
	return func(m metav1.Object) { set(m, lifecycle, "spec", "lifecycle") }
}

// Status sets the workload's status.
func Status(status map[string]any) Option { return func(m metav1.Object) { set(m, status, "status") } }

// CloneSetStatus is a CloneSet status as kruise computes it, every counted pod ready.
func CloneSetStatus(observedGeneration, replicas, updated int64, updateRevision, currentRevision string) map[string]any {
	return map[string]any{"observedGeneration": observedGeneration, "replicas": replicas, "readyReplicas": replicas,
		"availableReplicas": replicas, "updatedReplicas": updated, "updatedReadyReplicas": updated,
		"updateRevision": updateRevision, "currentRevision": currentRevision, "labelSelector": "app=web"}
}

// SidecarSet is an OpenKruise SidecarSet selecting app=web and injecting the containers.
func SidecarSet(t testing.TB, name string, cs ...corev1.Container) *kruise.SidecarSet {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": kruise.Group + "/v1alpha1", "kind": "SidecarSet",
		"metadata": map[string]any{"name": name, "uid": "uid-" + name},
		"spec": map[string]any{"selector": map[string]any{"matchLabels": map[string]any{"app": "web"}},
			"containers": ToUnstructured(cs...)},
	}}
	ss, err := kruise.SidecarSetFromUnstructured(u)
	if err != nil {
		t.Fatal(err)
	}
	return ss
}

// ToUnstructured converts containers to the form an unstructured object holds.
func ToUnstructured(cs ...corev1.Container) []any {
	var out []any
	for i := range cs {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&cs[i])
		if err != nil {
			panic(err)
		}
		out = append(out, m)
	}
	return out
}
