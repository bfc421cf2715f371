package kruisemanager

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
)

// hookedAny is lifecycle.IsPodHooked (pkg/util/lifecycle/lifecycle_utils.go, v1.9.0): any of the
// hook's finalizers on the pod, or any of its labels with its value.
func hookedAny(h *kruise.LifecycleHook, pod *corev1.Pod) bool {
	if h == nil {
		return false
	}
	for _, f := range h.FinalizersHandler {
		if hasString(pod.Finalizers, f) {
			return true
		}
	}
	for k, v := range h.LabelsHandler {
		if pod.Labels[k] == v {
			return true
		}
	}
	return false
}

// updateInPlace is updatePod's in-place branch (pkg/controller/cloneset/sync/cloneset_update.go,
// v1.9.0) with realControl.Update (pkg/util/inplaceupdate/inplace_update.go): a pod an
// inPlaceUpdate hook is on is moved to PreparingUpdate and waits there while the hook stays; then
// InPlaceUpdateReady is set False (reason StartInPlaceUpdate) and Ready with it
// (updateCondition, SetPodReadyCondition), unless the update only resizes without restarting
// (needsUnready); a resize is asked of the kubelet through the pod's resize subresource, as
// updatePodInPlace does on a 1.32+ apiserver (ShouldUpdateResourceByResize; GenerateResourcePatch,
// inplace_update_vertical.go); and one update of the pod writes the update revision, lifecycle
// state Updating, the template's labels and annotations (MetaDataPatch), the
// apps.kruise.io/inplace-update-state annotation (defaultPatchUpdateSpecToPod: each changed
// container's last imageID, what the update changes, its batch) and the new images.
// The kubelet then restarts or resizes the containers, and kruise-daemon restarts those whose env
// reads changed metadata; until their status shows it (defaultCheckContainersInPlaceUpdateCompleted)
// the update is not complete, and the stand-in, which plays neither, never marks it complete.
func (p *leaderProcess) updateInPlace(ctx context.Context, w *kruise.Workload, pod *corev1.Pod, revision string) error {
	spec, ok := calculateInPlaceSpec(pod, &w.Template, p.m.verticalScaling)
	if !ok {
		return nil
	}
	hook := w.Lifecycle.InPlaceUpdate
	switch pod.Labels[kruise.LabelLifecycleState] {
	case "", kruise.StatePreparingNormal, kruise.StateNormal:
		if hookedAny(hook, pod) {
			_, err := p.setLifecycleState(ctx, pod, kruise.StatePreparingUpdate)
			return err
		}
	case kruise.StatePreparingUpdate:
		if hookedAny(hook, pod) {
			return nil
		}
	case kruise.StateUpdating:
	default:
		return nil
	}
	if needsUnready(pod, spec, p.m.verticalScaling) {
		if err := p.setConditions(ctx, pod, unreadyForInPlace(pod)...); err != nil {
			return err
		}
	}
	now := time.Now().UTC().Format(time.RFC3339)
	last := map[string]any{}
	var containers []any
	for _, c := range pod.Spec.Containers {
		image, ok := spec.images[c.Name]
		if !ok {
			continue
		}
		containers = append(containers, map[string]any{"name": c.Name, "image": image})
		for _, cs := range pod.Status.ContainerStatuses {
			if cs.Name == c.Name {
				last[c.Name] = map[string]any{"imageID": cs.ImageID}
			}
		}
	}
	state, err := json.Marshal(map[string]any{"revision": revision, "updateTimestamp": now, "lastContainerStatuses": last,
		"updateEnvFromMetadata": spec.envFromMetadata, "updateImages": len(spec.images) > 0, "updateResources": len(spec.resources) > 0,
		"containerBatchesRecord": []any{map[string]any{"timestamp": now, "containers": spec.changedContainers()}}})
	if err != nil {
		return err
	}
	if err := p.resize(ctx, pod, spec); err != nil {
		p.event(ctx, w, corev1.EventTypeWarning, "FailedUpdatePodInPlace", fmt.Sprintf("failed to update pod %s in-place(revision %s): %v", pod.Name, revision, err))
		return err
	}
	labels := map[string]string{"controller-revision-hash": revision, kruise.LabelLifecycleState: kruise.StateUpdating}
	annotations := map[string]string{kruise.AnnotationInPlaceState: string(state), kruise.AnnotationLifecycleTime: now}
	maps.Copy(labels, spec.labels)
	maps.Copy(annotations, spec.annotations)
	update := map[string]any{"metadata": map[string]any{"labels": labels, "annotations": annotations}}
	if len(containers) > 0 {
		update["spec"] = map[string]any{"containers": containers}
	}
	patch, err := json.Marshal(update)
	if err != nil {
		return err
	}
	if _, err := p.m.kube.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch,
		metav1.PatchOptions{FieldManager: managerFieldManager}); err != nil {
		p.event(ctx, w, corev1.EventTypeWarning, "FailedUpdatePodInPlace", fmt.Sprintf("failed to update pod %s in-place(revision %s): %v", pod.Name, revision, err))
		return fmt.Errorf("update pod %s in place: %w", pod.Name, err)
	}
	p.event(ctx, w, corev1.EventTypeNormal, "SuccessfulUpdatePodInPlace", fmt.Sprintf("successfully update pod %s in-place(revision %s)", pod.Name, revision))
	return nil
}

