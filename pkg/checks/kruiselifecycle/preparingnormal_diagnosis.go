package kruiselifecycle

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/knowledge"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// stuckPod is what stuck-preparing-normal judges: a pod PreparingNormal past the threshold, its
// controller reference and workload (nil when the snapshot has none), and the draft every
// finding on it starts from.
type stuckPod struct {
	pod     *corev1.Pod
	ref     *metav1.OwnerReference
	w       *kruise.Workload
	base    checks.Draft
	requeue report.Fix
}

func newStuckPod(p *pass, pod *corev1.Pod, ref *metav1.OwnerReference, w *kruise.Workload, since time.Time, sinceSource string) *stuckPod {
	now := p.Snapshot.Now
	base := checks.Draft{
		Object:  checks.Ref("v1", "Pod", pod),
		Owner:   checks.OwnerRef(pod.Namespace, ref),
		Node:    pod.Spec.NodeName,
		Since:   since,
		Summary: fmt.Sprintf("pod %s/%s of %s %s has been PreparingNormal for %s", pod.Namespace, pod.Name, ref.Kind, ref.Name, checks.Age(now, since)),
		Evidence: []string{checks.Evidencef("label %s=%s since %s (%s ago, from %s)", kruise.LabelLifecycleState, kruise.StatePreparingNormal,
			since.UTC().Format(time.RFC3339), checks.Age(now, since), sinceSource)},
	}
	if w == nil {
		base.Evidence = append(base.Evidence, checks.Evidencef("%s %s/%s is not in the snapshot (deleted, or outside the scan's selector)", ref.Kind, pod.Namespace, ref.Name))
	}
	base.Evidence = append(base.Evidence, p.ManagerEvidence())
	if l := p.LeaderEvidence(); l != "" {
		base.Evidence = append(base.Evidence, l)
	}
	return &stuckPod{pod: pod, ref: ref, w: w, base: base, requeue: requeueFix(ref.Kind, pod.Namespace, ref.Name)}
}

// draft is the base draft with the root cause and the rule's evidence added.
func (sp *stuckPod) draft(rootCause string, evidence ...string) checks.Draft {
	d := sp.base
	d.RootCause = rootCause
	d.Evidence = append(append([]string{}, sp.base.Evidence...), evidence...)
	return d
}

// hook is the workload's preNormal hook, nil when it has none or is unknown.
func (sp *stuckPod) hook() *kruise.LifecycleHook {
	if sp.w == nil {
		return nil
	}
	return sp.w.Lifecycle.PreNormal
}

func (sp *stuckPod) cloneSet() bool { return sp.w != nil && sp.w.Kind == kruise.KindCloneSet }

// settledDraft is the draft of a rule after the hook: the evidence says the hook is satisfied,
// or that there is none.
func (sp *stuckPod) settledDraft(rootCause string, evidence ...string) checks.Draft {
	hook := sp.hook()
	var lines []string
	if hook != nil {
		lines = hookSatisfied(hook, &sp.pod.ObjectMeta)
	} else {
		lines = []string{checks.Evidencef("%s %s/%s has no spec.lifecycle.preNormal hook", sp.w.Kind, sp.w.Namespace, sp.w.Name)}
	}
	return sp.draft(rootCause, append(lines, evidence...)...)
}

// preparingNormalRules are the root causes of a stuck pod, in the order of docs/contract.md,
// "Checks and root causes": the first that holds names it.
func preparingNormalRules() []checks.Rule[*pass, *stuckPod] {
	return []checks.Rule[*pass, *stuckPod]{
		preNormalControllerDown,
		preNormalWebhookBlocks,
		preNormalWorkloadFrozen,
		preNormalWorkloadUnread,
		preNormalHookPending,
		preNormalOnDeleteRefresh,
		preNormalUnscheduled,
		preNormalEventDropped,
		preNormalReconcileMissed,
	}
}

