package kruiselifecycle

import (
	"math"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// This file redoes the CloneSet controller's scale arithmetic of OpenKruise v1.9.0, so a CloneSet
// is called frozen only when its controller would act on the pods it lists and has not: a pod
// waiting in PreparingDelete for its preDelete hook, a pod kept on the old revision by the
// partition, or a deletion held back by maxUnavailable is the controller working as designed.
// Sources, all at tag v1.9.0: pkg/controller/cloneset/sync/cloneset_sync_utils.go
// (calculateDiffsWithExpectation, isSpecifiedDelete, IsPodAvailable,
// shouldScalingExcludePreparingDelete) and pkg/controller/cloneset/sync/cloneset_scale.go (Scale,
// managePreparingDelete, getPlannedDeletedPods, deletePods).

// defaultMaxUnavailable is appsv1alpha1.DefaultCloneSetMaxUnavailable.
var defaultMaxUnavailable = intstr.FromString("20%")

// scalePod is one pod the controller lists (getOwnedPods keeps the active ones), with what its
// arithmetic reads of it.
type scalePod struct {
	meta *metav1.ObjectMeta
	// updated: the pod is of the update revision (revision.IsPodUpdate).
	updated bool
	// preDeleting: lifecycle state PreparingDelete.
	preDeleting bool
	// specified: chosen for deletion by label or spec.scaleStrategy.podsToDelete.
	specified bool
	// ready and available: IsPodAvailable with minReadySeconds 0 and spec.minReadySeconds. A pod
	// not read in full counts as both, the answer under which the controller acts least.
	ready, available bool
}

// scaleCounts are calculateDiffsWithExpectation's counts and results for one CloneSet.
type scaleCounts struct {
	replicas, partition                int
	maxSurge, maxUnavailable           int
	pods, oldPods                      int
	preDeletingNew, preDeletingOld     int
	toDeleteNew, toDeleteOld           int
	unavailableNew, unavailableOld     int
	excludePreDeleting                 bool
	useSurge, useSurgeOld              int
	scaleUp, scaleUpLimit, scaleDown   int
	deleteReadyLimit, plannedDeletions int
}

// scalePods lists the CloneSet's active pods as the controller sees them.
func scalePods(s *snapshot.Snapshot, w *kruise.Workload, active []*metav1.ObjectMeta, preparingUpdateAsUpdate bool) []scalePod {
	out := make([]scalePod, 0, len(active))
	for _, p := range active {
		state := p.Labels[kruise.LabelLifecycleState]
		sp := scalePod{meta: p, preDeleting: state == kruise.StatePreparingDelete, ready: true, available: true}
		sp.updated = revisionMatches(p.Labels["controller-revision-hash"], w.Status.UpdateRevision) ||
			(preparingUpdateAsUpdate && state == kruise.StatePreparingUpdate)
		_, sp.specified = p.Labels[kruise.LabelSpecifiedDelete]
		sp.specified = sp.specified || slices.Contains(w.Scaling.PodsToDelete, p.Name)
		if full, ok := s.FullPod(p.UID); ok {
			sp.ready = podAvailable(full, 0, s.Now)
			sp.available = podAvailable(full, w.Scaling.MinReadySeconds, s.Now)
		}
		out = append(out, sp)
	}
	return out
}

// podAvailable is IsPodAvailable: lifecycle state empty or Normal, Running and Ready for
// minReadySeconds, and no InPlaceUpdateReady condition other than True (IsPodUpdateReady).
func podAvailable(p *corev1.Pod, minReadySeconds int32, now time.Time) bool {
	if st := p.Labels[kruise.LabelLifecycleState]; st != "" && st != kruise.StateNormal {
		return false
	}
	if p.Status.Phase != corev1.PodRunning {
		return false
	}
	ready, ok := podCondition(p, corev1.PodReady)
	if !ok || ready.Status != corev1.ConditionTrue {
		return false
	}
	if minReadySeconds > 0 && ready.LastTransitionTime.Add(time.Duration(minReadySeconds)*time.Second).After(now) {
		return false
	}
	if c, ok := podCondition(p, kruise.ConditionInPlaceReady); ok && c.Status != corev1.ConditionTrue {
		return false
	}
	return true
}

// scaledValue is intstr.GetScaledValueFromIntOrPercent; a value that does not parse is 0, as the
// controller's ignored error leaves it.
func scaledValue(v *intstr.IntOrString, total int, roundUp bool) int {
	if v == nil {
		return 0
	}
	n, err := intstr.GetScaledValueFromIntOrPercent(v, total, roundUp)
	if err != nil {
		return 0
	}
	return n
}

// countScale is calculateDiffsWithExpectation's arithmetic for scaling (the update numbers are
// left out: a rollout's progress is not this verdict's to judge).
func countScale(w *kruise.Workload, pods []scalePod, excludeFlag bool) scaleCounts {
	c := scaleCounts{replicas: 1, pods: len(pods)}
	if w.Replicas != nil {
		c.replicas = int(*w.Replicas)
	}
	if w.Partition != nil {
		c.partition = int(*w.Partition)
	}
	if w.Scaling.MaxSurge != nil && !w.Paused {
		c.maxSurge = scaledValue(w.Scaling.MaxSurge, c.replicas, true)
	}
	mu := w.Scaling.MaxUnavailable
	if mu == nil {
		mu = &defaultMaxUnavailable
	}
	c.maxUnavailable = scaledValue(mu, c.replicas, c.maxSurge == 0)
	scaleMaxUnavailable := math.MaxInt32
	if w.Scaling.ScaleMaxUnavailable != nil {
		scaleMaxUnavailable = scaledValue(w.Scaling.ScaleMaxUnavailable, c.replicas, true)
	}
	newActive, oldActive := c.countPods(pods)
	totalUnavailable := c.preDeletingNew + c.preDeletingOld + c.unavailableNew + c.unavailableOld
	// Without CloneSetPartitionRollback (alpha, off by default) pods only move to the update
	// revision, so the update diffs are clamped as the controller clamps them.
	updateOldDiff := max(oldActive-c.partition, 0)
	updateNewDiff := min(newActive-(c.replicas-c.partition), 0)
	if c.maxSurge > 0 {
		c.surge(totalUnavailable, updateOldDiff, updateNewDiff)
	}
	// shouldScalingExcludePreparingDelete: the manager flag or the CloneSet's label.
	c.excludePreDeleting = excludeFlag || w.Labels[kruise.LabelScalingExcludePreparingDelete] == "true"
	total := c.pods
	if c.excludePreDeleting {
		total -= c.preDeletingNew + c.preDeletingOld
	}
	expected := c.replicas + c.useSurge
	if n := expected - total; n > 0 {
		c.scaleUp = n
		c.scaleUpLimit = min(n, max(scaleMaxUnavailable-totalUnavailable, 0))
	}
	if n := total - c.toDeleteOld - c.toDeleteNew - expected; n > 0 {
		c.scaleDown = n
	}
	if c.toDeleteNew > 0 || c.toDeleteOld > 0 || c.scaleDown > 0 {
		c.deleteReadyLimit = max(c.maxUnavailable+(c.pods-c.replicas)-totalUnavailable, 0)
	}
	for _, p := range pods {
		if p.specified || p.preDeleting {
			c.plannedDeletions++ // getPlannedDeletedPods' numToDelete
		}
	}
	return c
}

// countPods counts the pods by revision: PreparingDelete, chosen for deletion, unavailable; it
// returns the active ones (not PreparingDelete) of the update and of older revisions.
func (c *scaleCounts) countPods(pods []scalePod) (newActive, oldActive int) {
	for _, p := range pods {
		preDel, toDel, unavail, active := &c.preDeletingNew, &c.toDeleteNew, &c.unavailableNew, &newActive
		if !p.updated {
			c.oldPods++
			preDel, toDel, unavail, active = &c.preDeletingOld, &c.toDeleteOld, &c.unavailableOld, &oldActive
		}
		switch {
		case p.preDeleting:
			*preDel++
		case p.specified:
			*active++
			*toDel++
		default:
			*active++
			if !p.available {
				*unavail++
			}
		}
	}
	return newActive, oldActive
}

// surge sets the surge the controller uses, the larger of what deletions and what the update
// need, within maxSurge.
func (c *scaleCounts) surge(totalUnavailable, updateOldDiff, updateNewDiff int) {
	var scaleSurge, scaleSurgeOld int
	if toDelete := c.toDeleteNew + c.toDeleteOld; toDelete > 0 {
		scaleSurge = min(max(totalUnavailable+toDelete-c.maxUnavailable, 0), toDelete)
		if scaleSurge > c.toDeleteNew {
			scaleSurgeOld = scaleSurge - c.toDeleteNew
		}
	}
	var updateSurge, updateSurgeOld int
	if (updateOldDiff > 0 && updateNewDiff < 0) || (updateOldDiff < 0 && updateNewDiff > 0) {
		if abs(updateOldDiff) <= abs(updateNewDiff) {
			updateSurge = abs(updateOldDiff)
			if updateOldDiff < 0 {
				updateSurgeOld = updateSurge
			}
		} else {
			updateSurge = abs(updateNewDiff)
			if updateNewDiff > 0 {
				updateSurgeOld = updateSurge
			}
		}
	}
	if scaleSurge >= updateSurge {
		c.useSurge = min(c.maxSurge, scaleSurge)
		c.useSurgeOld = min(c.useSurge, scaleSurgeOld)
	} else {
		c.useSurge = min(c.maxSurge, updateSurge)
		c.useSurgeOld = min(c.useSurge, updateSurgeOld)
	}
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
