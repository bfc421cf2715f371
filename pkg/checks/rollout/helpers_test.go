package rollout

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	ct "github.com/workloaddoctor/kubectl-workloaddoctor/internal/checktest"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

const (
	oldRev = "web-5f7c9d8b6"
	newRev = "web-6d4b8c7f9"
)

// cloneSet is CloneSet shop/web at generation 2 rolling from oldRev to newRev, three replicas,
// its status as calculateStatus (pkg/controller/cloneset/cloneset_status.go, kruise v1.9.0)
// writes it: updated pods counted by their revision label, updatedReady by readiness.
func cloneSet(t *testing.T, updated, updatedReady int64, opts ...ct.Option) *kruise.Workload {
	t.Helper()
	st := ct.CloneSetStatus(2, 3, updated, newRev, oldRev)
	st["updatedReadyReplicas"] = updatedReady
	base := []ct.Option{ct.Replicas(3), ct.Generation(2), ct.Template(corev1.Container{Name: "app", Image: "nginx:1.28"}), ct.Status(st)}
	return ct.Workload(t, kruise.KindCloneSet, "shop", "web", append(base, opts...)...)
}

// deadlineExceeded is the Progressing condition calculateProgressingStatus sets once
// CloneSetDeadlineExceeded holds, ago ago.
func deadlineExceeded(ago time.Duration) map[string]any {
	at := ct.Ago(ago).Format(time.RFC3339)
	return map[string]any{"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded",
		"message": "CloneSet revision " + newRev + " has timed out progressing", "lastUpdateTime": at, "lastTransitionTime": at}
}

// progressing is the Progressing=True condition of a rollout within its deadline.
func progressing(reason string, ago time.Duration) map[string]any {
	at := ct.Ago(ago).Format(time.RFC3339)
	return map[string]any{"type": "Progressing", "status": "True", "reason": reason, "message": "CloneSet is progressing",
		"lastUpdateTime": at, "lastTransitionTime": at}
}

// withConditions adds status.conditions to a CloneSet status option list.
func withConditions(updated, updatedReady int64, conds ...map[string]any) ct.Option {
	st := ct.CloneSetStatus(2, 3, updated, newRev, oldRev)
	st["updatedReadyReplicas"] = updatedReady
	var cs []any
	for _, c := range conds {
		cs = append(cs, c)
	}
	st["conditions"] = cs
	return ct.Status(st)
}

// clonePod is a pod of the CloneSet as kruise v1.9.0 leaves a healthy one: revision label, state
// Normal, readiness gates InPlaceUpdateReady (controller) and KruisePodReady (pod webhook), both
// True, running and Ready on node-1, created createdAgo. Options make it unhealthy.
func clonePod(w *kruise.Workload, name, rev string, createdAgo time.Duration, opts ...ct.Option) *corev1.Pod {
	base := []ct.Option{ct.OwnedByWorkload(w), ct.CreatedAgo(createdAgo),
		ct.Labels(map[string]string{"app": "web", revisionLabel: rev}), ct.Lifecycle(kruise.StateNormal, createdAgo),
		ct.OnNode("node-1"), ct.Containers(corev1.Container{Name: "app", Image: "nginx:1.28"}), ct.Running(),
		ct.ReadinessGates(kruise.ConditionInPlaceReady, "KruisePodReady"),
		ct.Conditions(corev1.PodCondition{Type: kruise.ConditionInPlaceReady, Status: corev1.ConditionTrue},
			corev1.PodCondition{Type: "KruisePodReady", Status: corev1.ConditionTrue},
			corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue})}
	p := ct.Pod(w.Namespace, name, append(base, opts...)...)
	if condition(p, corev1.PodReady) == nil {
		ct.PodReady(corev1.ConditionTrue, createdAgo)(p)
	}
	return p
}

// notReady marks the pod's Ready condition False, as the kubelet does when a container or a
// readiness gate is not ready.
func notReady() ct.Option {
	return func(m metav1.Object) {
		setCondition(corev1.PodReady, corev1.ConditionFalse, "ContainersNotReady", "")(m)
		setCondition(corev1.ContainersReady, corev1.ConditionFalse, "ContainersNotReady", "")(m)
	}
}

// setCondition replaces the pod condition of the same type, or adds it.
func setCondition(typ corev1.PodConditionType, status corev1.ConditionStatus, reason, message string) ct.Option {
	return func(m metav1.Object) {
		p := m.(*corev1.Pod)
		c := corev1.PodCondition{Type: typ, Status: status, Reason: reason, Message: message, LastTransitionTime: metav1.NewTime(ct.Ago(20 * time.Minute))}
		for i := range p.Status.Conditions {
			if p.Status.Conditions[i].Type == typ {
				p.Status.Conditions[i] = c
				return
			}
		}
		p.Status.Conditions = append(p.Status.Conditions, c)
	}
}

// run runs the check with its own thresholds, or with --min-age when minAge >= 0.
func run(t *testing.T, c ct.Cluster, minAge time.Duration) []report.Finding {
	t.Helper()
	s := c.Snapshot()
	threshold := New().Info().Threshold
	if minAge >= 0 {
		s.Scope.MinAgeSet, threshold = true, minAge
	}
	return New().Run(s, threshold)
}

func only(t *testing.T, fs []report.Finding) report.Finding {
	t.Helper()
	if len(fs) != 1 {
		t.Fatalf("want one finding, got %d: %+v", len(fs), fs)
	}
	return fs[0]
}

func none(t *testing.T, fs []report.Finding) {
	t.Helper()
	for _, f := range fs {
		t.Errorf("unexpected finding %s/%s on %s: %s %v", f.Check, f.RootCause.ID, f.Object, f.Summary, f.RootCause.Evidence)
	}
}
