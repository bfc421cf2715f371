package kruisemanager

import (
	"encoding/json"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
)

// inPlaceSpec is what an in-place update changes in a pod: the part of UpdateSpec
// (pkg/util/inplaceupdate/inplace_update.go, kruise v1.9.0) the stand-in models.
type inPlaceSpec struct {
	images map[string]string
	// resources holds, per container, the cpu and memory values the template changes.
	resources map[string]corev1.ResourceRequirements
	// labels and annotations are the template's metadata the pod lacks (MetaDataPatch).
	labels, annotations map[string]string
	// envFromMetadata: a changed label or annotation feeds a container's env through a fieldRef
	// (ContainerRefMetadata), which only kruise-daemon can apply, by restarting the container.
	envFromMetadata bool
}

// verticalOnly is UpdateSpec.VerticalUpdateOnly.
func (s *inPlaceSpec) verticalOnly() bool {
	return len(s.resources) > 0 && len(s.images) == 0 && !s.envFromMetadata
}

// changedContainers are the containers the update touches, sorted (a ContainerBatchesRecord).
func (s *inPlaceSpec) changedContainers() []string {
	set := map[string]bool{}
	for c := range s.images {
		set[c] = true
	}
	for c := range s.resources {
		set[c] = true
	}
	out := make([]string, 0, len(set))
	for c := range set {
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}

// calculateInPlaceSpec is defaultCalculateInPlaceUpdateSpec (inplace_update_defaults.go, v1.9.0)
// with the pod standing for the old revision (the stand-in keeps no ControllerRevisions): the
// template may change container images; cpu and memory values that both sides set, when vertical
// (InPlaceWorkloadVerticalScaling) is on and the pod's QoS class stays (UpdateInplaceUpdateMetadata
// and IsPodQoSChanged, inplace_update_vertical.go); and labels and annotations, those a
// container's env reads through a fieldRef marking envFromMetadata (InPlaceUpdateEnvFromMetadata,
// on by default). Anything else cannot be made in place: ok is false. Labels or annotations the
// template dropped are not removed from the pod: which of the pod's came from the template is
// not known here.
func calculateInPlaceSpec(pod *corev1.Pod, tpl *corev1.PodTemplateSpec, vertical bool) (*inPlaceSpec, bool) {
	if len(pod.Spec.Containers) != len(tpl.Spec.Containers) {
		return nil, false
	}
	s := &inPlaceSpec{images: map[string]string{}, resources: map[string]corev1.ResourceRequirements{},
		labels: map[string]string{}, annotations: map[string]string{}}
	for i, c := range pod.Spec.Containers {
		t := tpl.Spec.Containers[i]
		if !sameBesidesImageAndResources(c, t, vertical) {
			return nil, false
		}
		if t.Image != c.Image {
			s.images[c.Name] = t.Image
		}
		if !vertical {
			continue
		}
		changed, ok := resizeOf(c.Resources, t.Resources)
		if !ok {
			return nil, false
		}
		if changed != nil {
			s.resources[c.Name] = *changed
		}
	}
	if len(s.resources) > 0 && qosClass(pod.Spec.Containers) != qosClass(tpl.Spec.Containers) {
		return nil, false
	}
	for k, v := range tpl.Labels {
		if pod.Labels[k] != v {
			s.labels[k] = v
			s.envFromMetadata = s.envFromMetadata || readByEnv(tpl.Spec.Containers, "metadata.labels", k)
		}
	}
	for k, v := range tpl.Annotations {
		if pod.Annotations[k] != v {
			s.annotations[k] = v
			s.envFromMetadata = s.envFromMetadata || readByEnv(tpl.Spec.Containers, "metadata.annotations", k)
		}
	}
	return s, true
}

// sameBesidesImageAndResources lays the template's container over the pod's, image (and, when
// vertical, resources) aside: what the apiserver defaulted on the pod stays, anything else the
// template changes shows.
func sameBesidesImageAndResources(pod, tpl corev1.Container, vertical bool) bool {
	want := tpl.DeepCopy()
	want.Image = ""
	if vertical {
		want.Resources = corev1.ResourceRequirements{}
	}
	raw, err := json.Marshal(want)
	if err != nil {
		return false
	}
	merged := pod.DeepCopy()
	return json.Unmarshal(raw, merged) == nil && equality.Semantic.DeepEqual(*merged, pod)
}

// resizeOf returns the cpu and memory values tpl changes in the pod's resources, nil when none.
// Only replacements are in place (UpdateInplaceUpdateMetadata): a value added or removed, another
// resource, or claims changed is not.
func resizeOf(pod, tpl corev1.ResourceRequirements) (*corev1.ResourceRequirements, bool) {
	tpl = withDefaultRequests(tpl)
	if !equality.Semantic.DeepEqual(pod.Claims, tpl.Claims) {
		return nil, false
	}
	limits, ok := replaced(pod.Limits, tpl.Limits)
	if !ok {
		return nil, false
	}
	requests, ok := replaced(pod.Requests, tpl.Requests)
	if !ok {
		return nil, false
	}
	if len(limits) == 0 && len(requests) == 0 {
		return nil, true
	}
	return &corev1.ResourceRequirements{Limits: limits, Requests: requests}, true
}

func replaced(pod, tpl corev1.ResourceList) (corev1.ResourceList, bool) {
	if len(pod) != len(tpl) {
		return nil, false
	}
	out := corev1.ResourceList{}
	for name, q := range tpl {
		old, ok := pod[name]
		if !ok {
			return nil, false
		}
		if old.Cmp(q) == 0 {
			continue
		}
		if name != corev1.ResourceCPU && name != corev1.ResourceMemory {
			return nil, false
		}
		out[name] = q
	}
	return out, true
}

// withDefaultRequests sets the requests the apiserver defaults on a pod: a limit without a request.
func withDefaultRequests(r corev1.ResourceRequirements) corev1.ResourceRequirements {
	r = *r.DeepCopy()
	for name, q := range r.Limits {
		if _, ok := r.Requests[name]; !ok {
			if r.Requests == nil {
				r.Requests = corev1.ResourceList{}
			}
			r.Requests[name] = q
		}
	}
	return r
}

// qosClass is the pod QoS class (GetPodQOS, Kubernetes' qos helper) of containers, from their cpu
// and memory: BestEffort without any, Guaranteed when every container limits both and requests
// what it limits, else Burstable.
func qosClass(containers []corev1.Container) corev1.PodQOSClass {
	requests, limits := corev1.ResourceList{}, corev1.ResourceList{}
	guaranteed := true
	add := func(into corev1.ResourceList, name corev1.ResourceName, q resource.Quantity) {
		sum := into[name]
		sum.Add(q)
		into[name] = sum
	}
	for _, c := range containers {
		r := withDefaultRequests(c.Resources)
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if q, ok := r.Requests[name]; ok && !q.IsZero() {
				add(requests, name, q)
			}
			q, ok := r.Limits[name]
			if ok && !q.IsZero() {
				add(limits, name, q)
			} else {
				guaranteed = false
			}
		}
	}
	switch {
	case len(requests) == 0 && len(limits) == 0:
		return corev1.PodQOSBestEffort
	case guaranteed && equality.Semantic.DeepEqual(requests, limits):
		return corev1.PodQOSGuaranteed
	}
	return corev1.PodQOSBurstable
}

