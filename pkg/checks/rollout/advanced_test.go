package rollout

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	ct "github.com/workloaddoctor/kubectl-workloaddoctor/internal/checktest"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
)

// agent is Advanced DaemonSet shop/agent at generation 2 on three nodes, its status as
// updateDaemonSetStatus (pkg/controller/daemonset/daemonset_controller.go, kruise v1.9.0) counts
// it, read at v1alpha1 (daemonSetHash): updated pods by revision label, ready pods of any revision.
func agent(t *testing.T, updated, ready int64, opts ...ct.Option) *kruise.Workload {
	t.Helper()
	st := map[string]any{"observedGeneration": int64(2), "desiredNumberScheduled": int64(3), "currentNumberScheduled": int64(3),
		"updatedNumberScheduled": updated, "numberReady": ready, "numberAvailable": ready, "numberUnavailable": 3 - ready,
		"daemonSetHash": "7d9f8c6b5"}
	return ct.Workload(t, kruise.KindDaemonSet, "shop", "agent", append([]ct.Option{ct.Generation(2), ct.Status(st)}, opts...)...)
}

func agentPod(w *kruise.Workload, name, rev string, opts ...ct.Option) *corev1.Pod {
	base := []ct.Option{ct.OwnedByWorkload(w), ct.CreatedAgo(30 * time.Minute), ct.Labels(map[string]string{"app": "agent", revisionLabel: rev}),
		ct.OnNode("node-" + name), ct.Containers(corev1.Container{Name: "app", Image: "agent:2"})}
	p := ct.Pod(w.Namespace, "agent-"+name, append(base, opts...)...)
	if condition(p, corev1.PodReady) == nil {
		ct.Running()(p)
		ct.PodReady(corev1.ConditionTrue, 30*time.Minute)(p)
	}
	return p
}

// A DaemonSet whose every pod was replaced (maxUnavailable 100%, or one node) by pods that cannot
// pull their image has all pods updated and none ready: its status has no count of updated ready
// pods, so numberReady bounds it. The same with the pods Ready, or one crashing once the rollout
// is done, is no finding.
func TestDaemonSetUpdatedNotReady(t *testing.T) {
	pulling := func(w *kruise.Workload, name string) *corev1.Pod {
		return agentPod(w, name, "7d9f8c6b5", ct.Waiting("app", "ImagePullBackOff", `Back-off pulling image "agent:2"`, 0),
			ct.PodReady(corev1.ConditionFalse, 30*time.Minute))
	}
	w := agent(t, 3, 0)
	f := only(t, run(t, ct.Cluster{Workloads: []*kruise.Workload{w}, Pods: []*corev1.Pod{pulling(w, "a"), pulling(w, "b"), pulling(w, "c")}}, -1))
	if f.RootCause.ID != RootCauseImagePullFailing || f.Object.Kind != kruise.KindDaemonSet {
		t.Fatalf("got %s on %s", f.RootCause.ID, f.Object)
	}
	if want := "DaemonSet shop/agent: 3 of 3 pods to update are on revision 7d9f8c6b5; 0 of 3 nodes run a ready pod"; f.RootCause.Evidence[0] != want {
		t.Errorf("evidence %q, want %q", f.RootCause.Evidence[0], want)
	}

	healthy := agent(t, 3, 3)
	none(t, run(t, ct.Cluster{Workloads: []*kruise.Workload{healthy},
		Pods: []*corev1.Pod{agentPod(healthy, "a", "7d9f8c6b5"), agentPod(healthy, "b", "7d9f8c6b5"), agentPod(healthy, "c", "7d9f8c6b5")}}, 0))
	done := agent(t, 3, 2)
	crashing := agentPod(done, "c", "7d9f8c6b5", ct.Waiting("app", "CrashLoopBackOff", "", 7), ct.PodReady(corev1.ConditionFalse, 20*time.Minute))
	none(t, run(t, ct.Cluster{Workloads: []*kruise.Workload{done},
		Pods: []*corev1.Pod{agentPod(done, "a", "7d9f8c6b5"), agentPod(done, "b", "7d9f8c6b5"), crashing}}, 0))
}
