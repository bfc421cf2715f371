package kruisemanager

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
)

func standinWorkload(t *testing.T, kind string, spec map[string]any) *kruise.Workload {
	t.Helper()
	version := "v1alpha1"
	if kind == kruise.KindStatefulSet {
		version = "v1beta1"
	}
	spec["selector"] = map[string]any{"matchLabels": map[string]any{"app": "x"}}
	w, err := kruise.WorkloadFromUnstructured(&unstructured.Unstructured{Object: map[string]any{
		"apiVersion": kruise.Group + "/" + version, "kind": kind,
		"metadata": map[string]any{"namespace": "ns", "name": "x", "generation": int64(2)}, "spec": spec}})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// standinPod is a pod on the revision, Running and Ready (or Pending, not Ready), state Normal.
func standinPod(name, rev, node string, ready bool) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns",
		Labels: map[string]string{revisionLabelKey: rev, kruise.LabelLifecycleState: kruise.StateNormal}},
		Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
	if !ready {
		p.Status.Phase, p.Status.Conditions[0].Status = corev1.PodPending, corev1.ConditionFalse
	}
	return p
}

func names(pods []*corev1.Pod) string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return fmt.Sprint(out)
}

// The Advanced StatefulSet's rolling update (rollingUpdateStatefulsetPods, v1.9.0) takes pods
// from the highest ordinal down to the partition while fewer than maxUnavailable are unhealthy;
// pods below the partition are created on the current revision (isCurrentRevisionNeeded); the
// current revision follows the update one only once every pod is updated and ready
// (completeRollingUpdate).
func TestStatefulSetRollingUpdate(t *testing.T) {
	st := func(partition int, pods ...*corev1.Pod) *astsState {
		return &astsState{w: standinWorkload(t, kruise.KindStatefulSet, map[string]any{"replicas": int64(3)}),
			update: "x-new", current: "x-old", replicas: 3, partition: partition, slots: pods}
	}
	old := func(i int) *corev1.Pod { return standinPod(fmt.Sprintf("x-%d", i), "x-old", "n", true) }
	tests := []struct {
		name           string
		state          *astsState
		maxUnavailable int
		want           string
	}{
		{"highest ordinal first", st(0, old(0), old(1), old(2)), 1, "[x-2]"},
		{"maxUnavailable 2", st(0, old(0), old(1), old(2)), 2, "[x-2 x-1]"},
		{"the new pod is not ready: blocked", st(0, old(0), old(1), standinPod("x-2", "x-new", "n", false)), 1, "[]"},
		{"the new pod is ready: next", st(0, old(0), old(1), standinPod("x-2", "x-new", "n", true)), 1, "[x-1]"},
		{"partition 2 keeps x-0 and x-1", st(2, old(0), old(1), standinPod("x-2", "x-new", "n", true)), 1, "[]"},
		{"an unhealthy pod below blocks the higher ones", st(0, old(0), standinPod("x-1", "x-old", "n", false), old(2)), 1, "[]"},
		{"an unhealthy old pod is updated when reached", st(0, old(0), standinPod("x-1", "x-old", "n", false), standinPod("x-2", "x-new", "n", true)), 1, "[x-1]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := names(tt.state.toUpdate(tt.maxUnavailable)); got != tt.want {
				t.Errorf("toUpdate = %s, want %s", got, tt.want)
			}
		})
	}

	created := st(2, nil, nil, nil)
	if got := []string{created.revisionFor(0), created.revisionFor(1), created.revisionFor(2)}; fmt.Sprint(got) != "[x-old x-old x-new]" {
		t.Errorf("revisions for ordinals 0, 1, 2 under partition 2 = %v, want [x-old x-old x-new]", got)
	}

	rolling := st(0, old(0), standinPod("x-1", "x-new", "n", true), standinPod("x-2", "x-new", "n", false))
	s := rolling.status()
	if s["currentRevision"] != "x-old" || s["updatedReplicas"] != int64(2) || s["updatedReadyReplicas"] != int64(1) || s["readyReplicas"] != int64(2) {
		t.Errorf("rolling status %v", s)
	}
	done := st(0, standinPod("x-0", "x-new", "n", true), standinPod("x-1", "x-new", "n", true), standinPod("x-2", "x-new", "n", true))
	if s := done.status(); s["currentRevision"] != "x-new" || s["currentReplicas"] != int64(3) || s["observedGeneration"] != int64(2) {
		t.Errorf("done status %v", s)
	}
}

func node(name string, labels map[string]string, taints ...corev1.Taint) corev1.Node {
	return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: corev1.NodeSpec{Taints: taints}}
}

