package resizepolicy

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// A pod's drift matters only where its controller would carry a template to it: evicting a pod
// gives it the template of the revision the controller recreates it on, and a pod the rollout
// is about to replace needs nothing. The rules below are the OpenKruise v1.9.0 controllers':
//
//   - CloneSet (pkg/controller/cloneset/sync/cloneset_sync_utils.go calculateDiffsWithExpectation,
//     cloneset_update.go Update): pods off updateRevision are updated while more than `partition`
//     of them remain; the rest stay. A deleted pod is replaced from currentRevision while fewer
//     than `partition` pods remain off updateRevision (scaleUpNumOldRevision, then
//     cloneset_scale.go createPods and core NewVersionedPods), else from updateRevision.
//   - Advanced StatefulSet (pkg/controller/statefulset/stateful_update_utils.go sortPodsToUpdate,
//     stateful_set_utils.go isCurrentRevisionNeeded): in order, a pod ranked below `partition`
//     among the set's pods stays on currentRevision and is recreated on it, the others are
//     updated; with unorderedUpdate the partition counts pods off updateRevision, as a CloneSet's.
//   - Advanced DaemonSet (pkg/controller/daemonset/daemonset_controller.go syncNodes): a pod is
//     always created from the current template, so evicting a pod the partition holds back
//     would take it past the partition.
//
// Surge pods (maxSurge) and pods already being deleted are left out of the counts.

// stand is where a pod stands in its workload's rollout.
type stand int

const (
	// standHeld pods are not judged: the user holds them back (paused, or a partition a recreated
	// pod would skip), or a recreated pod would go back to an older revision.
	standHeld stand = iota
	// standUpdated pods are on the update revision and a recreated pod would be too: judged
	// against the workload's template.
	standUpdated
	// standKept pods are held on the current revision by the partition and recreated on it:
	// judged against that revision's template, when the snapshot has it.
	standKept
	// standPending pods are ones the rollout will still update: only a failing in-place update
	// is reported.
	standPending
	// standStuck pods wait for a CloneSet rollout that its InPlaceOnly strategy refused to make
	// in place (its FailedUpdate condition says so) and that never recreates them: judged against
	// the workload's template, which a recreated pod gets.
	standStuck
)

// placement is a pod's stand and the template a recreated pod would get.
type placement struct {
	stand stand
	// revision names the revision a recreated pod would get; template is its pod template, nil
	// when that revision was not read.
	revision string
	template *corev1.PodTemplateSpec
	// podRev is the revision the pod's label names; r its workload's rollout.
	podRev string
	r      *rollout
}

// rollout is a workload's revisions and the counts its controller decides with.
type rollout struct {
	w               *kruise.Workload
	update, current string
	partition       int
	// live are the pods not being deleted; notUpdated those of them off the update revision.
	live, notUpdated int
	// rank is, for an Advanced StatefulSet updating in order, each live pod's rank by ordinal.
	rank map[string]int
	// cut is true when a label selector left some of the workload's pods out of the snapshot.
	cut bool
	// refusal is the FailedUpdate condition of a CloneSet whose InPlaceOnly rollout stopped at a
	// pod still waiting for it; nil otherwise.
	refusal *kruise.WorkloadCondition
}

func newRollout(s *snapshot.Snapshot, w *kruise.Workload, pods []*metav1.ObjectMeta) *rollout {
	r := &rollout{w: w, update: w.Status.UpdateRevision, current: w.Status.CurrentRevision}
	if w.Kind == kruise.KindDaemonSet {
		r.update, r.current = w.Status.DaemonSetHash, ""
	}
	if r.current == "" {
		r.current = r.update
	}
	if w.Partition != nil && *w.Partition > 0 {
		r.partition = int(*w.Partition)
	}
	type ordinal struct {
		name string
		n    int
	}
	var ords []ordinal
	ordered := w.Kind == kruise.KindStatefulSet && !w.UnorderedUpdate
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		r.live++
		if p.Labels[revisionLabel] != r.update {
			r.notUpdated++
		}
		if !ordered {
			continue
		}
		if rest, ok := strings.CutPrefix(p.Name, w.Name+"-"); ok {
			if n, err := strconv.Atoi(rest); err == nil {
				ords = append(ords, ordinal{p.Name, n})
			}
		}
	}
	if ordered {
		sort.Slice(ords, func(i, j int) bool { return ords[i].n < ords[j].n })
		r.rank = map[string]int{}
		for i, o := range ords {
			r.rank[o.name] = i
		}
	}
	r.refusal = inPlaceOnlyRefusal(r, pods)
	r.cut = podListCut(s, w, r.live)
	return r
}

// podListCut reports whether the scan's label selector left some of the workload's pods out:
// the controller's counts cannot be redone then, so none of its pods is judged.
func podListCut(s *snapshot.Snapshot, w *kruise.Workload, live int) bool {
	if s.Scope.LabelSelector == "" {
		return false
	}
	want := w.Status.Replicas
	if w.Kind == kruise.KindDaemonSet {
		want = w.Status.DesiredNumberScheduled
	}
	return live < int(want)
}

