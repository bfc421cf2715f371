package scenario

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
)

// imagesOnly reports whether the template differs from the pod's containers in images alone:
// the one change the stand-in makes in place (defaultCalculateInPlaceUpdateSpec,
// pkg/util/inplaceupdate/inplace_update_defaults.go, v1.9.0, also allows metadata and resources;
// anything else is not in-place, and CanUpdateInPlace is false).
func imagesOnly(pod *corev1.Pod, tpl []corev1.Container) bool {
	if len(pod.Spec.Containers) != len(tpl) {
		return false
	}
	for i, c := range pod.Spec.Containers {
		// The template's fields laid over the pod's container, image aside: what the apiserver
		// defaulted on the pod stays, anything the template changes shows.
		want := tpl[i].DeepCopy()
		want.Image = ""
		raw, err := json.Marshal(want)
		if err != nil {
			return false
		}
		merged := c.DeepCopy()
		if err := json.Unmarshal(raw, merged); err != nil || !equality.Semantic.DeepEqual(*merged, c) {
			return false
		}
	}
	return true
}

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
// InPlaceUpdateReady is set False (reason StartInPlaceUpdate), and one update of the pod writes
// the update revision, lifecycle state Updating, the apps.kruise.io/inplace-update-state
// annotation with each changed container's last imageID (defaultPatchUpdateSpecToPod) and the
// new images. The kubelet then restarts the containers; until their status shows a new imageID
// the update is not complete (defaultCheckContainersUpdateCompleted), and the stand-in, which
// plays no kubelet, never marks it complete: kwok does not restart containers.
func (p *leaderProcess) updateInPlace(ctx context.Context, w *kruise.Workload, pod *corev1.Pod, revision string) error {
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
	if err := p.setConditions(ctx, pod, corev1.PodCondition{Type: kruise.ConditionInPlaceReady, Status: corev1.ConditionFalse, Reason: "StartInPlaceUpdate"}); err != nil {
		return err
	}
	last := map[string]any{}
	images := map[string]string{}
	for _, c := range w.Template.Spec.Containers {
		images[c.Name] = c.Image
	}
	var containers []any
	for _, c := range pod.Spec.Containers {
		if images[c.Name] == c.Image {
			continue
		}
		containers = append(containers, map[string]any{"name": c.Name, "image": images[c.Name]})
		for _, cs := range pod.Status.ContainerStatuses {
			if cs.Name == c.Name {
				last[c.Name] = map[string]any{"imageID": cs.ImageID}
			}
		}
	}
	state, err := json.Marshal(map[string]any{"revision": revision, "updateTimestamp": time.Now().UTC().Format(time.RFC3339),
		"lastContainerStatuses": last, "updateImages": len(containers) > 0})
	if err != nil {
		return err
	}
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{
			"labels":      map[string]string{"controller-revision-hash": revision, kruise.LabelLifecycleState: kruise.StateUpdating},
			"annotations": map[string]string{kruise.AnnotationInPlaceState: string(state), kruise.AnnotationLifecycleTime: time.Now().UTC().Format(time.RFC3339)},
		},
		"spec": map[string]any{"containers": containers},
	})
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