// resize asks for the spec's new cpu and memory through the pod's resize subresource, with the
// strategic merge patch GenerateResourcePatch builds (inplace_update_vertical.go, v1.9.0).
func (p *leaderProcess) resize(ctx context.Context, pod *corev1.Pod, spec *inPlaceSpec) error {
	var containers []any
	for _, c := range pod.Spec.Containers {
		if r, ok := spec.resources[c.Name]; ok {
			containers = append(containers, map[string]any{"name": c.Name, "resources": r})
		}
	}
	if len(containers) == 0 {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"containers": containers}})
	if err != nil {
		return err
	}
	if _, err := p.m.kube.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch,
		metav1.PatchOptions{FieldManager: managerFieldManager}, "resize"); err != nil {
		return fmt.Errorf("resize pod %s in place: %w", pod.Name, err)
	}
	return nil
}

// unreadyForInPlace are the conditions updateCondition writes before an in-place update:
// InPlaceUpdateReady False and, when the kubelet had the containers ready, Ready False naming
// the readiness gates not True (SetPodReadyCondition, pkg/util/pods.go, v1.9.0).
func unreadyForInPlace(pod *corev1.Pod) []corev1.PodCondition {
	out := []corev1.PodCondition{{Type: kruise.ConditionInPlaceReady, Status: corev1.ConditionFalse, Reason: "StartInPlaceUpdate"}}
	status := map[corev1.PodConditionType]corev1.ConditionStatus{kruise.ConditionInPlaceReady: corev1.ConditionFalse}
	for _, c := range pod.Status.Conditions {
		if _, set := status[c.Type]; !set {
			status[c.Type] = c.Status
		}
	}
	if _, ok := status[corev1.PodReady]; !ok || status[corev1.ContainersReady] != corev1.ConditionTrue {
		return out
	}
	var msgs []string
	for _, g := range pod.Spec.ReadinessGates {
		switch s, ok := status[g.ConditionType]; {
		case !ok:
			msgs = append(msgs, fmt.Sprintf("corresponding condition of pod readiness gate %q does not exist.", g.ConditionType))
		case s != corev1.ConditionTrue:
			msgs = append(msgs, fmt.Sprintf("the status of pod readiness gate %q is not \"True\", but %v", g.ConditionType, s))
		}
	}
	return append(out, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ReadinessGatesNotReady",
		Message: strings.Join(msgs, ", ")})
}
