package rollout

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	ct "github.com/workloaddoctor/kubectl-workloaddoctor/internal/checktest"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
)

// resizeOnlyPod is a pod kruise v1.9.0 updates in place with InPlaceWorkloadVerticalScaling when
// only resources change and no changed resource's resizePolicy restarts the container:
// defaultCheckPodNeedsBeUnready (pkg/util/inplaceupdate/inplace_update_defaults.go) is false, so
// InPlaceUpdateReady stays True and the pod stays Ready, while the lifecycle state is Updating
// until the containers' status reports the new resources (NativeVerticalUpdate.IsUpdateCompleted,
// inplace_update_vertical.go; refreshPodState, pkg/controller/cloneset/sync/cloneset_update.go).
func resizeOnlyPod(w *kruise.Workload, opts ...ct.Option) *corev1.Pod {
	state := `{"revision":"` + newRev + `","updateTimestamp":"2026-06-12T11:40:00Z","updateResources":true}`
	base := []ct.Option{ct.Annotations(map[string]string{kruise.AnnotationInPlaceState: state}),
		ct.Lifecycle(kruise.StateUpdating, 20*time.Minute)}
	return clonePod(w, "web-a", newRev, 2*time.Hour, append(base, opts...)...)
}

func TestInPlaceResizeKeepsPodReady(t *testing.T) {
	deadline := withConditions(1, 1, deadlineExceeded(15*time.Minute))
	w := cloneSet(t, 1, 1, ct.UpdateStrategy(kruise.UpdateInPlaceIfPossible), deadline)
	pending := resizeOnlyPod(w, setCondition(conditionResizePending, corev1.ConditionTrue, "Infeasible",
		"Node didn't have enough capacity: cpu, requested: 32000, capacity: 16000"))
	c := ct.Cluster{Workloads: []*kruise.Workload{w}, Pods: []*corev1.Pod{pending,
		clonePod(w, "web-b", oldRev, 2*time.Hour), clonePod(w, "web-c", oldRev, 2*time.Hour)}}
	f := only(t, run(t, c, -1))
	if f.RootCause.ID != RootCauseInPlaceResizePending {
		t.Fatalf("root cause %s, want %s (%q)", f.RootCause.ID, RootCauseInPlaceResizePending, f.RootCause.Evidence)
	}
	evidenceHas(t, f, "PodResizePending reason Infeasible: Node didn't have enough capacity: cpu, requested: 32000, capacity: 16000")

	// The kubelet applied the resize and kruise moved the pod back to Normal: nothing holds it.
	w = cloneSet(t, 3, 3, ct.UpdateStrategy(kruise.UpdateInPlaceIfPossible))
	done := resizeOnlyPod(w, ct.Lifecycle(kruise.StateNormal, 5*time.Minute))
	none(t, run(t, ct.Cluster{Workloads: []*kruise.Workload{w}, Pods: []*corev1.Pod{done}}, 0))

	// Updating without a pending resize yet: the update has not completed, and says what it waits on.
	w = cloneSet(t, 1, 1, ct.UpdateStrategy(kruise.UpdateInPlaceIfPossible), deadline)
	c = ct.Cluster{Workloads: []*kruise.Workload{w}, Pods: []*corev1.Pod{resizeOnlyPod(w),
		clonePod(w, "web-b", oldRev, 2*time.Hour), clonePod(w, "web-c", oldRev, 2*time.Hour)}}
	f = only(t, run(t, c, -1))
	if f.RootCause.ID != RootCauseInPlaceUpdateIncomplete {
		t.Fatalf("root cause %s, want %s (%q)", f.RootCause.ID, RootCauseInPlaceUpdateIncomplete, f.RootCause.Evidence)
	}
	evidenceHas(t, f, "lifecycle state Updating; container resources not yet reported in status")
}
