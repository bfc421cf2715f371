package kruiselifecycle

import (
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks/internal/kruiseenv"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
)

// The next Scale of the CloneSet controller (pkg/controller/cloneset/sync/cloneset_scale.go,
// OpenKruise v1.9.0), redone on the counts of counting.go.

// pendingScale says what the controller's next Scale would change, in its order
// (realControl.Scale): nothing when every difference between pods and spec is one it keeps by
// design. Each line names the step and the pods.
func pendingScale(w *kruise.Workload, pods []scalePod, c scaleCounts) []string {
	var out []string
	preDelete := w.Lifecycle.PreDelete
	// managePreparingDelete: short of replicas, a pod in PreparingDelete that was not chosen by
	// name goes back to PreparingNormal, unless a hook marks pods not ready.
	if !markPodNotReady(w) {
		diff := c.replicas - c.pods + c.plannedDeletions
		for _, p := range pods {
			if diff <= 0 {
				break
			}
			if p.preDeleting && !p.specified {
				out = append(out, fmt.Sprintf("pod %s is PreparingDelete while the CloneSet is short of replicas: the controller moves it back to PreparingNormal", p.meta.Name))
				diff--
			}
		}
		if len(out) > 0 {
			return out
		}
	}
	if c.scaleUp > 0 {
		if c.scaleUpLimit > 0 {
			out = append(out, fmt.Sprintf("%d pods to create (spec.replicas %d + surge %d, %d pods counted%s)", c.scaleUpLimit, c.replicas, c.useSurge,
				c.pods-excluded(c), excludedNote(c)))
		}
		// scaleUpLimit 0: scaleStrategy.maxUnavailable holds creation back by design (ScaleUpLimited).
		return out
	}
	// A pod in PreparingDelete is deleted once its preDelete hook no longer holds it (deletePods).
	for _, p := range pods {
		if p.preDeleting && !kruise.PodHooked(preDelete, p.meta) {
			out = append(out, fmt.Sprintf("pod %s is PreparingDelete and its preDelete hook no longer holds it: the controller deletes it", p.meta.Name))
		}
	}
	if len(out) > 0 {
		return out
	}
	limit := c.deleteReadyLimit
	for _, p := range pods {
		if !p.specified || p.preDeleting {
			continue
		}
		if !p.ready || limit > 0 {
			if p.ready {
				limit--
			}
			out = append(out, fmt.Sprintf("pod %s is chosen for deletion (%s): the controller %s", p.meta.Name, specifiedHow(p.meta), deleteVerb(preDelete, p.meta)))
		}
	}
	if len(out) > 0 {
		return out
	}
	// Scale in waits while any pod is chosen for deletion or PreparingDelete.
	if c.scaleDown > 0 && c.plannedDeletions == 0 {
		notReady := 0
		for _, p := range pods {
			if !p.ready {
				notReady++
			}
		}
		if n := min(c.scaleDown, notReady+limit); n > 0 {
			out = append(out, fmt.Sprintf("%d pods to remove (%d pods counted for spec.replicas %d)", n, c.pods-excluded(c), c.replicas))
		}
	}
	return out
}

func excluded(c scaleCounts) int {
	if c.excludePreDeleting {
		return c.preDeletingNew + c.preDeletingOld
	}
	return 0
}

func excludedNote(c scaleCounts) string {
	if n := excluded(c); n > 0 {
		return fmt.Sprintf(", %d PreparingDelete pods not counted", n)
	}
	return ""
}

// markPodNotReady is IsLifecycleMarkPodNotReady: the preDelete or inPlaceUpdate hook marks pods
// not ready.
func markPodNotReady(w *kruise.Workload) bool {
	return (w.Lifecycle.PreDelete != nil && w.Lifecycle.PreDelete.MarkPodNotReady) ||
		(w.Lifecycle.InPlaceUpdate != nil && w.Lifecycle.InPlaceUpdate.MarkPodNotReady)
}

func specifiedHow(p *metav1.ObjectMeta) string {
	if _, ok := p.Labels[kruise.LabelSpecifiedDelete]; ok {
		return "label " + kruise.LabelSpecifiedDelete
	}
	return "spec.scaleStrategy.podsToDelete"
}

func deleteVerb(h *kruise.LifecycleHook, p *metav1.ObjectMeta) string {
	if kruise.PodHooked(h, p) {
		return "moves it to PreparingDelete"
	}
	return "deletes it"
}

// pendingScaleOf is pendingScale on a CloneSet's active pods, with the running manager's
// --cloneset-scaling-exclude-preparing-delete and PreparingUpdateAsUpdate gate (both off when
// the manager is unknown, as they are by default).
func pendingScaleOf(env *kruiseenv.Env, w *kruise.Workload, active []*metav1.ObjectMeta) []string {
	exclude, asUpdate := false, false
	if m := env.Manager; m != nil {
		exclude = m.ScalingExcludePreparingDelete
		asUpdate = m.Gates.Enabled("PreparingUpdateAsUpdate", true)
	}
	pods := scalePods(env.Snapshot, w, active, asUpdate)
	return pendingScale(w, pods, countScale(w, pods, exclude))
}

func replicasOf(w *kruise.Workload) int32 {
	if w.Replicas == nil {
		return 1
	}
	return *w.Replicas
}

// deletionPlanned reports whether a pod is chosen for deletion or PreparingDelete: the pods'
// readiness then decides what the controller does (getPlannedDeletedPods).
func deletionPlanned(w *kruise.Workload, active []*metav1.ObjectMeta) bool {
	for _, p := range active {
		_, labelled := p.Labels[kruise.LabelSpecifiedDelete]
		if labelled || p.Labels[kruise.LabelLifecycleState] == kruise.StatePreparingDelete || slices.Contains(w.Scaling.PodsToDelete, p.Name) {
			return true
		}
	}
	return false
}
