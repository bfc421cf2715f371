package rollout

import (
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// ID is the check that finds rollouts making no progress.
const ID = "rollout-stalled"

// Root causes of rollout-stalled. Those a workload's pods show are judged in the order of
// podCauses: the first that holds for one of its pods names the finding.
const (
	RootCauseInPlaceHookPending      = "inplace-update-hook-pending"
	RootCausePodsUnschedulable       = "pods-unschedulable"
	RootCauseImagePullFailing        = "image-pull-failing"
	RootCauseInPlaceResizePending    = "inplace-resize-pending"
	RootCauseInPlaceDaemonMissing    = "inplace-daemon-missing"
	RootCauseInPlaceUpdateIncomplete = "inplace-update-incomplete"
	RootCauseCrashLooping            = "crash-looping"
	RootCauseBlockedByStuckPod       = "blocked-by-stuck-pod"
	RootCausePodsNotReady            = "pods-not-ready"
	RootCauseProgressDeadline        = "progress-deadline-exceeded"
	// Core workloads (apps/v1): creates the apiserver refuses, a StatefulSet held by a pod on a
	// revision it no longer rolls to, a DaemonSet whose unavailable budget dead nodes use up.
	RootCausePodCreationRefused        = "pod-creation-refused"
	RootCauseStatefulSetBrokenPod      = "statefulset-broken-pod"
	RootCauseDaemonSetNodesUnavailable = "daemonset-nodes-unavailable"
	// RootCauseAdmissionWebhookUnavailable: the creates are refused because a webhook that fails
	// closed cannot be called; stuck-terminating names the same cause of a finalizer removal.
	RootCauseAdmissionWebhookUnavailable = "admission-webhook-unavailable"
	RootCauseSidecarSetInFlight          = "sidecarset-update-in-flight"
	RootCauseSidecarSetStalled           = "sidecarset-update-stalled"
)

// rootCauses are the root causes the check reports, with the severity of their findings and the
// fixes they offer; rollout.md documents them. Only two have a write that helps: the SidecarSet
// in-flight leak, and a StatefulSet held by a pod on a revision it no longer rolls to; every
// other cause needs a person (a node, an image, a hook owner, a template).
func rootCauses() []checks.RootCause {
	return []checks.RootCause{
		{ID: RootCauseInPlaceHookPending, Severity: report.SeverityError},
		{ID: RootCausePodsUnschedulable, Severity: report.SeverityError},
		{ID: RootCauseImagePullFailing, Severity: report.SeverityError},
		{ID: RootCauseInPlaceResizePending, Severity: report.SeverityError},
		{ID: RootCauseInPlaceDaemonMissing, Severity: report.SeverityError},
		{ID: RootCauseInPlaceUpdateIncomplete, Severity: report.SeverityError},
		{ID: RootCauseCrashLooping, Severity: report.SeverityError},
		{ID: RootCauseBlockedByStuckPod, Severity: report.SeverityWarning},
		{ID: RootCausePodsNotReady, Severity: report.SeverityWarning},
		{ID: RootCauseProgressDeadline, Severity: report.SeverityWarning},
		{ID: RootCausePodCreationRefused, Severity: report.SeverityError},
		{ID: RootCauseAdmissionWebhookUnavailable, Severity: report.SeverityError},
		{ID: RootCauseStatefulSetBrokenPod, Severity: report.SeverityError, Actions: []string{checks.ActionDeletePod}},
		{ID: RootCauseDaemonSetNodesUnavailable, Severity: report.SeverityError},
		{ID: RootCauseSidecarSetInFlight, Severity: report.SeverityError, Actions: []string{checks.ActionRestartControllerLeader}},
		{ID: RootCauseSidecarSetStalled, Severity: report.SeverityWarning},
	}
}
