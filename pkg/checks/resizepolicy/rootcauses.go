package resizepolicy

import (
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// Root causes of resize-policy-drift (contract.md).
const (
	RootCauseKruiseDropsResizePolicy  = "kruise-drops-resize-policy"
	RootCauseResizePolicyImmutable    = "resize-policy-immutable"
	RootCauseSidecarResizePolicyDrift = "sidecar-resize-policy-drift"
	RootCauseBenignDefaulting         = "benign-defaulting"
)

// rootCauses documents each root cause for `checks`, `explain` and the findings.
func rootCauses() []checks.RootCause {
	return []checks.RootCause{
		{
			ID: RootCauseKruiseDropsResizePolicy, Title: "kruise-manager older than v1.7.0 drops resizePolicy", Severity: report.SeverityError,
			Description: "kruise-manager before v1.7.0 is built against Kubernetes API 0.26, which has no containers[].resizePolicy. " +
				"Its in-place update sends the whole pod back without the field, and the apiserver rejects the update " +
				"(`pod updates may not change fields other than ...`): the pod never reaches the new revision and kruise " +
				"records FailedUpdatePodInPlace events, leaving InPlaceUpdateReady=False. A v1.27-v1.32 apiserver with " +
				"InPlacePodVerticalScaling re-defaults NotRequired for cpu/memory on containers with requests, so only " +
				"policies that differ from that default are rejected there; from v1.33 every pod carrying resizePolicy is. " +
				"Evicting the pod lets the workload recreate it on the new revision (kruise < v1.7.0 creates pods without " +
				"resizePolicy); upgrade kruise to >= v1.7.0 so later in-place updates keep the field.",
			References: []string{"openkruise/kruise#1683", "openkruise/kruise#1598"},
			Actions:    []string{checks.ActionEvictPod},
		},
		{
			ID: RootCauseResizePolicyImmutable, Title: "the template's resizePolicy cannot reach the pod in place", Severity: report.SeverityWarning,
			Description: "The workload template asks for a different resizePolicy than the pod has. A pod update may not change " +
				"containers[].resizePolicy (immutable from v1.33; v1.27-v1.32 also reject it as a change to a field other than " +
				"the image), so no in-place update will give the pod the template's policy: it keeps resizing its containers " +
				"the old way. Evicting the pod lets the workload recreate it with the template's policy.",
			References: []string{"kubernetes/kubernetes#128920"},
			Actions:    []string{checks.ActionEvictPod},
		},
		{
			ID: RootCauseSidecarResizePolicyDrift, Title: "an injected sidecar's resizePolicy differs from its SidecarSet", Severity: report.SeverityWarning,
			Description: "A container injected by a SidecarSet (env IS_INJECTED=true, or named in the pod annotation " +
				"kruise.io/sidecarset-injected-list) has a different resizePolicy than the SidecarSet now declares. Neither the " +
				"workload's nor the SidecarSet's in-place update can change resizePolicy on an existing pod; a recreated pod " +
				"is injected with the SidecarSet's current containers.",
			References: []string{"openkruise/kruise#1683"},
			Actions:    []string{checks.ActionEvictPod},
		},
		{
			ID: RootCauseBenignDefaulting, Title: "resizePolicy defaulted by the apiserver (harmless)", Severity: report.SeverityInfo,
			Description: "With InPlacePodVerticalScaling on, v1.27-v1.32 apiservers add resizePolicy NotRequired for cpu and " +
				"memory to pod containers that request them, but not to workload templates, so pods and template look " +
				"different while they mean the same. kruise >= v1.7.0 keeps the field on in-place updates, and these " +
				"apiservers re-default what an older kruise drops, so in-place updates work. Nothing to fix; note that " +
				"from v1.33 the apiserver no longer re-defaults, so kruise must be >= v1.7.0 before the apiserver is upgraded.",
			References: []string{"kubernetes/kubernetes#128920"},
		},
	}
}