// refusedPrefix and refusedSuffix frame the pod's name in the error a CloneSet's InPlaceOnly
// rollout stops with when a change cannot be made in place (cloneset_update.go updatePod in
// kruise v1.9.0), which becomes its FailedUpdate condition (cloneset_controller.go syncCloneSet).
// A change of resizePolicy is such a change (inplace_update_defaults.go
// defaultCalculateInPlaceUpdateSpec allows only images, resources and metadata).
const (
	refusedPrefix = "find Pod "
	refusedSuffix = " update strategy is InPlaceOnly but can not update in-place"
)

// inPlaceOnlyRefusal returns the CloneSet's FailedUpdate condition when it names a pod that still
// waits for the rollout: the condition is never removed, so one about a pod updated since, or gone,
// is stale.
func inPlaceOnlyRefusal(r *rollout, pods []*metav1.ObjectMeta) *kruise.WorkloadCondition {
	w := r.w
	if w.Kind != kruise.KindCloneSet || w.UpdateType != kruise.UpdateInPlaceOnly || w.Paused {
		return nil
	}
	c, ok := w.Condition("FailedUpdate")
	if !ok || c.Status != string(corev1.ConditionTrue) {
		return nil
	}
	rest, ok := strings.CutPrefix(c.Message, refusedPrefix)
	if !ok {
		return nil
	}
	name, _, ok := strings.Cut(rest, refusedSuffix)
	if !ok {
		return nil
	}
	for _, p := range pods {
		if p.Name == name && p.DeletionTimestamp == nil && p.Labels[revisionLabel] != r.update {
			return &c
		}
	}
	return nil
}

// place says where the pod stands; template looks up a revision's pod template.
func (r *rollout) place(p *metav1.ObjectMeta, template func(revision string) *corev1.PodTemplateSpec) placement {
	rev := p.Labels[revisionLabel]
	pl := placement{podRev: rev, r: r}
	switch {
	case r.cut, r.update == "", leaving(p), rev == r.update && r.recreatedOnCurrent(p), rev != r.update && r.w.Paused:
		// Held: pods left out of the scan, no update revision yet, a pod on its way out, a
		// recreation that would take the pod back, or a rollout the user paused.
	case rev == r.update:
		pl.stand, pl.revision, pl.template = standUpdated, r.update, &r.w.Template
	case r.pending(p) && r.refusal != nil:
		pl.stand, pl.revision, pl.template = standStuck, r.update, &r.w.Template
	case r.pending(p):
		pl.stand, pl.revision, pl.template = standPending, r.update, &r.w.Template
	case r.w.Kind == kruise.KindDaemonSet:
		// Held by the partition: a recreated pod would take the current template past it.
	default:
		pl.stand, pl.revision, pl.template = standKept, r.current, template(r.current)
	}
	return pl
}

// specifiedDelete is the label that asks kruise to delete a pod (pkg/util/specifieddelete).
const specifiedDelete = "apps.kruise.io/specified-delete"

// leaving reports whether the pod is already on its way out: being deleted, chosen for deletion,
// or waiting in PreparingDelete. Evicting it would not carry anything anywhere.
func leaving(p *metav1.ObjectMeta) bool {
	_, chosen := p.Labels[specifiedDelete]
	return p.DeletionTimestamp != nil || chosen || p.Labels[kruise.LabelLifecycleState] == kruise.StatePreparingDelete
}

// why says, as evidence, why a judged pod is compared with its placement's revision.
func (pl placement) why() string {
	r := pl.r
	kn := kindName(r.w)
	switch pl.stand {
	case standUpdated:
		return fmt.Sprintf("pod is on %s updateRevision %s", kn, r.update)
	case standPending:
		return fmt.Sprintf("pod is on revision %s; %s is rolling out updateRevision %s (%d of %d pods not updated, partition %d): the rollout replaces it",
			pl.podRev, kn, r.update, r.notUpdated, r.live, r.partition)
	case standStuck:
		return fmt.Sprintf("pod is on revision %s; %s updateStrategy InPlaceOnly cannot update it in place to updateRevision %s and never recreates it (condition FailedUpdate: %q)",
			pl.podRev, kn, r.update, quoteEvent(r.refusal.Message))
	case standKept:
		return fmt.Sprintf("pod is on revision %s, kept off %s updateRevision %s by partition %d; a recreated pod gets currentRevision %s",
			pl.podRev, kn, r.update, r.partition, r.current)
	}
	return ""
}

// judged reports whether the check compares the pod at all: a kept pod only once its
// revision's template has been read.
func (pl placement) judged() bool { return pl.stand != standHeld && pl.template != nil }

// pending reports whether the rollout will still update a pod off the update revision.
func (r *rollout) pending(p *metav1.ObjectMeta) bool {
	if r.rank != nil {
		rank, ok := r.rank[p.Name]
		return ok && rank >= r.partition
	}
	return r.notUpdated > r.partition
}

// recreatedOnCurrent reports whether the controller would recreate a pod now on the update
// revision from the current revision instead.
func (r *rollout) recreatedOnCurrent(p *metav1.ObjectMeta) bool {
	if r.current == r.update || r.partition == 0 || r.w.Kind == kruise.KindDaemonSet {
		return false
	}
	if r.rank != nil {
		rank, ok := r.rank[p.Name]
		missing := r.w.Replicas != nil && r.live < int(*r.w.Replicas)
		return !ok || missing || rank < r.partition
	}
	return r.notUpdated < r.partition
}
