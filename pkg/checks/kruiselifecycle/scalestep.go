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
	for _, step := range []scaleStep{preparingDeleteReverted, podsCreated, preDeleteReleased, chosenDeleted, scaledIn} {
		if out, last := step(w, pods, c); last {
			return out
		}
	}
	return nil
}

// scaleStep is one step of Scale: what it changes, and whether Scale returns after it (it does
// after any step that acts, and after scaling up even when creation is held back).
type scaleStep func(w *kruise.Workload, pods []scalePod, c scaleCounts) (changes []string, last bool)

// preparingDeleteReverted is managePreparingDelete: short of replicas, a pod in PreparingDelete
// that was not chosen by name goes back to PreparingNormal, unless a hook marks pods not ready.
func preparingDeleteReverted(w *kruise.Workload, pods []scalePod, c scaleCounts) ([]string, bool) {
	if markPodNotReady(w) {
		return nil, false
	}
	var out []string
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
	return out, len(out) > 0
}

// podsCreated: pods to create. With scaleUpLimit 0, scaleStrategy.maxUnavailable holds creation
// back by design (ScaleUpLimited).
func podsCreated(_ *kruise.Workload, _ []scalePod, c scaleCounts) ([]string, bool) {
	if c.scaleUp <= 0 {
		return nil, false
	}
	if c.scaleUpLimit <= 0 {
		return nil, true
	}
	return []string{fmt.Sprintf("%d pods to create (spec.replicas %d + surge %d, %d pods counted%s)", c.scaleUpLimit, c.replicas, c.useSurge,
		c.pods-excluded(c), excludedNote(c))}, true
}

// preDeleteReleased: a pod in PreparingDelete is deleted once its preDelete hook no longer holds
// it (deletePods).
func preDeleteReleased(w *kruise.Workload, pods []scalePod, _ scaleCounts) ([]string, bool) {
	var out []string
	for _, p := range pods {
		if p.preDeleting && !kruise.PodHooked(w.Lifecycle.PreDelete, p.meta) {
			out = append(out, fmt.Sprintf("pod %s is PreparingDelete and its preDelete hook no longer holds it: the controller deletes it", p.meta.Name))
		}
	}
	return out, len(out) > 0
}

// chosenDeleted: pods chosen for deletion go, the ready ones within deleteReadyLimit.
func chosenDeleted(w *kruise.Workload, pods []scalePod, c scaleCounts) ([]string, bool) {
	var out []string
	limit := c.deleteReadyLimit
	for _, p := range pods {
		if !p.specified || p.preDeleting {
			continue
		}
		if !p.ready || limit > 0 {
			if p.ready {
				limit--
			}
			out = append(out, fmt.Sprintf("pod %s is chosen for deletion (%s): the controller %s", p.meta.Name, specifiedHow(p.meta), deleteVerb(w.Lifecycle.PreDelete, p.meta)))
		}
	}
	return out, len(out) > 0
}

// scaledIn: scale in, which waits while any pod is chosen for deletion or PreparingDelete. No
// pod was chosen for deletion in the step before, so deleteReadyLimit is whole.
func scaledIn(_ *kruise.Workload, pods []scalePod, c scaleCounts) ([]string, bool) {
	if c.scaleDown <= 0 || c.plannedDeletions != 0 {
		return nil, false
	}
	notReady := 0
	for _, p := range pods {
		if !p.ready {
			notReady++
		}
	}
	if n := min(c.scaleDown, notReady+c.deleteReadyLimit); n > 0 {
		return []string{fmt.Sprintf("%d pods to remove (%d pods counted for spec.replicas %d)", n, c.pods-excluded(c), c.replicas)}, true
	}
	return nil, false
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
