package kruiselifecycle

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks/internal/kruiseenv"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/knowledge"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// diagnose decides the root cause of one stuck pod, in the order of docs/contract.md, "Checks and root causes".
func (c stuckPreparingNormal) diagnose(env *kruiseenv.Env, frozen map[types.UID]*frozenWorkload, p *corev1.Pod, w *kruise.Workload,
	since time.Time, sinceSource string) checks.Draft {
	s := env.Snapshot
	ref := snapshot.ControllerOf(p)
	f := checks.Draft{
		Object: checks.Ref("v1", "Pod", p),
		Owner:  checks.OwnerRef(p.Namespace, ref),
		Node:   p.Spec.NodeName,
		Since:  since,
		Summary: fmt.Sprintf("pod %s/%s of %s %s has been PreparingNormal for %s", p.Namespace, p.Name, ref.Kind, ref.Name,
			checks.Age(s.Now, since)),
		Evidence: []string{checks.Evidencef("label %s=%s since %s (%s ago, from %s)", kruise.LabelLifecycleState, kruise.StatePreparingNormal,
			since.UTC().Format(time.RFC3339), checks.Age(s.Now, since), sinceSource)},
	}
	if w == nil {
		f.Evidence = append(f.Evidence, checks.Evidencef("%s %s/%s is not in the snapshot (deleted, or outside the scan's selector)", ref.Kind, p.Namespace, ref.Name))
	}
	f.Evidence = append(f.Evidence, env.ManagerEvidence())
	if l := env.LeaderEvidence(); l != "" {
		f.Evidence = append(f.Evidence, l)
	}
	requeue := requeueFix(ref.Kind, p.Namespace, ref.Name)

	// 1. Nothing reconciles at all.
	if down, why := env.Unavailable(); down {
		f.RootCause = RootCauseControllerUnavailable
		f.Message = "No kruise-manager leader is running, so nothing moves the pod out of PreparingNormal. Bring the manager back."
		f.Evidence = append(f.Evidence, why...)
		return f
	}
	// 2. The workload itself is not reconciled.
	if w != nil {
		if v, ok := frozen[w.UID]; ok {
			wf := expectationsFinding(c.expectations, env, v)
			f.RootCause = RootCauseWorkloadExpectationsBlock
			f.Message = fmt.Sprintf("%s %s/%s is not reconciled (%s finding %s, root cause %s), so nothing refreshes this pod's lifecycle state. Fix the workload first.",
				w.Kind, w.Namespace, w.Name, ExpectationsUnsatisfiedID, wf.ID, wf.RootCause.ID)
			f.Evidence = append(f.Evidence, v.signals...)
			f.Evidence = append(f.Evidence, checks.Evidencef("%s finding %s: %s", ExpectationsUnsatisfiedID, wf.ID, wf.RootCause.ID))
			for _, fx := range wf.Fixes {
				if fx.Action == checks.ActionRestartControllerLeader {
					f.Fixes = append(f.Fixes, fx)
				}
			}
			f.Fixes = append(f.Fixes, requeue)
			return f
		}
	}
	if w == nil {
		f.RootCause = RootCausePreNormalReconcileMissed
		f.Message = "The pod's workload could not be read, so the hook cannot be checked; a requeue of the workload makes the controller look at the pod again."
		f.Fixes = []report.Fix{requeue}
		return f
	}

	hook := w.Lifecycle.PreNormal
	// 3. The hook's third party has not acted.
	if misses := hookMisses(hook, &p.ObjectMeta); len(misses) > 0 {
		f.RootCause = RootCausePreNormalHookPending
		f.Message = fmt.Sprintf("%s %s/%s has a preNormal hook that is not satisfied on this pod; kruise waits for the hook controller by design, and that controller has not acted.",
			w.Kind, w.Namespace, w.Name)
		f.Evidence = append(f.Evidence, misses...)
		return f
	}
	if hook != nil {
		f.Evidence = append(f.Evidence, hookSatisfied(hook, &p.ObjectMeta)...)
	} else {
		f.Evidence = append(f.Evidence, checks.Evidencef("%s %s/%s has no spec.lifecycle.preNormal hook", w.Kind, w.Namespace, w.Name))
	}
	cloneSet := w.Kind == kruise.KindCloneSet

	// 4. v1.9.0 never refreshes pods of OnDelete CloneSets.
	if cloneSet && w.UpdateType == kruise.UpdateOnDelete {
		if b, ok := env.Affected(knowledge.BugOnDeleteRefresh); ok {
			f.RootCause = RootCauseOnDeleteRefreshBug
			f.Message = fmt.Sprintf("kruise-manager %s never refreshes lifecycle states of pods of a CloneSet with updateStrategy.type OnDelete (%s). Switch the CloneSet to another update strategy or run a release with commit 58a5d52fb.",
				env.Manager.Version, b.Affected)
			f.Evidence = append(f.Evidence, checks.Evidencef("CloneSet %s/%s has updateStrategy.type OnDelete", w.Namespace, w.Name),
				checks.Evidencef("kruise-manager %s is in the affected range %s: %s", env.Manager.Version, b.Affected, b.Summary))
			return f
		}
	}
	// 5. From v1.9.0 pods without a preNormal hook wait for scheduling.
	if cloneSet && hook == nil && p.Spec.NodeName == "" {
		if b, ok := env.Affected(knowledge.BehaviourPreNormalScheduled); ok {
			f.RootCause = RootCausePodNotScheduled
			f.Evidence = append(f.Evidence, checks.Evidencef("spec.nodeName is empty; kruise-manager %s (%s): %s", env.Manager.Version, b.Affected, b.Summary))
			reason := "the pod is not bound to a node"
			if cond, ok := podCondition(p, corev1.PodScheduled); ok {
				f.Evidence = append(f.Evidence, checks.Evidencef("condition PodScheduled=%s reason %s: %s", cond.Status, cond.Reason, checks.Truncate(cond.Message, 300)))
				if cond.Reason != "" {
					reason = fmt.Sprintf("the scheduler reports %s: %s", cond.Reason, checks.Truncate(cond.Message, 200))
				}
			} else {
				f.Evidence = append(f.Evidence, "the pod has no PodScheduled condition: no scheduler has looked at it (spec.schedulerName "+p.Spec.SchedulerName+")")
				reason = "no scheduler has looked at it"
			}
			f.Message = fmt.Sprintf("kruise-manager %s keeps a pod with no preNormal hook in PreparingNormal until it is scheduled, and %s.", env.Manager.Version, reason)
			return f
		}
	}
	// 6. The known event-filter bug: only the hook's finalizers are filtered.
	if cloneSet && hook != nil && len(hook.FinalizersHandler) > 0 {
		if b, ok := env.Affected(knowledge.BugPreNormalEventDropped); ok {
			f.RootCause = RootCausePreNormalEventDropped
			f.Fixes = []report.Fix{requeue}
			f.References = b.Reference
			f.Evidence = append(f.Evidence,
				checks.Evidencef("kruise-manager %s is in the affected range %s of openkruise/kruise#2057", env.Manager.Version, b.Affected),
				env.Manager.Gates.Describe(b.Gate))
			f.Message = fmt.Sprintf("The preNormal hook is satisfied, but kruise-manager %s with %s on ignores the pod event that added the hook's finalizer, so no reconcile moves the pod to Normal. Requeue the CloneSet now; upgrade to %s or turn the gate off to stop it recurring.",
				env.Manager.Version, b.Gate, b.Affected.Fixed)
			return f
		}
	}
	// 7. Nothing known explains it.
	f.RootCause = RootCausePreNormalReconcileMissed
	f.Fixes = []report.Fix{requeue}
	if b, ok := knowledge.LookupBug(knowledge.BugPreNormalEventDropped); ok && cloneSet {
		switch {
		case !env.VersionKnown():
			f.Evidence = append(f.Evidence, "openkruise/kruise#2057 cannot be ruled out: the kruise-manager version is unknown")
		case hook == nil || len(hook.FinalizersHandler) == 0:
			f.Evidence = append(f.Evidence, "openkruise/kruise#2057 does not apply: the preNormal hook has no finalizer")
		default:
			f.Evidence = append(f.Evidence, checks.Evidencef("openkruise/kruise#2057 does not apply: kruise-manager %s (affected %s), %s",
				env.Manager.Version, b.Affected, env.Manager.Gates.Describe(b.Gate)))
		}
	}
	f.Message = "Everything the pod waits for is in place and the manager is up, but no reconcile moved it to Normal. Requeue the workload so the controller reconciles it."
	return f
}
