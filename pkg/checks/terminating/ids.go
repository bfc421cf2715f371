package terminating

import (
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// ID is the check that finds pods, namespaces and other objects whose deletion does not finish.
const ID = "stuck-terminating"

// Root causes of stuck-terminating (docs/contract.md).
const (
	RootCauseNodeMissing               = "node-missing"
	RootCauseNodeNotReady              = "node-not-ready"
	RootCauseKwokStageNotRun           = "kwok-stage-not-run"
	RootCauseKruisePreDeleteHook       = "kruise-predelete-hook-pending"
	RootCauseOwnerPaused               = "owner-paused"
	RootCauseFinalizerReaddRace        = "finalizer-readd-race"
	RootCauseFinalizerOwnerMissing     = "finalizer-owner-missing"
	RootCauseFinalizerOwnerNotActing   = "finalizer-owner-not-acting"
	RootCauseKubeletKillFailing        = "kubelet-kill-failing"
	RootCauseNamespaceDiscoveryFailed  = "namespace-discovery-failed"
	RootCauseNamespaceContentRemaining = "namespace-content-remaining"
	RootCauseProtectedResourceInUse    = "protected-resource-in-use"
	RootCauseDependentsRemaining       = "dependents-remaining"
	RootCauseKruiseHookBypassed        = "kruise-hook-bypassed"
	// RootCauseAdmissionWebhookUnavailable: a webhook that fails closed rejects the update that
	// removes the finalizer.
	RootCauseAdmissionWebhookUnavailable = "admission-webhook-unavailable"
	// RootCauseConversionWebhookUnavailable: a namespace's content cannot be read or deleted
	// because its CRD's conversion webhook cannot answer.
	RootCauseConversionWebhookUnavailable = "conversion-webhook-unavailable"
)

// rootCauses are the root causes the check reports, with the severity of their findings and the
// fixes they offer; terminating.md documents them.
func rootCauses() []checks.RootCause {
	return []checks.RootCause{
		{ID: RootCauseNodeMissing, Severity: report.SeverityError, NodeProblem: true, Actions: []string{checks.ActionForceDelete, checks.ActionRemoveFinalizer}},
		{ID: RootCauseNodeNotReady, Severity: report.SeverityError, NodeProblem: true, Actions: []string{checks.ActionForceDelete}},
		{ID: RootCauseKwokStageNotRun, Severity: report.SeverityError, Actions: []string{checks.ActionRemoveFinalizer}},
		{ID: RootCauseKruisePreDeleteHook, Severity: report.SeverityWarning},
		{ID: RootCauseKruiseHookBypassed, Severity: report.SeverityWarning, Actions: []string{checks.ActionRemoveFinalizer}},
		{ID: RootCauseOwnerPaused, Severity: report.SeverityWarning},
		{ID: RootCauseFinalizerReaddRace, Severity: report.SeverityError, Actions: []string{checks.ActionRemoveFinalizer}},
		{ID: RootCauseProtectedResourceInUse, Severity: report.SeverityWarning, ChainsToRoot: true},
		{ID: RootCauseDependentsRemaining, Severity: report.SeverityWarning, ChainsToRoot: true},
		{ID: RootCauseAdmissionWebhookUnavailable, Severity: report.SeverityError},
		{ID: RootCauseFinalizerOwnerMissing, Severity: report.SeverityError, Actions: []string{checks.ActionRemoveFinalizer}},
		{ID: RootCauseFinalizerOwnerNotActing, Severity: report.SeverityWarning},
		{ID: RootCauseKubeletKillFailing, Severity: report.SeverityError},
		{ID: RootCauseNamespaceDiscoveryFailed, Severity: report.SeverityError},
		{ID: RootCauseConversionWebhookUnavailable, Severity: report.SeverityError},
		{ID: RootCauseNamespaceContentRemaining, Severity: report.SeverityWarning, ChainsToRoot: true},
	}
}
