package kruise

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Labels that steer a CloneSet's scaling (apps/v1alpha1 well_known_labels.go, kruise v1.9.0).
const (
	// LabelSpecifiedDelete on a pod asks its CloneSet to delete it (any value).
	LabelSpecifiedDelete = "apps.kruise.io/specified-delete"
	// LabelScalingExcludePreparingDelete "true" on a CloneSet makes its controller count pods in
	// PreparingDelete as gone when it scales.
	LabelScalingExcludePreparingDelete = "apps.kruise.io/cloneset-scaling-exclude-preparing-delete"
)

// CloneSetScaling is what a CloneSet's controller counts with when it scales, besides replicas
// and partition (calculateDiffsWithExpectation, cloneset_sync_utils.go).
type CloneSetScaling struct {
	// PodsToDelete is spec.scaleStrategy.podsToDelete.
	PodsToDelete []string
	// ScaleMaxUnavailable is spec.scaleStrategy.maxUnavailable (nil: unlimited).
	ScaleMaxUnavailable *intstr.IntOrString
	// MaxSurge and MaxUnavailable are spec.updateStrategy's (nil: 0 and 20%).
	MaxSurge, MaxUnavailable *intstr.IntOrString
	MinReadySeconds          int32
}

type cloneSetScalingSpec struct {
	MinReadySeconds int32 `json:"minReadySeconds"`
	ScaleStrategy   struct {
		PodsToDelete   []string            `json:"podsToDelete"`
		MaxUnavailable *intstr.IntOrString `json:"maxUnavailable"`
	} `json:"scaleStrategy"`
	UpdateStrategy struct {
		MaxSurge       *intstr.IntOrString `json:"maxSurge"`
		MaxUnavailable *intstr.IntOrString `json:"maxUnavailable"`
	} `json:"updateStrategy"`
}

// cloneSetScaling decodes a CloneSet's scaling fields; a CloneSet whose fields do not decode
// keeps the defaults.
func cloneSetScaling(u *unstructured.Unstructured) CloneSetScaling {
	o, err := decode[cloneSetScalingSpec](u)
	if err != nil {
		return CloneSetScaling{}
	}
	sp := o.Spec
	return CloneSetScaling{PodsToDelete: sp.ScaleStrategy.PodsToDelete, ScaleMaxUnavailable: sp.ScaleStrategy.MaxUnavailable,
		MaxSurge: sp.UpdateStrategy.MaxSurge, MaxUnavailable: sp.UpdateStrategy.MaxUnavailable, MinReadySeconds: sp.MinReadySeconds}
}
