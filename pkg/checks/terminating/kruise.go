package terminating

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// lifecycleSince is when a pod entered PreparingDelete, as OpenKruise stamped it (kruise.StateSince).
func lifecycleSince(p *corev1.Pod) (time.Time, bool) {
	if p.Labels[kruise.LabelLifecycleState] != kruise.StatePreparingDelete {
		return time.Time{}, false
	}
	if t, stamped := kruise.StateSince(p); stamped {
		return t, true
	}
	return time.Time{}, false
}

// kruisePreDelete reports a pod held in PreparingDelete by its workload's preDelete hook.
func (a *pass) kruisePreDelete(t *target) (checks.Draft, bool) {
	p, since := t.pod, t.since
	if p.Labels[kruise.LabelLifecycleState] != kruise.StatePreparingDelete {
		return checks.Draft{}, false
	}
	ref := snapshot.ControllerOf(p)
	if ref == nil {
		return checks.Draft{}, false
	}
	w, ok := a.s.Workload(ref.UID)
	if !ok || w.Lifecycle.PreDelete.Empty() {
		return checks.Draft{}, false
	}
	hook := w.Lifecycle.PreDelete
	var fins, labels []string
	for _, f := range hook.FinalizersHandler {
		if slices.Contains(p.Finalizers, f) {
			fins = append(fins, f)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(hook.LabelsHandler)) {
		if v, ok := p.Labels[k]; ok && v == hook.LabelsHandler[k] {
			labels = append(labels, k+"="+v)
		}
	}
	// Once the pod is deleted only finalizers can hold it; before, labels hold OpenKruise back too.
	if len(fins) == 0 && (p.DeletionTimestamp != nil || len(labels) == 0) {
		return checks.Draft{}, false
	}
	wl := fmt.Sprintf("%s %s/%s", w.Kind, w.Namespace, w.Name)
	ev := []string{}
	if t, ok := lifecycleSince(p); ok {
		ev = append(ev, fmt.Sprintf("label %s=%s since %s (%s ago)", kruise.LabelLifecycleState, kruise.StatePreparingDelete,
			t.UTC().Format(time.RFC3339), checks.Age(a.now, t)))
	} else {
		ev = append(ev, fmt.Sprintf("label %s=%s", kruise.LabelLifecycleState, kruise.StatePreparingDelete))
	}
	ev = append(ev, fmt.Sprintf("%s spec.lifecycle.preDelete: finalizersHandler [%s], labelsHandler {%s}", wl,
		strings.Join(hook.FinalizersHandler, ", "), joinLabels(hook.LabelsHandler)))
	for _, f := range fins {
		line := "hook finalizer " + f + " is still on the pod"
		if mgrs := finalizerManagers(p, f); len(mgrs) > 0 {
			line += " (added by field manager " + strings.Join(managerNames(mgrs), ", ") + ")"
		}
		ev = append(ev, line)
	}
	for _, l := range labels {
		ev = append(ev, "hook label "+l+" is still on the pod")
	}
	if t, ok := lifecycleSince(p); ok {
		since = t
	}
	held := append(append([]string{}, fins...), labels...)
	state := "is being deleted"
	if p.DeletionTimestamp == nil {
		state = "was chosen for deletion (PreparingDelete)"
	}
	return checks.Draft{
		RootCause: RootCauseKruisePreDeleteHook,
		Summary: fmt.Sprintf("PreparingDelete for %s: preDelete hook %s of %s not released", checks.Age(a.now, since),
			strings.Join(held, ", "), wl),
		Message: fmt.Sprintf("The pod %s, and %s has a preDelete lifecycle hook: OpenKruise lets the pod go only when "+
			"the hook's owner has done its pre-delete work and removed %s. The hook owner has not done so.",
			state, wl, strings.Join(held, ", ")),
		Evidence: ev,
	}, true
}

func joinLabels(m map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+": "+m[k])
	}
	return strings.Join(parts, ", ")
}
