package resizepolicy

import (
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// ID is the check that compares in-place workloads' pods with their templates.
const ID = "resize-policy-drift"

// Root causes of resize-policy-drift (docs/contract.md).
const (
	RootCauseKruiseDropsResizePolicy  = "kruise-drops-resize-policy"
	RootCauseResizePolicyImmutable    = "resize-policy-immutable"
	RootCauseSidecarResizePolicyDrift = "sidecar-resize-policy-drift"
	RootCauseBenignDefaulting         = "benign-defaulting"
)

// rootCauses are the root causes the check reports, with the severity of their findings and the
// fixes they offer; resizepolicy.md documents them.
func rootCauses() []checks.RootCause {
	return []checks.RootCause{
		{ID: RootCauseKruiseDropsResizePolicy, Severity: report.SeverityError, Actions: []string{checks.ActionEvictPod}},
		{ID: RootCauseResizePolicyImmutable, Severity: report.SeverityWarning, Actions: []string{checks.ActionEvictPod}},
		{ID: RootCauseSidecarResizePolicyDrift, Severity: report.SeverityWarning, Actions: []string{checks.ActionEvictPod}},
		{ID: RootCauseBenignDefaulting, Severity: report.SeverityInfo},
	}
}
