package terminating

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/internal/uniq"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// hookFinalizers returns the finalizers of w's preDelete and preNormal hooks that are on p, each
// once, with the hook that lists it.
func hookFinalizers(w *kruise.Workload, p *corev1.Pod) (fins, hooks []string) {
	for _, h := range []struct {
		name string
		hook *kruise.LifecycleHook
	}{{"preDelete", w.Lifecycle.PreDelete}, {"preNormal", w.Lifecycle.PreNormal}} {
		if h.hook == nil {
			continue
		}
		for _, f := range h.hook.FinalizersHandler {
			if slices.Contains(p.Finalizers, f) && !slices.Contains(fins, f) {
				fins = append(fins, f)
				hooks = append(hooks, h.name)
			}
		}
	}
	return fins, hooks
}

// kruiseHookBypassed reports a pod deleted directly (never PreparingDelete) while finalizers of
// its workload's preDelete or preNormal hook are on it. Hook owners commonly act only on the
// PreparingDelete state, which a direct delete skips, and the workload does not replace the pod
// while it is held (docs/domain.md, "What the real controllers do").
func (a *pass) kruiseHookBypassed(t *target) (checks.Draft, bool) {
	p, owners := t.pod, t.owners
	state := p.Labels[kruise.LabelLifecycleState]
	if p.DeletionTimestamp == nil || state == kruise.StatePreparingDelete {
		return checks.Draft{}, false
	}
	ref := snapshot.ControllerOf(p)
	if ref == nil {
		return checks.Draft{}, false
	}
	w, ok := a.s.Workload(ref.UID)
	if !ok {
		return checks.Draft{}, false
	}
	fins, hooks := hookFinalizers(w, p)
	if len(fins) == 0 {
		return checks.Draft{}, false
	}
	wl := fmt.Sprintf("%s %s/%s", w.Kind, w.Namespace, w.Name)
	if state == "" {
		state = "none"
	}
	ev := []string{fmt.Sprintf("label %s: %s (never PreparingDelete: the pod was deleted directly, not scaled in by %s)",
		kruise.LabelLifecycleState, state, wl)}
	var named []string
	var fixes []report.Fix
	absent := true
	for i, f := range fins {
		named = append(named, fmt.Sprintf("%s (spec.lifecycle.%s)", f, hooks[i]))
		ev = append(ev, fmt.Sprintf("%s spec.lifecycle.%s.finalizersHandler lists %s, still on the pod", wl, hooks[i], f))
		for _, o := range owners.get() {
			if o.Finalizer != f {
				continue
			}
			ev = append(ev, o.line())
			if o.State == ownerMissing {
				fixes = append(fixes, removeFinalizerFix(o, report.RiskMedium))
			} else {
				absent = false
			}
		}
	}
	if !absent {
		fixes = nil // the hook's owner may still act: what it guards is for a person to decide
	}
	msg := fmt.Sprintf("The pod was deleted directly while %s's lifecycle hook finalizer %s is on it. The hook's owner "+
		"does its work when OpenKruise moves a pod it scales in to PreparingDelete, and commonly acts only then: a direct "+
		"delete skips that state, so the finalizer may never be removed, and %s does not create a replacement while the "+
		"pod is held. For this pod: have the hook's owner do its pre-delete work (or do it by hand), then remove the "+
		"finalizer. Scaling in through the workload (spec.scaleStrategy.podsToDelete, or label %s on the pod) is the "+
		"way that runs the hook.", wl, strings.Join(named, ", "), wl, kruise.LabelSpecifiedDelete)
	if len(fixes) > 0 {
		msg += " The hook's owner is not installed, so nothing will remove it."
	}
	return checks.Draft{
		RootCause: RootCauseKruiseHookBypassed,
		Summary: fmt.Sprintf("Terminating for %s: deleted directly, %s hook finalizer %s of %s never released",
			checks.Age(a.now, p.DeletionTimestamp.Time), strings.Join(uniq.Of(hooks), "/"), strings.Join(fins, ", "), wl),
		Message:  msg,
		Evidence: ev,
		Fixes:    fixes,
	}, true
}
