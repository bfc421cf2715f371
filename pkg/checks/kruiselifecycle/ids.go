package kruiselifecycle

import (
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// StuckPreparingNormalID is the check's ID.
const StuckPreparingNormalID = "stuck-preparing-normal"

// ExpectationsUnsatisfiedID is the check's ID.
const ExpectationsUnsatisfiedID = "expectations-unsatisfied"

// Root cause shared by both OpenKruise checks.
const RootCauseControllerUnavailable = "controller-unavailable"

// Root causes of stuck-preparing-normal (docs/contract.md).
const (
	RootCausePreNormalHookPending      = "prenormal-hook-pending"
	RootCausePreNormalEventDropped     = "prenormal-event-dropped"
	RootCausePreNormalReconcileMissed  = "prenormal-reconcile-missed"
	RootCausePodNotScheduled           = "pod-not-scheduled"
	RootCauseOnDeleteRefreshBug        = "ondelete-refresh-bug"
	RootCauseWorkloadExpectationsBlock = "workload-expectations-blocked"
)

// Root causes of expectations-unsatisfied (docs/contract.md).
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

// preparingNormalRootCauses are the root causes stuck-preparing-normal reports, with the severity
// of their findings and the fixes they offer; preparingnormal.md documents them.
func preparingNormalRootCauses() []checks.RootCause {
	return []checks.RootCause{
		{ID: RootCauseControllerUnavailable, Severity: report.SeverityError},
		{ID: RootCauseAdmissionWebhookUnavailable, Severity: report.SeverityError},
		{ID: RootCauseWorkloadExpectationsBlock, Severity: report.SeverityError, Actions: []string{checks.ActionRestartControllerLeader, checks.ActionRequeueWorkload}},
		{ID: RootCausePreNormalHookPending, Severity: report.SeverityWarning},
		{ID: RootCauseOnDeleteRefreshBug, Severity: report.SeverityError},
		{ID: RootCausePodNotScheduled, Severity: report.SeverityWarning},
		{ID: RootCausePreNormalEventDropped, Severity: report.SeverityError, Actions: []string{checks.ActionRequeueWorkload}},
		{ID: RootCausePreNormalReconcileMissed, Severity: report.SeverityError, Actions: []string{checks.ActionRequeueWorkload}},
	}
}

// expectationsRootCauses are the root causes expectations-unsatisfied reports, with the severity
// of their findings and the fixes they offer; expectations.md documents them.
func expectationsRootCauses() []checks.RootCause {
	return []checks.RootCause{
		{ID: RootCauseControllerUnavailable, Severity: report.SeverityError},
		{ID: RootCauseAdmissionWebhookUnavailable, Severity: report.SeverityError},
		{ID: RootCausePodCreationFailing, Severity: report.SeverityError},
		{ID: RootCauseScaleExpectationsLeaked, Severity: report.SeverityError, Actions: []string{checks.ActionRestartControllerLeader, checks.ActionRequeueWorkload}},
		{ID: RootCauseUpdateExpectationsLeaked, Severity: report.SeverityError, Actions: []string{checks.ActionRestartControllerLeader, checks.ActionRequeueWorkload}},
		{ID: RootCauseStalledUnknown, Severity: report.SeverityWarning, Actions: []string{checks.ActionRequeueWorkload, checks.ActionRestartControllerLeader}},
	}
}
