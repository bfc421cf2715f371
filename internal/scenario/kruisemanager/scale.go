package kruisemanager

import (
	"context"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
)

// scale is the stand-in's realControl.Scale (pkg/controller/cloneset/sync/cloneset_scale.go,
// OpenKruise v1.9.0), reduced to the counting rules the checks rely on. Each step acts and returns,
// as Scale does, and the pod events that follow requeue the CloneSet:
//
//   - pods counted: every active pod, PreparingDelete ones included, unless the CloneSet carries
//     apps.kruise.io/cloneset-scaling-exclude-preparing-delete=true
//     (calculateDiffsWithExpectation and shouldScalingExcludePreparingDelete,
//     cloneset_sync_utils.go; the manager flag is not modelled: the scenario never sets it);
//   - scale out creates what is missing, first the pods the partition keeps on the current
//     revision (scaleUpNumOldRevision = partition - old pods);
//   - a PreparingDelete pod is deleted once its preDelete hook no longer holds it (IsPodHooked in
//     deletePods); while it holds, the pod stays and is not replaced;
//   - pods chosen by name (label apps.kruise.io/specified-delete or spec.scaleStrategy.podsToDelete,
//     isSpecifiedDelete) are deleted, or moved to PreparingDelete when the hook holds them
//     (deletePods);
//   - scale in (pods counted minus those chosen, beyond spec.replicas) waits while any pod is
//     chosen or PreparingDelete (getPlannedDeletedPods' numToDelete), then takes the last pods.
//
// Not modelled: maxSurge, maxUnavailable and scaleStrategy.maxUnavailable (the scenario's
// CloneSets leave them at values that never hold a step back), and managePreparingDelete's return
// of a PreparingDelete pod to PreparingNormal.
func (p *leaderProcess) scale(ctx context.Context, w *kruise.Workload, key, updateRevision, hash string, active []*corev1.Pod) error {
	replicas := 1
	if w.Replicas != nil {
		replicas = int(*w.Replicas)
	}
	exclude := w.Labels[kruise.LabelScalingExcludePreparingDelete] == "true"
	var counted, countedOld, toDelete int
	var preDeleting, specified []*corev1.Pod
	for _, pod := range active {
		old := pod.Labels["controller-revision-hash"] != updateRevision
		isSpecified := isSpecifiedDelete(w, pod)
		if isSpecified {
			toDelete++
		}
		if pod.Labels[kruise.LabelLifecycleState] == kruise.StatePreparingDelete {
			preDeleting = append(preDeleting, pod)
			if exclude {
				continue
			}
		} else if isSpecified {
			specified = append(specified, pod)
		}
		counted++
		if old {
			countedOld++
		}
	}
	if n := replicas - counted; n > 0 {
		oldN := 0
		if w.Partition != nil && w.Status.CurrentRevision != "" && w.Status.CurrentRevision != updateRevision {
			oldN = min(max(int(*w.Partition)-countedOld, 0), n)
		}
		for i := range n {
			rev, h := updateRevision, hash
			if i < oldN {
				rev = w.Status.CurrentRevision
				h = rev[strings.LastIndexByte(rev, '-')+1:]
			}
			if err := p.createPod(ctx, w, key, rev, h); err != nil {
				return err
			}
		}
		return nil
	}
	held := false
	for _, pod := range preDeleting {
		if hookHolds(w.Lifecycle.PreDelete, pod) {
			held = true
			continue
		}
		if err := p.deletePod(ctx, w, key, pod); err != nil {
			return err
		}
	}
	for _, pod := range specified {
		if err := p.removePod(ctx, w, key, pod); err != nil {
			return err
		}
	}
	if len(specified) > 0 || held || len(preDeleting) > 0 {
		return nil
	}
	if n := counted - toDelete - replicas; n > 0 {
		for _, pod := range active[len(active)-n:] {
			if err := p.removePod(ctx, w, key, pod); err != nil {
				return err
			}
		}
	}
	return nil
}

// removePod is deletePods for one pod: one the preDelete hook holds moves to PreparingDelete.
func (p *leaderProcess) removePod(ctx context.Context, w *kruise.Workload, key string, pod *corev1.Pod) error {
	if hookHolds(w.Lifecycle.PreDelete, pod) {
		_, err := p.setLifecycleState(ctx, pod, kruise.StatePreparingDelete)
		return err
	}
	return p.deletePod(ctx, w, key, pod)
}

// isSpecifiedDelete: the pod carries the label (any value) or is named in podsToDelete.
func isSpecifiedDelete(w *kruise.Workload, pod *corev1.Pod) bool {
	_, ok := pod.Labels[kruise.LabelSpecifiedDelete]
	return ok || slices.Contains(w.Scaling.PodsToDelete, pod.Name)
}

// hookHolds is IsPodHooked (pkg/util/lifecycle): any of the hook's finalizers on the pod, or any
// of its labels with the hook's value.
func hookHolds(h *kruise.LifecycleHook, pod *corev1.Pod) bool {
	if h == nil {
		return false
	}
	for _, f := range h.FinalizersHandler {
		if slices.Contains(pod.Finalizers, f) {
			return true
		}
	}
	for k, v := range h.LabelsHandler {
		if pod.Labels[k] == v {
			return true
		}
	}
	return false
}