// readByEnv is IsContainerReferenceToMeta (pkg/util/containermeta/env_hash.go, v1.9.0): a
// container's env takes path['key'] through a fieldRef.
func readByEnv(containers []corev1.Container, path, key string) bool {
	for _, c := range containers {
		for _, e := range c.Env {
			if e.Value != "" || e.ValueFrom == nil || e.ValueFrom.FieldRef == nil || e.Name == "SIDECARSET_VERSION" || e.Name == "SIDECARSET_VERSION_ALT" {
				continue
			}
			if e.ValueFrom.FieldRef.FieldPath == path+"['"+key+"']" {
				return true
			}
		}
	}
	return false
}

// needsUnready is defaultCheckPodNeedsBeUnready (inplace_update_defaults.go, v1.9.0): a pod with
// the InPlaceUpdateReady gate is marked not ready by any in-place update, except one that only
// resizes and whose changed resources' resizePolicy restarts no container.
func needsUnready(pod *corev1.Pod, s *inPlaceSpec, vertical bool) bool {
	gated := false
	for _, g := range pod.Spec.ReadinessGates {
		gated = gated || g.ConditionType == kruise.ConditionInPlaceReady
	}
	if !gated {
		return false
	}
	if !vertical || !s.verticalOnly() {
		return true
	}
	for _, c := range pod.Spec.Containers {
		changed, ok := s.resources[c.Name]
		if !ok {
			continue
		}
		for _, p := range c.ResizePolicy {
			_, inLimits := changed.Limits[p.ResourceName]
			_, inRequests := changed.Requests[p.ResourceName]
			if p.RestartPolicy == corev1.RestartContainer && (inLimits || inRequests) {
				return true
			}
		}
	}
	return false
}
