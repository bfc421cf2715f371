package kruisemanager

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
)

// inPlacePod is a pod as the apiserver stores it from the template: defaults the template does not carry.
func inPlacePod(c corev1.Container, labels map[string]string) *corev1.Pod {
	c.ImagePullPolicy, c.TerminationMessagePath, c.TerminationMessagePolicy = corev1.PullIfNotPresent, "/dev/termination-log", corev1.TerminationMessageReadFile
	c.Resources = withDefaultRequests(c.Resources)
	p := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{c},
		ReadinessGates: []corev1.PodReadinessGate{{ConditionType: kruise.ConditionInPlaceReady}}}}
	p.Labels = labels
	return p
}

func resources(cpu, memLimit string) corev1.ResourceRequirements {
	return corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("256Mi")},
		Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(memLimit)}}
}

// TestCalculateInPlaceSpec follows defaultCalculateInPlaceUpdateSpec (inplace_update_defaults.go,
// kruise v1.9.0): images always; cpu and memory replacements with InPlaceWorkloadVerticalScaling
// and the QoS class kept; labels and annotations, env from metadata when a fieldRef reads them.
func TestCalculateInPlaceSpec(t *testing.T) {
	version := corev1.EnvVar{Name: "VERSION", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['version']"}}}
	app := corev1.Container{Name: "app", Image: "nginx:1.27", Resources: resources("500m", "256Mi"), Env: []corev1.EnvVar{version}}
	with := func(f func(c *corev1.Container)) corev1.Container {
		c := *app.DeepCopy()
		f(&c)
		return c
	}
	for _, tc := range []struct {
		name     string
		tpl      corev1.Container
		labels   map[string]string
		vertical bool
		ok       bool
		want     string // images, resources and env of the spec
	}{
		{"new image", with(func(c *corev1.Container) { c.Image = "nginx:1.28" }), nil, false, true, "images=map[app:nginx:1.28] resources=0 env=false"},
		{"nothing", app, nil, true, true, "images=map[] resources=0 env=false"},
		{"new image and args", with(func(c *corev1.Container) { c.Image, c.Args = "nginx:1.28", []string{"-v"} }), nil, false, false, ""},
		{"resizePolicy", with(func(c *corev1.Container) {
			c.ResizePolicy = []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer}}
		}), nil, true, false, ""},
		{"renamed", with(func(c *corev1.Container) { c.Name = "web" }), nil, true, false, ""},
		{"cpu without vertical scaling", with(func(c *corev1.Container) { c.Resources = resources("32", "256Mi") }), nil, false, false, ""},
		{"cpu", with(func(c *corev1.Container) { c.Resources = resources("32", "256Mi") }), nil, true, true, "images=map[] resources=1 env=false"},
		{"cpu added", with(func(c *corev1.Container) { c.Resources.Limits[corev1.ResourceCPU] = resource.MustParse("1") }), nil, true, false, ""},
		{"storage", with(func(c *corev1.Container) {
			c.Resources.Requests[corev1.ResourceEphemeralStorage] = resource.MustParse("1Gi")
		}), nil, true, false, ""},
		{"label read by env", app, map[string]string{"version": "v2"}, false, true, "images=map[] resources=0 env=true"},
		{"label read by nothing", app, map[string]string{"tier": "web"}, false, true, "images=map[] resources=0 env=false"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := inPlacePod(*app.DeepCopy(), map[string]string{"app": "web", "version": "v1"})
			tpl := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{tc.tpl}}}
			tpl.Labels = map[string]string{"app": "web", "version": "v1"}
			for k, v := range tc.labels {
				tpl.Labels[k] = v
			}
			s, ok := calculateInPlaceSpec(pod, tpl, tc.vertical)
			if ok != tc.ok {
				t.Fatalf("in place = %v, want %v", ok, tc.ok)
			}
			if !ok {
				return
			}
			if got := fmt.Sprintf("images=%v resources=%d env=%v", s.images, len(s.resources), s.envFromMetadata); got != tc.want {
				t.Errorf("spec %s, want %s", got, tc.want)
			}
			for k, v := range tc.labels {
				if s.labels[k] != v {
					t.Errorf("label %s=%q, want %q", k, s.labels[k], v)
				}
			}
		})
	}
}

// A resize that would turn a Burstable pod Guaranteed is not made in place (IsPodQoSChanged).
func TestCalculateInPlaceSpecKeepsQoS(t *testing.T) {
	limits := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("256Mi")}
	burstable := corev1.Container{Name: "app", Image: "nginx:1.27", Resources: corev1.ResourceRequirements{Limits: limits,
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("256Mi")}}}
	pod := inPlacePod(burstable, nil)
	guaranteed := *burstable.DeepCopy()
	guaranteed.Resources.Requests[corev1.ResourceCPU] = resource.MustParse("1")
	if _, ok := calculateInPlaceSpec(pod, &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{guaranteed}}}, true); ok {
		t.Error("Burstable to Guaranteed is not in place")
	}
	more := *burstable.DeepCopy()
	more.Resources.Requests[corev1.ResourceCPU] = resource.MustParse("800m")
	if s, ok := calculateInPlaceSpec(pod, &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{more}}}, true); !ok ||
		!s.resources["app"].Requests[corev1.ResourceCPU].Equal(resource.MustParse("800m")) || len(s.resources["app"].Limits) != 0 {
		t.Errorf("Burstable staying Burstable resizes only the cpu request: %+v %v", s, ok)
	}
	if got := qosClass([]corev1.Container{{Name: "app"}}); got != corev1.PodQOSBestEffort {
		t.Errorf("no resources: %s", got)
	}
	if got := qosClass([]corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{Limits: limits}}}); got != corev1.PodQOSGuaranteed {
		t.Errorf("limits only (requests default to them): %s", got)
	}
}

