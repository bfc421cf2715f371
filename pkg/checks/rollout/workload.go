package rollout

import (
	"fmt"
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

const (
	revisionLabel = "controller-revision-hash"
	// Progressing condition of a CloneSet (apps/v1alpha1 cloneset_types.go, kruise v1.9.0).
	conditionProgressing   = "Progressing"
	reasonDeadlineExceeded = "ProgressDeadlineExceeded"
	// maxCandidates bounds the pods of one workload read in full: the pods a stalled rollout
	// is waiting on are its most recently created or updated ones.
	maxCandidates = 10
)

// rollout is a workload whose status says its update or scaling is not done.
type rollout struct {
	w *kruise.Workload
	// update is the revision the pods' controller-revision-hash label carries once updated.
	update string
	// target is how many pods should end up updated and ready; updated and ready how many are.
	target, updated, ready int32
	// deadline is the CloneSet's Progressing=False/ProgressDeadlineExceeded condition, if set.
	deadline *kruise.WorkloadCondition
	// pods are the live pods the rollout waits on: on the update revision or PreparingUpdate,
	// most recent activity first.
	pods []*metav1.ObjectMeta
	// since is when the rollout last showed progress.
	since time.Time
	// updating is true while pods are still moving to the update revision (or the controller
	// reported its deadline): only then do pods that run but crash or are not Ready hold a
	// rollout, rather than trouble the app has since it finished.
	updating bool
}

// stalledRollout returns the workload's rollout when its status says it is not done and the
// user does not hold it: not paused, not OnDelete (pods wait for the user's deletes), and the
// counts cover what the partition leaves to update (CloneSetPartitionAvailable and
// CloneSetAvailable, pkg/controller/cloneset/utils/cloneset_utils.go). A status the controller
// has not written for the current generation is expectations-unsatisfied's to judge.
func stalledRollout(s *snapshot.Snapshot, w *kruise.Workload) (*rollout, bool) {
	if w.Paused || w.UpdateType == kruise.UpdateOnDelete || w.Status.ObservedGeneration < w.Generation {
		return nil, false
	}
	r := &rollout{w: w, update: w.Status.UpdateRevision}
	partition := int32(0)
	if w.Partition != nil && *w.Partition > 0 {
		partition = *w.Partition
	}
	switch w.Kind {
	case kruise.KindDaemonSet:
		r.update = w.Status.DaemonSetHash
		r.target = w.Status.DesiredNumberScheduled - partition
		// The status has no count of updated ready pods: numberReady counts ready pods of any
		// revision, so at least updated minus the nodes without a ready pod are (a lower bound:
		// judging the pods decides).
		r.updated = w.Status.UpdatedNumberScheduled
		r.ready = max(0, r.updated-(w.Status.DesiredNumberScheduled-w.Status.NumberReady))
		r.updating = r.updated < r.target
	default:
		replicas := int32(1)
		if w.Replicas != nil {
			replicas = *w.Replicas
		}
		r.target = replicas - partition
		r.updated, r.ready = w.Status.UpdatedReplicas, w.Status.UpdatedReadyReplicas
		// Pods are still moving while fewer than the partition leaves carry the update revision,
		// ready or not. Not currentRevision: v1.9.0 moves it only once every replica is updated
		// (calculateStatus, cloneset_status.go), which a partition never allows.
		r.updating = r.updated < r.target
	}
	if c, ok := w.Condition(conditionProgressing); ok && c.Status == "False" && c.Reason == reasonDeadlineExceeded {
		r.deadline = &c
		r.updating = true
	}
	if r.update == "" || (r.deadline == nil && r.updated >= r.target && r.ready >= r.target) {
		return nil, false
	}
	r.pods = waitedOn(s, w, r.update)
	r.since = r.lastProgress()
	return r, true
}

// waitedOn are the workload's pods on the update revision, or held PreparingUpdate on the way
// to it, most recent activity first.
func waitedOn(s *snapshot.Snapshot, w *kruise.Workload, update string) []*metav1.ObjectMeta {
	var out []*metav1.ObjectMeta
	for _, p := range s.OwnedPods(w) {
		if p.Labels[revisionLabel] == update || p.Labels[kruise.LabelLifecycleState] == kruise.StatePreparingUpdate {
			out = append(out, p)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		ti, tj := activity(out[i]), activity(out[j])
		if !ti.Equal(tj) {
			return ti.After(tj)
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// activity is the last change a pod's metadata shows: its creation or its lifecycle state.
func activity(p *metav1.ObjectMeta) time.Time {
	t := p.CreationTimestamp.Time
	if lt, stamped := kruise.StateSince(p); stamped && lt.After(t) {
		t = lt
	}
	return t
}

// lastProgress is when the rollout last moved: the newest activity of the pods it waits on, or
// the workload's creation when none exists. A CloneSet's ProgressDeadlineExceeded does not date
// it alone: v1.9.0 judges the deadline from the Progressing condition's lastUpdateTime, which
// SetCloneSetCondition never refreshes while status and reason stay the same, so a CloneSet long
// Available that starts a rollout is past its deadline at once (CloneSetDeadlineExceeded,
// pkg/controller/cloneset/utils/cloneset_utils.go). The condition only moves the date back to
// the deadline before it was set when the pods are older than that.
func (r *rollout) lastProgress() time.Time {
	t := r.w.CreationTimestamp.Time
	if len(r.pods) > 0 {
		t = activity(r.pods[0])
	}
	if r.deadline != nil && r.w.ProgressDeadlineSeconds != nil {
		if d := r.deadline.LastTransitionTime.Add(-time.Duration(*r.w.ProgressDeadlineSeconds) * time.Second); d.After(t) {
			t = d
		}
	}
	return t
}

// threshold is the workload's own deadline unless --min-age was given.
func (r *rollout) threshold(s *snapshot.Snapshot, threshold time.Duration) time.Duration {
	if !s.Scope.MinAgeSet && r.w.ProgressDeadlineSeconds != nil {
		return time.Duration(*r.w.ProgressDeadlineSeconds) * time.Second
	}
	return threshold
}

// countsLine is the workload's counts for evidence.
func (r *rollout) countsLine() string {
	w := r.w
	line := fmt.Sprintf("%s %s/%s: %d of %d pods to update are on revision %s, %d of them ready", w.Kind, w.Namespace, w.Name,
		r.updated, r.target, r.update, r.ready)
	if w.Kind == kruise.KindDaemonSet {
		line = fmt.Sprintf("%s %s/%s: %d of %d pods to update are on revision %s; %d of %d nodes run a ready pod", w.Kind, w.Namespace, w.Name,
			r.updated, r.target, r.update, w.Status.NumberReady, w.Status.DesiredNumberScheduled)
	}
	if w.Partition != nil && *w.Partition > 0 {
		line += fmt.Sprintf(" (partition %d)", *w.Partition)
	}
	return line
}
