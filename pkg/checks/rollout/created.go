package rollout

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks/internal/kruiseenv"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// refusal is what the scan read of the creates a rollout short of pods attempted.
type refusal struct {
	// lines are the evidence; newest is the newest refused create still in effect, nil if none.
	lines  []string
	newest *corev1.Event
}

// refusedCreates looks, for a rollout with fewer live pods on its update revision than it must
// update, at the creates the apiserver refused: the kruise-manager records each as a Warning
// FailedCreate event on the workload and retries on its next sync (createPods,
// pkg/controller/cloneset/sync/cloneset_scale.go, kruise v1.9.0). Only events seen since the
// workload's newest pod was created count: a refusal a later create got past is not what holds
// the rollout now, and one still in effect is recorded again on each retry.
func refusedCreates(s *snapshot.Snapshot, r *rollout) refusal {
	w := r.w
	var have int32
	for _, p := range r.pods {
		if p.Labels[revisionLabel] == r.update && p.DeletionTimestamp == nil {
			have++
		}
	}
	if have >= r.target {
		return refusal{}
	}
	since := w.CreationTimestamp.Time
	for _, p := range s.OwnedPods(w) {
		if p.CreationTimestamp.After(since) {
			since = p.CreationTimestamp.Time
		}
	}
	var out refusal
	for _, e := range kruiseenv.FailedCreates(s, w) {
		if !snapshot.EventTime(e).Before(since) {
			out.newest = e
		}
	}
	exists := fmt.Sprintf("no pod of revision %s exists", r.update)
	if have > 0 {
		exists = fmt.Sprintf("%d of the %d pods to update exist on revision %s", have, r.target, r.update)
	}
	err, unread := s.Unread[snapshot.InputEvents]
	switch {
	case out.newest != nil:
		out.lines = []string{checks.Evidencef("%s; the newest create the apiserver refused: %s", exists, kruiseenv.EventLine(s.Now, out.newest))}
	case have > 0:
		// Some pods were created: nothing says the others were refused rather than not yet due.
	case unread:
		out.lines = []string{checks.Evidencef("%s; the controller records a create the apiserver refuses as a FailedCreate event on the %s, "+
			"and the events could not be read: %v", exists, w.Kind, err)}
	default:
		out.lines = []string{checks.Evidencef("%s, and no FailedCreate event on the %s was read since %s ago (events last the apiserver's "+
			"--event-ttl, 1h by default)", exists, w.Kind, checks.Age(s.Now, since))}
	}
	return out
}
