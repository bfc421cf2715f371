package checktest

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
)

// Pod is a pod as the apiserver returns it: UID "uid-<name>", resourceVersion 4711, created
// two hours ago, phase Running. Options add the rest.
func Pod(namespace, name string, opts ...Option) *corev1.Pod {
	p := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: types.UID("uid-" + name), ResourceVersion: "4711",
			CreationTimestamp: metav1.NewTime(Ago(2 * time.Hour))},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	apply(p, opts)
	return p
}

func pod(m metav1.Object) *corev1.Pod { return m.(*corev1.Pod) }

// OwnedByWorkload makes the OpenKruise workload the pod's controller.
func OwnedByWorkload(w *kruise.Workload) Option { return OwnedBy(w.APIVersion, w.Kind, w.Name, w.UID) }

// OnNode binds the pod to a node.
func OnNode(node string) Option { return func(m metav1.Object) { pod(m).Spec.NodeName = node } }

// Containers replaces the pod's containers.
func Containers(cs ...corev1.Container) Option {
	return func(m metav1.Object) { pod(m).Spec.Containers = cs }
}

// Running reports every container running since the pod's creation, as the kubelet does.
func Running() Option {
	return func(m metav1.Object) {
		p := pod(m)
		p.Status.ContainerStatuses = nil
		for _, c := range p.Spec.Containers {
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: c.Name, Ready: true,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: p.CreationTimestamp}}})
		}
	}
}

// Stopped reports every container terminated 9 minutes ago.
func Stopped() Option {
	return func(m metav1.Object) {
		p := pod(m)
		p.Status.ContainerStatuses = nil
		for _, c := range p.Spec.Containers {
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: c.Name, State: corev1.ContainerState{
				Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", FinishedAt: metav1.NewTime(Ago(9 * time.Minute))}}})
		}
	}
}

// Volumes adds volumes.
func Volumes(vs ...corev1.Volume) Option {
	return func(m metav1.Object) { pod(m).Spec.Volumes = append(pod(m).Spec.Volumes, vs...) }
}

// Claim mounts a PersistentVolumeClaim as volume "data".
func Claim(claim string) Option {
	return Volumes(corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}})
}

// Conditions adds pod conditions.
func Conditions(cs ...corev1.PodCondition) Option {
	return func(m metav1.Object) { pod(m).Status.Conditions = append(pod(m).Status.Conditions, cs...) }
}

// Lifecycle puts the pod in an OpenKruise lifecycle state entered age ago (label and timestamp
// annotation, as kruise writes them).
func Lifecycle(state string, age time.Duration) Option {
	return func(m metav1.Object) {
		Labels(map[string]string{kruise.LabelLifecycleState: state})(m)
		Annotations(map[string]string{kruise.AnnotationLifecycleTime: Ago(age).Format(time.RFC3339)})(m)
	}
}

// ResizePolicy is a container's resizePolicy from resource, restart-policy pairs.
func ResizePolicy(kv ...string) []corev1.ContainerResizePolicy {
	var out []corev1.ContainerResizePolicy
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, corev1.ContainerResizePolicy{ResourceName: corev1.ResourceName(kv[i]), RestartPolicy: corev1.ResourceResizeRestartPolicy(kv[i+1])})
	}
	return out
}
