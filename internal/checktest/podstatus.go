package checktest

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
)

// Unschedulable leaves the pod Pending with the scheduler's PodScheduled=False reason
// Unschedulable since ago (replacing any PodScheduled condition), unbound, no containers started.
func Unschedulable(message string, ago time.Duration) Option {
	return func(m metav1.Object) {
		p := pod(m)
		p.Spec.NodeName, p.Status.Phase, p.Status.ContainerStatuses = "", corev1.PodPending, nil
		conds := []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
			Reason: corev1.PodReasonUnschedulable, Message: message, LastTransitionTime: metav1.NewTime(Ago(ago))}}
		for _, c := range p.Status.Conditions {
			if c.Type != corev1.PodScheduled {
				conds = append(conds, c)
			}
		}
		p.Status.Conditions = conds
	}
}

// Waiting reports the container waiting with the kubelet's reason (ErrImagePull,
// CrashLoopBackOff, ...) after restarts restarts, not ready.
func Waiting(container, reason, message string, restarts int32) Option {
	return func(m metav1.Object) {
		p := pod(m)
		cs := corev1.ContainerStatus{Name: container, RestartCount: restarts,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}}}
		if restarts > 0 {
			cs.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", FinishedAt: metav1.NewTime(Ago(time.Minute))}
		}
		for i := range p.Status.ContainerStatuses {
			if p.Status.ContainerStatuses[i].Name == container {
				p.Status.ContainerStatuses[i] = cs
				return
			}
		}
		p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, cs)
	}
}

// ContainerImage sets what the kubelet reports a container runs: image and image ID.
func ContainerImage(container, image, imageID string) Option {
	return func(m metav1.Object) {
		p := pod(m)
		for i := range p.Status.ContainerStatuses {
			if p.Status.ContainerStatuses[i].Name == container {
				p.Status.ContainerStatuses[i].Image, p.Status.ContainerStatuses[i].ImageID = image, imageID
			}
		}
	}
}

// PodReady sets the pod's Ready and ContainersReady conditions since ago, as the kubelet does.
func PodReady(status corev1.ConditionStatus, ago time.Duration) Option {
	return Conditions(
		corev1.PodCondition{Type: corev1.ContainersReady, Status: status, LastTransitionTime: metav1.NewTime(Ago(ago))},
		corev1.PodCondition{Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.NewTime(Ago(ago))})
}

// ReadinessGates adds readiness gates (kruise's InPlaceUpdateReady, KruisePodReady, ...).
func ReadinessGates(types ...corev1.PodConditionType) Option {
	return func(m metav1.Object) {
		for _, t := range types {
			pod(m).Spec.ReadinessGates = append(pod(m).Spec.ReadinessGates, corev1.PodReadinessGate{ConditionType: t})
		}
	}
}

// SidecarSetObject is an OpenKruise SidecarSet selecting app=web with one sidecar container,
// decoded by the collector's decoder after the options shaped it (Annotations, SpecField,
// Status, ManagedFields, Generation).
func SidecarSetObject(t testing.TB, name string, opts ...Option) *kruise.SidecarSet {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": kruise.Group + "/v1alpha1", "kind": "SidecarSet",
		"metadata": map[string]any{"name": name, "uid": "uid-" + name, "generation": int64(1), "resourceVersion": "900",
			"creationTimestamp": Ago(24 * time.Hour).Format(time.RFC3339)},
		"spec": map[string]any{"selector": map[string]any{"matchLabels": map[string]any{"app": "web"}},
			"containers": ToUnstructured(corev1.Container{Name: "proxy", Image: "envoy:1.30"})},
	}}
	apply(u, opts)
	ss, err := kruise.SidecarSetFromUnstructured(u)
	if err != nil {
		t.Fatal(err)
	}
	return ss
}
