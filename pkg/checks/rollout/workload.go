package rollout

import (
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks/internal/kruiseenv"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

const (
	revisionLabel = "controller-revision-hash"
	// Progressing condition of a CloneSet (apps/v1alpha1 cloneset_types.go, kruise v1.9.0) and
	// of a Deployment (apps/v1).
	conditionProgressing   = "Progressing"
	reasonDeadlineExceeded = "ProgressDeadlineExceeded"
	// maxCandidates bounds the pods of one workload read in full: the pods a stalled rollout
	// is waiting on are its most recently created or updated ones.
	maxCandidates = 10
)

// rollout is a workload whose status says its update or scaling is not done: an OpenKruise
// workload or a core Deployment, StatefulSet or DaemonSet, in the terms the check judges.
type rollout struct {
	// ref names the workload in findings; meta is its metadata, kind its Kind.
	ref  report.ObjectRef
	meta *metav1.ObjectMeta
	kind string
	// hook is an OpenKruise workload's inPlaceUpdate hook; nil for core workloads.
	hook *kruise.LifecycleHook
	// update is the revision the pods' revision label carries once updated (a Deployment's new
	// ReplicaSet's pod-template-hash).
	update string
	// target is how many pods should end up updated and ready; updated and ready how many are.
	target, updated, ready int32
	// partition is how many pods the update strategy keeps on the old revision.
	partition int32
	// deadline is the Progressing=False/ProgressDeadlineExceeded condition, if set, and
	// deadlineSeconds the workload's progressDeadlineSeconds.
	deadline        *kruise.WorkloadCondition
	deadlineSeconds *int32
	// pods are the live pods the rollout waits on: on the update revision (or PreparingUpdate),
	// most recent activity first. owned are all the workload's pods.
	pods, owned []*metav1.ObjectMeta
	// templateLabels are the labels of the template the controller creates pods from.
	templateLabels map[string]string
	// creators are what the controller records a refused create on (a Warning FailedCreate
	// event): the workload itself, or a Deployment's new ReplicaSet.
	creators []creator
	// since is when the rollout last showed progress.
	since time.Time
	// updating is true while pods are still moving to the update revision (or the controller
	// reported its deadline): only then do pods that run but crash or are not Ready hold a
	// rollout, rather than trouble the app has since it finished.
	updating bool
	// counts is the evidence line of the workload's counts.
	counts string
	// core holds what only a core workload has; nil for OpenKruise workloads.
	core *coreRollout
}

// creator is an object whose FailedCreate events tell the creates refused for the rollout.
type creator struct {
	kind string
	meta *metav1.ObjectMeta
}

// failedCreates are the Warning FailedCreate events on the rollout's creators.
func (r *rollout) failedCreates(s *snapshot.Snapshot) []*corev1.Event {
	var out []*corev1.Event
	for _, c := range r.creators {
		out = append(out, kruiseenv.FailedCreatesOf(s, c.kind, c.meta)...)
	}
	return out
}

// kruiseRollout returns the OpenKruise workload's rollout when its status says it is not done
// and the user does not hold it: not paused, not OnDelete (pods wait for the user's deletes),
// and the counts cover what the partition leaves to update (CloneSetPartitionAvailable and
// CloneSetAvailable, pkg/controller/cloneset/utils/cloneset_utils.go). A status the controller
// has not written for the current generation is expectations-unsatisfied's to judge.
func kruiseRollout(s *snapshot.Snapshot, w *kruise.Workload) (*rollout, bool) {
	if w.Paused || w.UpdateType == kruise.UpdateOnDelete || w.Status.ObservedGeneration < w.Generation {
		return nil, false
	}
	r := &rollout{ref: kruiseenv.WorkloadRef(w), meta: &w.ObjectMeta, kind: w.Kind, hook: w.Lifecycle.InPlaceUpdate,
		update: w.Status.UpdateRevision, deadlineSeconds: w.ProgressDeadlineSeconds, templateLabels: w.Template.Labels,
		creators: []creator{{kind: w.Kind, meta: &w.ObjectMeta}}}
	if w.Partition != nil && *w.Partition > 0 {
		r.partition = *w.Partition
	}
	switch w.Kind {
	case kruise.KindDaemonSet:
		r.update = w.Status.DaemonSetHash
		r.target = w.Status.DesiredNumberScheduled - r.partition
		// The status has no count of updated ready pods: numberReady counts ready pods of any
		// revision, so at least updated minus the nodes without a ready pod are (a lower bound:
		// judging the pods decides).
		r.updated = w.Status.UpdatedNumberScheduled
		r.ready = max(0, r.updated-(w.Status.DesiredNumberScheduled-w.Status.NumberReady))
	default:
		replicas := int32(1)
		if w.Replicas != nil {
			replicas = *w.Replicas
		}
		r.target = replicas - r.partition
		r.updated, r.ready = w.Status.UpdatedReplicas, w.Status.UpdatedReadyReplicas
	}
	// Pods are still moving while fewer than the partition leaves carry the update revision,
	// ready or not. Not currentRevision: v1.9.0 moves it only once every replica is updated
	// (calculateStatus, cloneset_status.go), which a partition never allows.
	r.updating = r.updated < r.target
	if c, ok := w.Condition(conditionProgressing); ok && c.Status == "False" && c.Reason == reasonDeadlineExceeded {
		r.deadline = &c
		r.updating = true
	}
	if r.update == "" || (r.deadline == nil && r.updated >= r.target && r.ready >= r.target) {
		return nil, false
	}
	r.owned = s.OwnedPods(w)
	r.pods = waitedOn(r.owned, r.update)
	r.since = r.lastProgress()
	r.counts = r.countsLine()
	if w.Kind == kruise.KindDaemonSet {
		r.counts = fmt.Sprintf("%s %s/%s: %d of %d pods to update are on revision %s; %d of %d nodes run a ready pod", w.Kind, w.Namespace, w.Name,
			r.updated, r.target, r.update, w.Status.NumberReady, w.Status.DesiredNumberScheduled) + r.partitionNote()
	}
	return r, true
}

// waitedOn are the pods on the update revision, or held PreparingUpdate on the way to it, most
// recent activity first.
func waitedOn(owned []*metav1.ObjectMeta, update string) []*metav1.ObjectMeta {
	var out []*metav1.ObjectMeta
	for _, p := range owned {
		if p.Labels[revisionLabel] == update || p.Labels[kruise.LabelLifecycleState] == kruise.StatePreparingUpdate {
			out = append(out, p)
		}
	}
	byActivity(out)
	return out
}

// byActivity sorts pods most recent activity first, by name among equals.
func byActivity(pods []*metav1.ObjectMeta) {
	sort.SliceStable(pods, func(i, j int) bool {
		ti, tj := activity(pods[i]), activity(pods[j])
		if !ti.Equal(tj) {
			return ti.After(tj)
		}
		return pods[i].Name < pods[j].Name
	})
}

// activity is the last change a pod's metadata shows: its creation, its lifecycle state, or
// its deletion.
func activity(p *metav1.ObjectMeta) time.Time {
	t := p.CreationTimestamp.Time
	if lt, stamped := kruise.StateSince(p); stamped && lt.After(t) {
		t = lt
	}
	if p.DeletionTimestamp != nil {
		if asked := deletionAsked(p); asked.After(t) {
			t = asked
		}
	}
	return t
}

// deletionAsked is when a delete of the object was asked: a pod's deletionTimestamp is when it
// is due, its grace period later.
func deletionAsked(p *metav1.ObjectMeta) time.Time {
	asked := p.DeletionTimestamp.Time
	if p.DeletionGracePeriodSeconds != nil {
		asked = asked.Add(-time.Duration(*p.DeletionGracePeriodSeconds) * time.Second)
	}
	return asked
}

// lastProgress is when the rollout last moved: the newest activity of the pods it waits on, or
// the workload's creation when none exists. A CloneSet's ProgressDeadlineExceeded does not date
// it alone: v1.9.0 judges the deadline from the Progressing condition's lastUpdateTime, which
// SetCloneSetCondition never refreshes while status and reason stay the same, so a CloneSet long
// Available that starts a rollout is past its deadline at once (CloneSetDeadlineExceeded,
// pkg/controller/cloneset/utils/cloneset_utils.go). The condition only moves the date back to
// the deadline before it was set when the pods are older than that.
func (r *rollout) lastProgress() time.Time {
	t := r.meta.CreationTimestamp.Time
	if len(r.pods) > 0 {
		t = activity(r.pods[0])
	}
	if d, ok := r.deadlineStart(); ok && d.After(t) {
		t = d
	}
	return t
}

// deadlineStart is when the progress the deadline counts from was last made: the condition's
// time less the deadline.
func (r *rollout) deadlineStart() (time.Time, bool) {
	if r.deadline == nil || r.deadlineSeconds == nil {
		return time.Time{}, false
	}
	return r.deadline.LastTransitionTime.Add(-time.Duration(*r.deadlineSeconds) * time.Second), true
}

// threshold is the workload's own deadline unless --min-age was given.
func (r *rollout) threshold(s *snapshot.Snapshot, threshold time.Duration) time.Duration {
	if !s.Scope.MinAgeSet && r.deadlineSeconds != nil && (r.core == nil || r.deadline != nil) {
		return time.Duration(*r.deadlineSeconds) * time.Second
	}
	return threshold
}

// countsLine is the workload's counts for evidence.
func (r *rollout) countsLine() string {
	return fmt.Sprintf("%s %s/%s: %d of %d pods to update are on revision %s, %d of them ready", r.kind, r.meta.Namespace, r.meta.Name,
		r.updated, r.target, r.update, r.ready) + r.partitionNote()
}

func (r *rollout) partitionNote() string {
	if r.partition > 0 {
		return fmt.Sprintf(" (partition %d)", r.partition)
	}
	return ""
}

// candidates are the pods of the rollout read in full: those it waits on, most recent first,
// and what its kind adds.
func (r *rollout) candidates() []types.UID {
	out := newest(r.pods)
	if r.core != nil {
		out = append(out, newest(r.core.stale)...)
	}
	return out
}

// newest are the UIDs of the first maxCandidates pods, which are sorted newest activity first.
func newest(pods []*metav1.ObjectMeta) []types.UID {
	var out []types.UID
	for _, p := range pods[:min(len(pods), maxCandidates)] {
		out = append(out, p.UID)
	}
	return out
}

// rollouts are the workloads of the snapshot whose status says a rollout is not done: the
// OpenKruise workloads, then the core ones, each only where the scan read all its pods.
func rollouts(s *snapshot.Snapshot) []*rollout {
	var out []*rollout
	for _, w := range s.Workloads {
		if r, ok := kruiseRollout(s, w); ok && s.Scope.PodsComplete(w) {
			out = append(out, r)
		}
	}
	return append(out, coreRollouts(s)...)
}