// preNormalControllerDown: nothing reconciles at all.
func preNormalControllerDown(p *pass, sp *stuckPod) (checks.Draft, bool) {
	down, why := p.Unavailable()
	if !down {
		return checks.Draft{}, false
	}
	d := sp.draft(RootCauseControllerUnavailable, why...)
	d.Evidence = append(d.Evidence, webhookAlsoDown(p, p.webhooks().PodRequest(false, sp.pod.Namespace, sp.pod.Name, sp.pod.Labels),
		"the update that moves the pod out of PreparingNormal")...)
	d.Message = "No kruise-manager leader is running, so nothing moves the pod out of PreparingNormal. Bring the manager back."
	return d, true
}

// preNormalWorkloadFrozen: the workload itself is not reconciled.
func preNormalWorkloadFrozen(p *pass, sp *stuckPod) (checks.Draft, bool) {
	w := sp.w
	if w == nil {
		return checks.Draft{}, false
	}
	v, ok := p.frozenWorkload(w)
	if !ok {
		return checks.Draft{}, false
	}
	wf := p.expectationsFinding(v)
	d := sp.draft(RootCauseWorkloadExpectationsBlock, v.signals...)
	d.Evidence = append(d.Evidence, checks.Evidencef("%s finding %s: %s", ExpectationsUnsatisfiedID, wf.ID, wf.RootCause.ID))
	d.Message = fmt.Sprintf("%s %s/%s is not reconciled (%s finding %s, root cause %s), so nothing refreshes this pod's lifecycle state. Fix the workload first.",
		w.Kind, w.Namespace, w.Name, ExpectationsUnsatisfiedID, wf.ID, wf.RootCause.ID)
	for _, fx := range wf.Fixes {
		if fx.Action == checks.ActionRestartControllerLeader {
			d.Fixes = append(d.Fixes, fx)
		}
	}
	d.Fixes = append(d.Fixes, sp.requeue)
	return d, true
}

// preNormalWorkloadUnread: without the workload the hook cannot be checked.
func preNormalWorkloadUnread(_ *pass, sp *stuckPod) (checks.Draft, bool) {
	if sp.w != nil {
		return checks.Draft{}, false
	}
	d := sp.draft(RootCausePreNormalReconcileMissed)
	d.Message = "The pod's workload could not be read, so the hook cannot be checked; a requeue of the workload makes the controller look at the pod again."
	d.Fixes = []report.Fix{sp.requeue}
	return d, true
}

// preNormalHookPending: the hook's third party has not acted.
func preNormalHookPending(_ *pass, sp *stuckPod) (checks.Draft, bool) {
	misses := hookMisses(sp.hook(), &sp.pod.ObjectMeta)
	if len(misses) == 0 {
		return checks.Draft{}, false
	}
	d := sp.draft(RootCausePreNormalHookPending, misses...)
	d.Message = fmt.Sprintf("%s %s/%s has a preNormal hook that is not satisfied on this pod; kruise waits for the hook controller by design, and that controller has not acted.",
		sp.w.Kind, sp.w.Namespace, sp.w.Name)
	return d, true
}

// preNormalOnDeleteRefresh: v1.9.0 never refreshes pods of OnDelete CloneSets.
func preNormalOnDeleteRefresh(p *pass, sp *stuckPod) (checks.Draft, bool) {
	if !sp.cloneSet() || sp.w.UpdateType != kruise.UpdateOnDelete {
		return checks.Draft{}, false
	}
	b, ok := p.Affected(knowledge.BugOnDeleteRefresh)
	if !ok {
		return checks.Draft{}, false
	}
	d := sp.settledDraft(RootCauseOnDeleteRefreshBug,
		checks.Evidencef("CloneSet %s/%s has updateStrategy.type OnDelete", sp.w.Namespace, sp.w.Name),
		checks.Evidencef("kruise-manager %s is in the affected range %s: %s", p.Manager.Version, b.Affected, b.Summary))
	d.Message = fmt.Sprintf("kruise-manager %s never refreshes lifecycle states of pods of a CloneSet with updateStrategy.type OnDelete (%s). Switch the CloneSet to another update strategy or run a release with commit 58a5d52fb.",
		p.Manager.Version, b.Affected)
	return d, true
}

