package scenario

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
)

func TestImagesOnly(t *testing.T) {
	// The pod as the apiserver stores it: defaults the template does not carry.
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27",
		ImagePullPolicy: corev1.PullIfNotPresent, TerminationMessagePath: "/dev/termination-log",
		TerminationMessagePolicy: corev1.TerminationMessageReadFile}}}}
	for _, tc := range []struct {
		name string
		tpl  corev1.Container
		want bool
	}{
		{"new image", corev1.Container{Name: "app", Image: "nginx:1.28"}, true},
		{"same image", corev1.Container{Name: "app", Image: "nginx:1.27"}, true},
		{"new image and args", corev1.Container{Name: "app", Image: "nginx:1.28", Args: []string{"-v"}}, false},
		{"resizePolicy", corev1.Container{Name: "app", Image: "nginx:1.27",
			ResizePolicy: []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer}}}, false},
		{"renamed", corev1.Container{Name: "web", Image: "nginx:1.28"}, false},
	} {
		if got := imagesOnly(pod, []corev1.Container{tc.tpl}); got != tc.want {
			t.Errorf("%s: imagesOnly = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestHookedAny(t *testing.T) {
	h := &kruise.LifecycleHook{FinalizersHandler: []string{"example.com/drain"}, LabelsHandler: map[string]string{"example.com/hold": "true"}}
	pod := func(fin []string, labels map[string]string) *corev1.Pod {
		p := &corev1.Pod{}
		p.Finalizers, p.Labels = fin, labels
		return p
	}
	if !hookedAny(h, pod([]string{"example.com/drain"}, nil)) {
		t.Error("a hook finalizer on the pod holds it")
	}
	if !hookedAny(h, pod(nil, map[string]string{"example.com/hold": "true"})) {
		t.Error("a hook label with its value holds it")
	}
	if hookedAny(h, pod([]string{"other"}, map[string]string{"example.com/hold": "false"})) {
		t.Error("nothing of the hook on the pod: not held")
	}
	if hookedAny(nil, pod([]string{"example.com/drain"}, nil)) {
		t.Error("no hook: not held")
	}
}