// TestNeedsUnready follows defaultCheckPodNeedsBeUnready: a resize alone keeps the pod ready
// unless a changed resource's resizePolicy restarts the container.
func TestNeedsUnready(t *testing.T) {
	cpu := &inPlaceSpec{resources: map[string]corev1.ResourceRequirements{"app": {Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}}}
	image := &inPlaceSpec{images: map[string]string{"app": "nginx:1.28"}}
	pod := func(policy ...corev1.ContainerResizePolicy) *corev1.Pod {
		p := inPlacePod(corev1.Container{Name: "app", Image: "nginx:1.27", ResizePolicy: policy}, nil)
		return p
	}
	restart := func(r corev1.ResourceName) corev1.ContainerResizePolicy {
		return corev1.ContainerResizePolicy{ResourceName: r, RestartPolicy: corev1.RestartContainer}
	}
	if needsUnready(pod(), cpu, true) {
		t.Error("a cpu resize without a restarting policy keeps the pod ready")
	}
	if needsUnready(pod(restart(corev1.ResourceMemory)), cpu, true) {
		t.Error("a cpu resize does not restart for memory's policy")
	}
	if !needsUnready(pod(restart(corev1.ResourceCPU)), cpu, true) {
		t.Error("a cpu resize that restarts the container marks the pod unready")
	}
	if !needsUnready(pod(), image, true) {
		t.Error("an image update marks the pod unready")
	}
	noGate := pod()
	noGate.Spec.ReadinessGates = nil
	if needsUnready(noGate, image, true) {
		t.Error("a pod without the InPlaceUpdateReady gate is not marked")
	}
}

// TestUnreadyForInPlace: Ready False names the gates not True, as SetPodReadyCondition does, and
// only when the kubelet had the containers ready.
func TestUnreadyForInPlace(t *testing.T) {
	pod := inPlacePod(corev1.Container{Name: "app"}, nil)
	pod.Spec.ReadinessGates = append(pod.Spec.ReadinessGates, corev1.PodReadinessGate{ConditionType: "KruisePodReady"})
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue},
		{Type: corev1.ContainersReady, Status: corev1.ConditionTrue}, {Type: kruise.ConditionInPlaceReady, Status: corev1.ConditionTrue},
		{Type: "KruisePodReady", Status: corev1.ConditionTrue}}
	got := unreadyForInPlace(pod)
	if len(got) != 2 || got[1].Type != corev1.PodReady || got[1].Status != corev1.ConditionFalse ||
		got[1].Message != `the status of pod readiness gate "InPlaceUpdateReady" is not "True", but False` {
		t.Fatalf("conditions %+v", got)
	}
	pod.Status.Conditions[1].Status = corev1.ConditionFalse
	if got := unreadyForInPlace(pod); len(got) != 1 || got[0].Type != kruise.ConditionInPlaceReady {
		t.Fatalf("containers not ready: only InPlaceUpdateReady is written, got %+v", got)
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

// A CloneSet pod leaves PreparingNormal as refreshPodState lets it: with a preNormal hook once the
// hook is satisfied, bound or not; without one, v1.9.0 waits until the pod is bound to a node,
// earlier releases move it at once.
func TestLeavesPreparingNormal(t *testing.T) {
	hooked := &kruise.Workload{Lifecycle: kruise.Lifecycle{PreNormal: &kruise.LifecycleHook{FinalizersHandler: []string{"example.com/ready"}}}}
	bare := &kruise.Workload{}
	pod := func(node string, fin ...string) *corev1.Pod {
		p := &corev1.Pod{}
		p.Spec.NodeName, p.Finalizers = node, fin
		return p
	}
	for _, tc := range []struct {
		name          string
		waitScheduled bool
		w             *kruise.Workload
		pod           *corev1.Pod
		want          bool
	}{
		{"v1.9.0, no hook, not bound", true, bare, pod(""), false},
		{"v1.9.0, no hook, bound", true, bare, pod("node-1"), true},
		{"v1.7.0, no hook, not bound", false, bare, pod(""), true},
		{"v1.9.0, hook satisfied, not bound", true, hooked, pod("", "example.com/ready"), true},
		{"v1.9.0, hook not satisfied, bound", true, hooked, pod("node-1"), false},
	} {
		m := &Manager{waitScheduled: tc.waitScheduled}
		if got := m.leavesPreparingNormal(tc.w, tc.pod); got != tc.want {
			t.Errorf("%s: leaves PreparingNormal = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestReleaseAtLeast(t *testing.T) {
	for v, want := range map[string]bool{"v1.7.0": false, "v1.8.4": false, "v1.9.0": true, "v1.10.1": true} {
		if got, err := ReleaseAtLeast(v, "v1.9.0"); err != nil || got != want {
			t.Errorf("ReleaseAtLeast(%s, v1.9.0) = %v, %v; want %v", v, got, err, want)
		}
	}
	if _, err := ReleaseAtLeast("latest", "v1.9.0"); err == nil {
		t.Error("a tag that is no version is accepted")
	}
}
