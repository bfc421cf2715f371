package kruiselifecycle

import (
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// Root cause shared by both OpenKruise checks.
const RootCauseControllerUnavailable = "controller-unavailable"

// Root causes of stuck-preparing-normal (contract.md).
const (
	RootCausePreNormalHookPending      = "prenormal-hook-pending"
	RootCausePreNormalEventDropped     = "prenormal-event-dropped"
	RootCausePreNormalReconcileMissed  = "prenormal-reconcile-missed"
	RootCausePodNotScheduled           = "pod-not-scheduled"
	RootCauseOnDeleteRefreshBug        = "ondelete-refresh-bug"
	RootCauseWorkloadExpectationsBlock = "workload-expectations-blocked"
)

// Root causes of expectations-unsatisfied (contract.md).
const (
	RootCauseScaleExpectationsLeaked  = "scale-expectations-leaked"
	RootCauseUpdateExpectationsLeaked = "update-expectations-leaked"
	RootCausePodCreationFailing       = "pod-creation-failing"
	RootCauseStalledUnknown           = "stalled-unknown"
)

const (
	refLifecycleDocs    = "https://openkruise.io/docs/user-manuals/cloneset"
	refIsPodAllHooked   = "openkruise/kruise pkg/util/lifecycle/lifecycle_utils.go (IsPodAllHooked)"
	refRefreshPodState  = "openkruise/kruise pkg/controller/cloneset/sync/cloneset_update.go (refreshPodState)"
	refEventFilter      = "openkruise/kruise pkg/controller/cloneset/core/cloneset_core.go (lifecycleFinalizerChanged)"
	refCloneSetOnDelete = "openkruise/kruise#2224"
)

const refCloneSetController = "openkruise/kruise pkg/controller/cloneset/cloneset_controller.go (doReconcile)"

// preparingNormalRootCauses documents the root causes of stuck-preparing-normal.
func preparingNormalRootCauses() []checks.RootCause {
	return []checks.RootCause{
		{ID: RootCauseControllerUnavailable, Title: "kruise-manager is not running a leader", Severity: report.SeverityError,
			Description: "The kruise-manager Deployment has no available replica, or its leader Lease has not been " +
				"renewed within its lease duration, so nothing moves pods out of PreparingNormal. Bring the manager " +
				"back; pods whose hook is satisfied move to Normal on its first reconcile.",
			References: []string{"https://openkruise.io/docs/installation"}},
		{ID: RootCauseWorkloadExpectationsBlock, Title: "the owning workload is not reconciled (expectations)", Severity: report.SeverityError,
			Description: "The pod's CloneSet has an expectations-unsatisfied finding in the same scan: the controller " +
				"skips every reconcile of the workload, so it never refreshes this pod's lifecycle state. Fix the " +
				"workload (see its expectations-unsatisfied finding); restarting the kruise-manager leader clears a " +
				"leaked expectation.",
			References: []string{"openkruise/kruise#1765", refCloneSetController},
			Actions:    []string{checks.ActionRestartControllerLeader, checks.ActionRequeueWorkload}},
		{ID: RootCausePreNormalHookPending, Title: "the preNormal hook is not satisfied yet", Severity: report.SeverityWarning,
			Description: "The workload's spec.lifecycle.preNormal lists finalizers and/or labels that a third-party " +
				"hook controller (service registration, warm-up, ...) must put on the pod, and some are missing or a " +
				"label has another value. The evidence names each one and, from managedFields, which field manager " +
				"last set the pod's finalizers or that label. Look at that hook controller: kruise is waiting for it " +
				"by design.",
			References: []string{refLifecycleDocs, refIsPodAllHooked}},
		{ID: RootCauseOnDeleteRefreshBug, Title: "kruise v1.9 does not refresh pods of OnDelete CloneSets", Severity: report.SeverityError,
			Description: "In kruise-manager v1.9 (OnDelete for CloneSets arrived in v1.9.0, openkruise/kruise#2224) the CloneSet update step returns early for updateStrategy.type " +
				"OnDelete, before it refreshes pod lifecycle states: pods never leave PreparingNormal and never get " +
				"the InPlaceUpdateReady condition. Fixed on the master branch by commit 58a5d52fb, which no release up to v1.9.x contains. " +
				"Switch the CloneSet to another update strategy or run a release with the fix.",
			References: []string{refCloneSetOnDelete, "openkruise/kruise commit 58a5d52fb", refRefreshPodState}},
		{ID: RootCausePodNotScheduled, Title: "the pod is not scheduled (kruise >= v1.9.0 waits for it)", Severity: report.SeverityWarning,
			Description: "From v1.9.0 (openkruise/kruise#2087) a CloneSet pod with no preNormal hook stays PreparingNormal " +
				"until it is bound to a node. The pod has no spec.nodeName; the PodScheduled condition says why the " +
				"scheduler has not placed it (resources, affinity, taints). Fix the scheduling problem.",
			References: []string{"openkruise/kruise#2087", refRefreshPodState}},
		{ID: RootCausePreNormalEventDropped, Title: "kruise dropped the hook finalizer's event (CloneSetEventHandlerOptimization)", Severity: report.SeverityError,
			Description: "With the alpha feature gate CloneSetEventHandlerOptimization on (explicitly or through " +
				"AllAlpha=true), kruise-manager v1.4.0 through v1.8.x filters pod update events and ignores changes of " +
				"preNormal hook finalizers, so adding the hook's finalizer triggers no reconcile and the pod stays " +
				"PreparingNormal until something else requeues the CloneSet (openkruise/kruise#2057, fixed in v1.9.0 " +
				"by #2060). Label hooks are not affected. Requeue the CloneSet now; upgrade to v1.9.0 or turn the gate " +
				"off for good.",
			References: []string{"openkruise/kruise#2057", "openkruise/kruise#2060", refEventFilter},
			Actions:    []string{checks.ActionRequeueWorkload}},
		{ID: RootCausePreNormalReconcileMissed, Title: "the hook is satisfied but no reconcile moved the pod", Severity: report.SeverityError,
			Description: "Everything the pod waits for is in place, the manager is up and no known bug of the running " +
				"version explains it: the reconcile that would move the pod to Normal never came (a lost event, or a " +
				"controller restart at the wrong moment). Requeueing the workload makes the controller reconcile it.",
			References: []string{refRefreshPodState, refIsPodAllHooked},
			Actions:    []string{checks.ActionRequeueWorkload}},
	}
}

// expectationsRootCauses documents the root causes of expectations-unsatisfied.
func expectationsRootCauses() []checks.RootCause {
	return []checks.RootCause{
		{ID: RootCauseControllerUnavailable, Title: "kruise-manager is not running a leader", Severity: report.SeverityError,
			Description: "The kruise-manager Deployment has no available replica, or its leader Lease has not been " +
				"renewed within its lease duration, so no controller reconciles OpenKruise workloads. Bring the " +
				"manager back (its pods' events and logs say why it is down); workloads recover on their own once a " +
				"leader runs.",
			References: []string{"https://openkruise.io/docs/installation"}},
		{ID: RootCausePodCreationFailing, Title: "the controller's pod creations are rejected", Severity: report.SeverityError,
			Description: "The controller reconciles the CloneSet but every pod it creates is rejected: FailedCreate " +
				"Warning events (or a FailedScale condition) carry the API's answer, such as a ResourceQuota, a " +
				"LimitRange, an admission webhook or PodSecurity. Fix what the message names; the controller retries " +
				"by itself.",
			References: []string{"openkruise/kruise pkg/controller/cloneset/sync/cloneset_scale.go"}},
		{ID: RootCauseScaleExpectationsLeaked, Title: "a scale expectation leaked in the leader's memory", Severity: report.SeverityError,
			Description: "The leader waits for a pod create or delete event that never arrives (lost while the watch " +
				"re-listed, openkruise/kruise#1765). Past --expectation-timeout it logs \"Expectation unsatisfied " +
				"overtime\" with the dirty pods and returns without requeue, on every later event. Before v1.8.0, " +
				"and from v1.8.0 unless the ForceDeleteTimeoutExpectationGate gate is on (openkruise/kruise#1829), " +
				"only a new leader clears it: expectations live only in the leader's memory. Restart the leader; a " +
				"requeue alone does not help because the reconcile is skipped before it starts. Without the leader's " +
				"log the leak is inferred from the frozen status, and the finding says so.",
			References: []string{"openkruise/kruise#1765", "openkruise/kruise#1829", refCloneSetController},
			Actions:    []string{checks.ActionRestartControllerLeader, checks.ActionRequeueWorkload}},
		{ID: RootCauseUpdateExpectationsLeaked, Title: "an update (resourceVersion) expectation leaked in the leader's memory", Severity: report.SeverityError,
			Description: "The leader waits to observe a newer resourceVersion of a pod it updated. Past " +
				"--expectation-timeout it logs \"Expectation unsatisfied overtime for CloneSet, wait for pod " +
				"updating timeout\" and skips the reconcile. Restart the leader to clear its in-memory expectations.",
			References: []string{"openkruise/kruise#1829", refCloneSetController},
			Actions:    []string{checks.ActionRestartControllerLeader, checks.ActionRequeueWorkload}},
		{ID: RootCauseStalledUnknown, Title: "the CloneSet is frozen for a reason the scan could not see", Severity: report.SeverityWarning,
			Description: "The status is frozen past the threshold, the manager is up, no pod creation failed and the " +
				"leader's log (read within its bounds) has no expectation line for this CloneSet. A requeue makes " +
				"the controller reconcile it: it either catches up or logs the expectation it waits for, which the " +
				"next scan names. Restarting the leader clears every in-memory expectation.",
			References: []string{refCloneSetController},
			Actions:    []string{checks.ActionRequeueWorkload, checks.ActionRestartControllerLeader}},
	}
}
