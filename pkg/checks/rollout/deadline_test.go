package rollout

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	ct "github.com/workloaddoctor/kubectl-workloaddoctor/internal/checktest"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
)

// A rollout whose new pods are never created, as v1.9.0 leaves it when the apiserver refuses
// them (a ResourceQuota): createPods records FailedCreate on the CloneSet and returns the error
// (pkg/controller/cloneset/sync/cloneset_scale.go), doReconcile still writes the status
// (updatedReplicas 0, one old pod deleted for the update) and calculateProgressingStatus sets
// ProgressDeadlineExceeded. No pod is there to judge: the finding says none exists and where the
// reason is recorded, rather than pointing at new-revision pods' events.
func TestDeadlineWithoutNewPods(t *testing.T) {
	st := ct.CloneSetStatus(2, 1, 0, newRev, oldRev)
	st["conditions"] = []any{deadlineExceeded(time.Minute)}
	w := cloneSet(t, 0, 0, ct.SpecField(int64(30), "progressDeadlineSeconds"), ct.Status(st))
	c := ct.Cluster{Workloads: []*kruise.Workload{w}, Pods: []*corev1.Pod{clonePod(w, "web-old", oldRev, time.Hour)}}
	f := only(t, run(t, c, -1))
	if f.RootCause.ID != RootCauseProgressDeadline || len(f.BlockedBy) != 0 {
		t.Fatalf("got %s blockedBy %+v", f.RootCause.ID, f.BlockedBy)
	}
	evidenceHas(t, f, "0 of 3 pods to update are on revision "+newRev)
	evidenceHas(t, f, "condition Progressing=False reason ProgressDeadlineExceeded")
	evidenceHas(t, f, "no pod of revision "+newRev+" exists")
	if !strings.Contains(f.RootCause.Message, "FailedCreate") {
		t.Errorf("message does not say where a refused create is recorded: %s", f.RootCause.Message)
	}
}

// With a new pod there to read, the evidence does not claim there is none.
func TestDeadlineWithNewPodsNamesNoMissingPod(t *testing.T) {
	w := cloneSet(t, 1, 1, ct.SpecField(int64(60), "progressDeadlineSeconds"), withConditions(1, 1, deadlineExceeded(time.Minute)))
	c := ct.Cluster{Workloads: []*kruise.Workload{w}, Pods: []*corev1.Pod{clonePod(w, "web-new", newRev, 3*time.Minute)}}
	f := only(t, run(t, c, -1))
	if slices.ContainsFunc(f.RootCause.Evidence, func(e string) bool { return strings.Contains(e, "exists") }) {
		t.Errorf("evidence claims no new pod: %q", f.RootCause.Evidence)
	}
}

// The same refused rollout within its deadline (10m) is no finding: the controller keeps trying.
func TestNoNewPodsWithinDeadline(t *testing.T) {
	st := ct.CloneSetStatus(2, 1, 0, newRev, oldRev)
	st["conditions"] = []any{progressing("CloneSetUpdated", time.Minute)}
	w := cloneSet(t, 0, 0, ct.SpecField(int64(600), "progressDeadlineSeconds"), ct.Status(st))
	c := ct.Cluster{Workloads: []*kruise.Workload{w}, Pods: []*corev1.Pod{clonePod(w, "web-old", oldRev, time.Hour)}}
	none(t, run(t, c, -1))
}