// Which nodes an Advanced DaemonSet runs a pod on (nodeShouldRunDaemonPod): the template's
// nodeSelector, and taints beside the tolerations every daemon pod gets.
func TestDaemonSetNodes(t *testing.T) {
	tpl := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{NodeSelector: map[string]string{"pool": "main"}}}
	main := map[string]string{"pool": "main"}
	tests := []struct {
		node      corev1.Node
		run, keep bool
	}{
		{node("a", main), true, true},
		{node("b", map[string]string{"pool": "edge"}), false, false},
		{node("c", main, corev1.Taint{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule}), false, true},
		{node("d", main, corev1.Taint{Key: "dedicated", Value: "db", Effect: corev1.TaintEffectNoExecute}), false, false},
		{node("e", main, corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}), true, true},
		{node("f", main, corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute}), true, true},
	}
	for _, tt := range tests {
		if run, keep := daemonShouldRun(&tt.node, tpl); run != tt.run || keep != tt.keep {
			t.Errorf("node %s: run %v keep %v, want %v %v", tt.node.Name, run, keep, tt.run, tt.keep)
		}
	}

	extra := standinPod("x-late", "h", "a", true)
	extra.CreationTimestamp = metav1.Now()
	ds := &adsState{w: standinWorkload(t, kruise.KindDaemonSet, map[string]any{"template": map[string]any{
		"spec": map[string]any{"nodeSelector": main}}}), hash: "h",
		nodes:  []corev1.Node{node("a", main), node("b", map[string]string{"pool": "edge"}), node("c", main)},
		byNode: map[string][]*corev1.Pod{"a": {standinPod("x-a", "h", "a", true), extra}, "b": {standinPod("x-b", "h", "b", true)}}}
	remove, create := ds.podsShouldBeOnNodes()
	if names(remove) != "[x-late x-b]" || fmt.Sprint(create) != "[c]" {
		t.Errorf("remove %s create %v, want [x-late x-b] and [c]", names(remove), create)
	}
}

// The Advanced DaemonSet's rolling update without surge (rollingUpdate, daemonset_update.go,
// v1.9.0): on the nodes the partition leaves, from the highest name down, old pods are deleted
// while fewer than maxUnavailable nodes are unavailable; an unavailable old pod always is.
func TestDaemonSetRollingUpdate(t *testing.T) {
	nodes := []corev1.Node{node("a", nil), node("b", nil), node("c", nil)}
	ds := func(partition any, pods map[string]*corev1.Pod) *adsState {
		spec := map[string]any{"updateStrategy": map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{}}}
		if partition != nil {
			spec["updateStrategy"].(map[string]any)["rollingUpdate"].(map[string]any)["partition"] = partition
		}
		s := &adsState{w: standinWorkload(t, kruise.KindDaemonSet, spec), hash: "new", nodes: nodes, byNode: map[string][]*corev1.Pod{}}
		for n, p := range pods {
			s.byNode[n] = []*corev1.Pod{p}
		}
		return s
	}
	old := func(n string) *corev1.Pod { return standinPod("x-"+n, "old", n, true) }
	two := intstr.FromInt32(2)
	tests := []struct {
		name  string
		state *adsState
		max   *intstr.IntOrString
		want  string
	}{
		{"default maxUnavailable 1, highest node first", ds(nil, map[string]*corev1.Pod{"a": old("a"), "b": old("b"), "c": old("c")}), nil, "[x-c]"},
		{"maxUnavailable 2", ds(nil, map[string]*corev1.Pod{"a": old("a"), "b": old("b"), "c": old("c")}), &two, "[x-c x-b]"},
		{"the new pod is not ready: blocked", ds(nil, map[string]*corev1.Pod{"a": old("a"), "b": old("b"), "c": standinPod("x-c2", "new", "c", false)}), nil, "[]"},
		{"the new pod is ready: next", ds(nil, map[string]*corev1.Pod{"a": old("a"), "b": old("b"), "c": standinPod("x-c2", "new", "c", true)}), nil, "[x-b]"},
		{"partition 2 leaves one node", ds(int64(2), map[string]*corev1.Pod{"a": old("a"), "b": old("b"), "c": standinPod("x-c2", "new", "c", true)}), nil, "[]"},
		{"an unavailable old pod goes anyway", ds(nil, map[string]*corev1.Pod{"a": standinPod("x-a", "old", "a", false), "b": old("b"), "c": standinPod("x-c2", "new", "c", false)}), nil, "[x-a]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.state.oldPodsToDelete(tt.max)
			if err != nil {
				t.Fatal(err)
			}
			if names(got) != tt.want {
				t.Errorf("oldPodsToDelete = %s, want %s", names(got), tt.want)
			}
		})
	}

	st := ds(nil, map[string]*corev1.Pod{"a": old("a"), "b": old("b"), "c": standinPod("x-c2", "new", "c", false)}).status(true)
	if st["desiredNumberScheduled"] != int64(3) || st["updatedNumberScheduled"] != int64(1) || st["numberReady"] != int64(2) ||
		st["daemonSetHash"] != "new" || st["observedGeneration"] != int64(2) {
		t.Errorf("status %v", st)
	}
}