// preNormalUnscheduled: from v1.9.0 pods without a preNormal hook wait for scheduling.
func preNormalUnscheduled(p *pass, sp *stuckPod) (checks.Draft, bool) {
	pod := sp.pod
	if !sp.cloneSet() || sp.hook() != nil || pod.Spec.NodeName != "" {
		return checks.Draft{}, false
	}
	b, ok := p.Affected(knowledge.BehaviourPreNormalScheduled)
	if !ok {
		return checks.Draft{}, false
	}
	d := sp.settledDraft(RootCausePodNotScheduled,
		checks.Evidencef("spec.nodeName is empty; kruise-manager %s (%s): %s", p.Manager.Version, b.Affected, b.Summary))
	reason := "the pod is not bound to a node"
	if cond, ok := podCondition(pod, corev1.PodScheduled); ok {
		d.Evidence = append(d.Evidence, checks.Evidencef("condition PodScheduled=%s reason %s: %s", cond.Status, cond.Reason, checks.Truncate(cond.Message, 300)))
		if cond.Reason != "" {
			reason = fmt.Sprintf("the scheduler reports %s: %s", cond.Reason, checks.Truncate(cond.Message, 200))
		}
	} else {
		d.Evidence = append(d.Evidence, "the pod has no PodScheduled condition: no scheduler has looked at it (spec.schedulerName "+pod.Spec.SchedulerName+")")
		reason = "no scheduler has looked at it"
	}
	d.Message = fmt.Sprintf("kruise-manager %s keeps a pod with no preNormal hook in PreparingNormal until it is scheduled, and %s.", p.Manager.Version, reason)
	return d, true
}

// preNormalEventDropped: the known event-filter bug, in which only the hook's finalizers are
// filtered.
func preNormalEventDropped(p *pass, sp *stuckPod) (checks.Draft, bool) {
	hook := sp.hook()
	if !sp.cloneSet() || hook == nil || len(hook.FinalizersHandler) == 0 {
		return checks.Draft{}, false
	}
	b, ok := p.Affected(knowledge.BugPreNormalEventDropped)
	if !ok {
		return checks.Draft{}, false
	}
	d := sp.settledDraft(RootCausePreNormalEventDropped,
		checks.Evidencef("kruise-manager %s is in the affected range %s of openkruise/kruise#2057", p.Manager.Version, b.Affected),
		p.Manager.Gates.Describe(b.Gate))
	d.Fixes = []report.Fix{sp.requeue}
	d.References = b.Reference
	d.Message = fmt.Sprintf("The preNormal hook is satisfied, but kruise-manager %s with %s on ignores the pod event that added the hook's finalizer, so no reconcile moves the pod to Normal. Requeue the CloneSet now; upgrade to %s or turn the gate off to stop it recurring.",
		p.Manager.Version, b.Gate, b.Affected.Fixed)
	return d, true
}

// preNormalReconcileMissed: nothing known explains it; it always holds.
func preNormalReconcileMissed(p *pass, sp *stuckPod) (checks.Draft, bool) {
	d := sp.settledDraft(RootCausePreNormalReconcileMissed)
	d.Fixes = []report.Fix{sp.requeue}
	if b, ok := knowledge.LookupBug(knowledge.BugPreNormalEventDropped); ok && sp.cloneSet() {
		hook := sp.hook()
		switch {
		case !p.VersionKnown():
			d.Evidence = append(d.Evidence, "openkruise/kruise#2057 cannot be ruled out: the kruise-manager version is unknown")
		case hook == nil || len(hook.FinalizersHandler) == 0:
			d.Evidence = append(d.Evidence, "openkruise/kruise#2057 does not apply: the preNormal hook has no finalizer")
		default:
			d.Evidence = append(d.Evidence, checks.Evidencef("openkruise/kruise#2057 does not apply: kruise-manager %s (affected %s), %s",
				p.Manager.Version, b.Affected, p.Manager.Gates.Describe(b.Gate)))
		}
	}
	d.Message = "Everything the pod waits for is in place and the manager is up, but no reconcile moved it to Normal. Requeue the workload so the controller reconciles it."
	return d, true
}
