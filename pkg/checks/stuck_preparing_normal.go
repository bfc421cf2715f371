package checks

import (
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/knowledge"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// CheckStuckPreparingNormal is the check's ID.
const CheckStuckPreparingNormal = "stuck-preparing-normal"

// Root causes of stuck-preparing-normal (contract.md).
const (
	rcPreNormalHookPending      = "prenormal-hook-pending"
	rcPreNormalEventDropped     = "prenormal-event-dropped"
	rcPreNormalReconcileMissed  = "prenormal-reconcile-missed"
	rcPodNotScheduled           = "pod-not-scheduled"
	rcOnDeleteRefreshBug        = "ondelete-refresh-bug"
	rcWorkloadExpectationsBlock = "workload-expectations-blocked"
)

const preparingNormalThreshold = 10 * time.Minute

const (
	refLifecycleDocs    = "https://openkruise.io/docs/user-manuals/cloneset"
	refIsPodAllHooked   = "openkruise/kruise pkg/util/lifecycle/lifecycle_utils.go (IsPodAllHooked)"
	refRefreshPodState  = "openkruise/kruise pkg/controller/cloneset/sync/cloneset_update.go (refreshPodState)"
	refEventFilter      = "openkruise/kruise pkg/controller/cloneset/core/cloneset_core.go (lifecycleFinalizerChanged)"
	refCloneSetOnDelete = "openkruise/kruise#2224"
)

type stuckPreparingNormal struct{}

// StuckPreparingNormal returns the stuck-preparing-normal check.
func StuckPreparingNormal() Check { return stuckPreparingNormal{} }

func (stuckPreparingNormal) Info() Info {
	return Info{
		ID:    CheckStuckPreparingNormal,
		Title: "OpenKruise pods stuck in PreparingNormal",
		Description: "CloneSet and Advanced StatefulSet pods start in the lifecycle state PreparingNormal " +
			"(label lifecycle.apps.kruise.io/state). On a reconcile the controller moves a pod to Normal when the " +
			"workload has no spec.lifecycle.preNormal hook, or when every finalizer the hook lists is on the pod and " +
			"every label it lists has exactly the given value; readiness is never required. A pod in PreparingNormal " +
			"is unavailable. This check reports pods that stay PreparingNormal longer than the threshold (from the " +
			"lifecycle.apps.kruise.io/timestamp annotation, else the pod's creation) and decides why, in this order: " +
			"the manager is down, the workload's expectations block it, the hook is not satisfied, a known kruise " +
			"bug or behaviour of the running version, or a reconcile that simply never came.",
		Threshold: preparingNormalThreshold,
		RootCauses: []RootCause{
			{ID: rcControllerUnavailable, Title: "kruise-manager is not running a leader", Severity: report.SeverityError,
				Description: "The kruise-manager Deployment has no available replica, or its leader Lease has not been " +
					"renewed within its lease duration, so nothing moves pods out of PreparingNormal. Bring the manager " +
					"back; pods whose hook is satisfied move to Normal on its first reconcile.",
				References: []string{"https://openkruise.io/docs/installation"}},
			{ID: rcWorkloadExpectationsBlock, Title: "the owning workload is not reconciled (expectations)", Severity: report.SeverityError,
				Description: "The pod's CloneSet has an expectations-unsatisfied finding in the same scan: the controller " +
					"skips every reconcile of the workload, so it never refreshes this pod's lifecycle state. Fix the " +
					"workload (see its expectations-unsatisfied finding); restarting the kruise-manager leader clears a " +
					"leaked expectation.",
				References: []string{"openkruise/kruise#1765", refCloneSetController},
				Actions:    []string{ActionRestartControllerLeader, ActionRequeueWorkload}},
			{ID: rcPreNormalHookPending, Title: "the preNormal hook is not satisfied yet", Severity: report.SeverityWarning,
				Description: "The workload's spec.lifecycle.preNormal lists finalizers and/or labels that a third-party " +
					"hook controller (service registration, warm-up, ...) must put on the pod, and some are missing or a " +
					"label has another value. The evidence names each one and, from managedFields, which field manager " +
					"last set the pod's finalizers or that label. Look at that hook controller: kruise is waiting for it " +
					"by design.",
				References: []string{refLifecycleDocs, refIsPodAllHooked}},
			{ID: rcOnDeleteRefreshBug, Title: "kruise v1.9 does not refresh pods of OnDelete CloneSets", Severity: report.SeverityError,
				Description: "In kruise-manager v1.9 (OnDelete for CloneSets arrived in v1.9.0, openkruise/kruise#2224) the CloneSet update step returns early for updateStrategy.type " +
					"OnDelete, before it refreshes pod lifecycle states: pods never leave PreparingNormal and never get " +
					"the InPlaceUpdateReady condition. Fixed on the master branch by commit 58a5d52fb, which no release up to v1.9.x contains. " +
					"Switch the CloneSet to another update strategy or run a release with the fix.",
				References: []string{refCloneSetOnDelete, "openkruise/kruise commit 58a5d52fb", refRefreshPodState}},
			{ID: rcPodNotScheduled, Title: "the pod is not scheduled (kruise >= v1.9.0 waits for it)", Severity: report.SeverityWarning,
				Description: "From v1.9.0 (openkruise/kruise#2087) a CloneSet pod with no preNormal hook stays PreparingNormal " +
					"until it is bound to a node. The pod has no spec.nodeName; the PodScheduled condition says why the " +
					"scheduler has not placed it (resources, affinity, taints). Fix the scheduling problem.",
				References: []string{"openkruise/kruise#2087", refRefreshPodState}},
			{ID: rcPreNormalEventDropped, Title: "kruise dropped the hook finalizer's event (CloneSetEventHandlerOptimization)", Severity: report.SeverityError,
				Description: "With the alpha feature gate CloneSetEventHandlerOptimization on (explicitly or through " +
					"AllAlpha=true), kruise-manager v1.4.0 through v1.8.x filters pod update events and ignores changes of " +
					"preNormal hook finalizers, so adding the hook's finalizer triggers no reconcile and the pod stays " +
					"PreparingNormal until something else requeues the CloneSet (openkruise/kruise#2057, fixed in v1.9.0 " +
					"by #2060). Label hooks are not affected. Requeue the CloneSet now; upgrade to v1.9.0 or turn the gate " +
					"off for good.",
				References: []string{"openkruise/kruise#2057", "openkruise/kruise#2060", refEventFilter},
				Actions:    []string{ActionRequeueWorkload}},
			{ID: rcPreNormalReconcileMissed, Title: "the hook is satisfied but no reconcile moved the pod", Severity: report.SeverityError,
				Description: "Everything the pod waits for is in place, the manager is up and no known bug of the running " +
					"version explains it: the reconcile that would move the pod to Normal never came (a lost event, or a " +
					"controller restart at the wrong moment). Requeueing the workload makes the controller reconcile it.",
				References: []string{refRefreshPodState, refIsPodAllHooked},
				Actions:    []string{ActionRequeueWorkload}},
		},
		Needs: []Need{
			{Input: snapshot.InputPods, PodAnnotations: []string{kruise.AnnotationLifecycleTime}},
			{Input: snapshot.InputKruiseWorkloads},
			{Input: snapshot.InputEvents, Optional: true},
			{Input: snapshot.InputControllers, Optional: true},
			{Input: snapshot.InputControllerLogs, Optional: true},
		},
	}
}

// PodCandidates selects, from the metadata-only pod list, the pods labelled PreparingNormal that
// an OpenKruise workload controls, plus the pods the expectations verdict needs in full.
func (stuckPreparingNormal) PodCandidates(s *snapshot.Snapshot) []types.UID {
	var out []types.UID
	for _, p := range s.Pods {
		if p.Labels[kruise.LabelLifecycleState] != kruise.StatePreparingNormal {
			continue
		}
		if krIsOwner(snapshot.ControllerOf(p), kruise.KindCloneSet, kruise.KindStatefulSet) {
			out = append(out, p.UID)
		}
	}
	return append(out, expectationCandidates(s)...)
}

func (c stuckPreparingNormal) Run(s *snapshot.Snapshot, threshold time.Duration) []report.Finding {
	info := c.Info()
	env := newKruiseEnv(s)
	// The expectations verdict uses the threshold the expectations check would use in this scan.
	expTh := krThreshold(s, threshold, preparingNormalThreshold, env.expectationTimeout())
	var frozen map[types.UID]*frozenWorkload
	var out []report.Finding
	pods := append([]*corev1.Pod(nil), s.FullPods...)
	sort.Slice(pods, func(i, j int) bool {
		if pods[i].Namespace != pods[j].Namespace {
			return pods[i].Namespace < pods[j].Namespace
		}
		return pods[i].Name < pods[j].Name
	})
	for _, p := range pods {
		if p.Labels[kruise.LabelLifecycleState] != kruise.StatePreparingNormal || p.DeletionTimestamp != nil {
			continue
		}
		ref := snapshot.ControllerOf(p)
		if !krIsOwner(ref, kruise.KindCloneSet, kruise.KindStatefulSet) {
			continue
		}
		since, sinceSource := krLifecycleSince(&p.ObjectMeta)
		if s.Now.Sub(since) < threshold {
			continue
		}
		if frozen == nil {
			frozen = frozenWorkloads(env, expTh)
		}
		w, _ := s.Workload(ref.UID)
		out = append(out, NewFinding(info, c.diagnose(env, frozen, p, w, since, sinceSource)))
	}
	return out
}

// diagnose decides the root cause of one stuck pod, in the order the issue fixes.
func (c stuckPreparingNormal) diagnose(env *kruiseEnv, frozen map[types.UID]*frozenWorkload, p *corev1.Pod, w *kruise.Workload,
	since time.Time, sinceSource string) Draft {
	s := env.s
	ref := snapshot.ControllerOf(p)
	f := Draft{
		Object: Ref("v1", "Pod", p),
		Owner:  OwnerRef(p.Namespace, ref),
		Node:   p.Spec.NodeName,
		Since:  since,
		Summary: fmt.Sprintf("pod %s/%s of %s %s has been PreparingNormal for %s", p.Namespace, p.Name, ref.Kind, ref.Name,
			Age(s.Now, since)),
		Evidence: []string{Evidencef("label %s=%s since %s (%s ago, from %s)", kruise.LabelLifecycleState, kruise.StatePreparingNormal,
			since.UTC().Format(time.RFC3339), Age(s.Now, since), sinceSource)},
	}
	if w == nil {
		f.Evidence = append(f.Evidence, Evidencef("%s %s/%s is not in the snapshot (deleted, or outside the scan's selector)", ref.Kind, p.Namespace, ref.Name))
	}
	f.Evidence = append(f.Evidence, env.managerEvidence())
	if l := env.leaderEvidence(); l != "" {
		f.Evidence = append(f.Evidence, l)
	}
	requeue := krRequeueFix(ref.Kind, p.Namespace, ref.Name)

	// 1. Nothing reconciles at all.
	if down, why := env.unavailable(); down {
		f.RootCause = rcControllerUnavailable
		f.Message = "No kruise-manager leader is running, so nothing moves the pod out of PreparingNormal. Bring the manager back."
		f.Evidence = append(f.Evidence, why...)
		return f
	}
	// 2. The workload itself is not reconciled.
	if w != nil {
		if v, ok := frozen[w.UID]; ok {
			wf := expectationsFinding(ExpectationsUnsatisfied().Info(), env, v)
			f.RootCause = rcWorkloadExpectationsBlock
			f.Message = fmt.Sprintf("%s %s/%s is not reconciled (%s finding %s, root cause %s), so nothing refreshes this pod's lifecycle state. Fix the workload first.",
				w.Kind, w.Namespace, w.Name, CheckExpectationsUnsatisfied, wf.ID, wf.RootCause.ID)
			f.Evidence = append(f.Evidence, v.signals...)
			f.Evidence = append(f.Evidence, Evidencef("%s finding %s: %s", CheckExpectationsUnsatisfied, wf.ID, wf.RootCause.ID))
			for _, fx := range wf.Fixes {
				if fx.Action == ActionRestartControllerLeader {
					f.Fixes = append(f.Fixes, fx)
				}
			}
			f.Fixes = append(f.Fixes, requeue)
			return f
		}
	}
	if w == nil {
		f.RootCause = rcPreNormalReconcileMissed
		f.Message = "The pod's workload could not be read, so the hook cannot be checked; a requeue of the workload makes the controller look at the pod again."
		f.Fixes = []report.Fix{requeue}
		return f
	}

	hook := w.Lifecycle.PreNormal
	// 3. The hook's third party has not acted.
	if misses := krHookMisses(hook, &p.ObjectMeta); len(misses) > 0 {
		f.RootCause = rcPreNormalHookPending
		f.Message = fmt.Sprintf("%s %s/%s has a preNormal hook that is not satisfied on this pod; kruise waits for the hook controller by design, and that controller has not acted.",
			w.Kind, w.Namespace, w.Name)
		f.Evidence = append(f.Evidence, misses...)
		return f
	}
	if hook != nil {
		f.Evidence = append(f.Evidence, krHookSatisfied(hook, &p.ObjectMeta)...)
	} else {
		f.Evidence = append(f.Evidence, Evidencef("%s %s/%s has no spec.lifecycle.preNormal hook", w.Kind, w.Namespace, w.Name))
	}
	cloneSet := w.Kind == kruise.KindCloneSet

	// 4. v1.9.0 never refreshes pods of OnDelete CloneSets.
	if cloneSet && w.UpdateType == kruise.UpdateOnDelete {
		if b, ok := env.affected(knowledge.BugOnDeleteRefresh); ok {
			f.RootCause = rcOnDeleteRefreshBug
			f.Message = fmt.Sprintf("kruise-manager %s never refreshes lifecycle states of pods of a CloneSet with updateStrategy.type OnDelete (%s). Switch the CloneSet to another update strategy or run a release with commit 58a5d52fb.",
				env.mgr.Version, b.Affected)
			f.Evidence = append(f.Evidence, Evidencef("CloneSet %s/%s has updateStrategy.type OnDelete", w.Namespace, w.Name),
				Evidencef("kruise-manager %s is in the affected range %s: %s", env.mgr.Version, b.Affected, b.Summary))
			return f
		}
	}
	// 5. From v1.9.0 pods without a preNormal hook wait for scheduling.
	if cloneSet && hook == nil && p.Spec.NodeName == "" {
		if b, ok := env.affected(knowledge.BehaviourPreNormalScheduled); ok {
			f.RootCause = rcPodNotScheduled
			f.Evidence = append(f.Evidence, Evidencef("spec.nodeName is empty; kruise-manager %s (%s): %s", env.mgr.Version, b.Affected, b.Summary))
			reason := "the pod is not bound to a node"
			if cond, ok := krPodCondition(p, corev1.PodScheduled); ok {
				f.Evidence = append(f.Evidence, Evidencef("condition PodScheduled=%s reason %s: %s", cond.Status, cond.Reason, krTruncate(cond.Message, 300)))
				if cond.Reason != "" {
					reason = fmt.Sprintf("the scheduler reports %s: %s", cond.Reason, krTruncate(cond.Message, 200))
				}
			} else {
				f.Evidence = append(f.Evidence, "the pod has no PodScheduled condition: no scheduler has looked at it (spec.schedulerName "+p.Spec.SchedulerName+")")
				reason = "no scheduler has looked at it"
			}
			f.Message = fmt.Sprintf("kruise-manager %s keeps a pod with no preNormal hook in PreparingNormal until it is scheduled, and %s.", env.mgr.Version, reason)
			return f
		}
	}
	// 6. The known event-filter bug: only the hook's finalizers are filtered.
	if cloneSet && hook != nil && len(hook.FinalizersHandler) > 0 {
		if b, ok := env.affected(knowledge.BugPreNormalEventDropped); ok {
			f.RootCause = rcPreNormalEventDropped
			f.Fixes = []report.Fix{requeue}
			f.References = b.Reference
			f.Evidence = append(f.Evidence,
				Evidencef("kruise-manager %s is in the affected range %s of openkruise/kruise#2057", env.mgr.Version, b.Affected),
				env.mgr.Gates.Describe(b.Gate))
			f.Message = fmt.Sprintf("The preNormal hook is satisfied, but kruise-manager %s with %s on ignores the pod event that added the hook's finalizer, so no reconcile moves the pod to Normal. Requeue the CloneSet now; upgrade to %s or turn the gate off to stop it recurring.",
				env.mgr.Version, b.Gate, b.Affected.Fixed)
			return f
		}
	}
	// 7. Nothing known explains it.
	f.RootCause = rcPreNormalReconcileMissed
	f.Fixes = []report.Fix{requeue}
	if b, ok := knowledge.LookupBug(knowledge.BugPreNormalEventDropped); ok && cloneSet {
		switch {
		case !env.versionKnown():
			f.Evidence = append(f.Evidence, "openkruise/kruise#2057 cannot be ruled out: the kruise-manager version is unknown")
		case hook == nil || len(hook.FinalizersHandler) == 0:
			f.Evidence = append(f.Evidence, "openkruise/kruise#2057 does not apply: the preNormal hook has no finalizer")
		default:
			f.Evidence = append(f.Evidence, Evidencef("openkruise/kruise#2057 does not apply: kruise-manager %s (affected %s), %s",
				env.mgr.Version, b.Affected, env.mgr.Gates.Describe(b.Gate)))
		}
	}
	f.Message = "Everything the pod waits for is in place and the manager is up, but no reconcile moved it to Normal. Requeue the workload so the controller reconciles it."
	return f
}
