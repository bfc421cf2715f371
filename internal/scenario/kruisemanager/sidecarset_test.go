package kruisemanager

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
)

// ssMesh is a SidecarSet "mesh" selecting app=web with one sidecar "proxy" at image, its hash
// annotations written as the SidecarSet webhook writes them.
func ssMesh(t *testing.T, image string) *sidecarSet {
	t.Helper()
	ss := &sidecarSet{}
	ss.Name, ss.Generation = "mesh", 2
	ss.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	ss.Spec.Containers = []corev1.Container{{Name: "proxy", Image: image}}
	hash, noImage, err := sidecarHashes(ss.Spec.Containers)
	if err != nil {
		t.Fatal(err)
	}
	ss.Annotations = map[string]string{kruise.AnnotationSidecarHash: hash, annotationSidecarHashNoImage: noImage}
	return ss
}

// ssPod is a pod injected by ss when it ran image, Running and Ready, its containers started.
// updated says the controller updated it to ss's current image (the kubelet restarted the proxy
// when restarted).
func ssPod(t *testing.T, ss *sidecarSet, name, image string, updated, restarted bool) *corev1.Pod {
	t.Helper()
	injectedBy := ssMesh(t, image)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, Labels: map[string]string{"app": "web"},
		Annotations: map[string]string{kruise.AnnotationSidecarInjects: "mesh"}, CreationTimestamp: metav1.Now()},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "app", Image: "web:1"}, {Name: "proxy", Image: image}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Image: "web:1", ImageID: "id-web:1", Ready: true},
				{Name: "proxy", Image: image, ImageID: "id-" + image, Ready: true}}}}
	now := metav1.Now()
	setPodRevision(pod, kruise.AnnotationSidecarHash, injectedBy, injectedBy.revision(), now)
	setPodRevision(pod, annotationSidecarHashNoImage, injectedBy, injectedBy.Annotations[annotationSidecarHashNoImage], now)
	if updated {
		pod.Spec.Containers[1].Image = ss.Spec.Containers[0].Image
		setPodRevision(pod, kruise.AnnotationSidecarHash, ss, ss.revision(), now)
		state, _ := json.Marshal(map[string]sidecarUpdateState{"mesh": {Revision: ss.revision(),
			LastContainerStatuses: map[string]map[string]string{"proxy": {"imageID": "id-" + image}}}})
		pod.Annotations[annotationSidecarUpdateState] = string(state)
		if restarted {
			pod.Status.ContainerStatuses[1].Image = ss.Spec.Containers[0].Image
			pod.Status.ContainerStatuses[1].ImageID = "id-" + ss.Spec.Containers[0].Image
		}
	}
	return pod
}

func TestSidecarHashes(t *testing.T) {
	h1, n1, _ := sidecarHashes([]corev1.Container{{Name: "proxy", Image: "envoy:1.30"}})
	h2, n2, _ := sidecarHashes([]corev1.Container{{Name: "proxy", Image: "envoy:1.31"}})
	h3, n3, _ := sidecarHashes([]corev1.Container{{Name: "proxy", Image: "envoy:1.31", Args: []string{"-l", "debug"}}})
	if h1 == h2 || n1 != n2 {
		t.Errorf("an image change changes the hash only: %s/%s vs %s/%s", h1, n1, h2, n2)
	}
	if h3 == h2 || n3 == n2 {
		t.Errorf("an args change changes both hashes: %s/%s vs %s/%s", h2, n2, h3, n3)
	}
}

func TestSidecarSetMatchesAndStatus(t *testing.T) {
	ss := ssMesh(t, "envoy:1.31")
	done := ssPod(t, ss, "done", "envoy:1.30", true, true)
	updating := ssPod(t, ss, "updating", "envoy:1.30", true, false)
	old := ssPod(t, ss, "old", "envoy:1.30", false, false)
	pending := ssPod(t, ss, "pending", "envoy:1.30", false, false)
	pending.Status = corev1.PodStatus{Phase: corev1.PodPending}

	terminating := ssPod(t, ss, "terminating", "envoy:1.30", false, false)
	terminating.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	notInjected := ssPod(t, ss, "not-injected", "envoy:1.30", false, false)
	delete(notInjected.Annotations, kruise.AnnotationSidecarInjects)
	noProxy := ssPod(t, ss, "no-proxy", "envoy:1.30", false, false)
	noProxy.Spec.Containers = noProxy.Spec.Containers[:1]
	other := ssPod(t, ss, "other", "envoy:1.30", false, false)
	other.Labels["app"] = "api"
	for _, p := range []*corev1.Pod{terminating, notInjected, noProxy, other} {
		if ss.matches(p) {
			t.Errorf("pod %s is not matched", p.Name)
		}
	}
	pods := []*corev1.Pod{done, updating, old, pending}
	for _, p := range pods {
		if !ss.matches(p) {
			t.Errorf("pod %s is matched", p.Name)
		}
	}
	if !ss.consistent(done) || ss.consistent(updating) || !ss.consistent(old) {
		t.Errorf("consistent: restarted %v, not restarted %v, never updated %v", ss.consistent(done), ss.consistent(updating), ss.consistent(old))
	}
	got := ss.status(pods, "mesh-abc")
	want := sidecarSetStatus{ObservedGeneration: 2, MatchedPods: 4, UpdatedPods: 2, ReadyPods: 2, UpdatedReadyPods: 1, LatestRevision: "mesh-abc"}
	if got != want {
		t.Errorf("status = %+v, want %+v", got, want)
	}

	// A digest image is judged by its imageID alone.
	digest := "envoy@sha256:0123abcd"
	ssd := ssMesh(t, digest)
	p := ssPod(t, ssd, "digest", "envoy:1.30", true, false)
	if ssd.consistent(p) {
		t.Error("digest image not yet in the imageID: inconsistent")
	}
	p.Status.ContainerStatuses[1].ImageID = "docker.io/library/envoy@sha256:0123abcd"
	if !ssd.consistent(p) {
		t.Error("digest image in the imageID: consistent")
	}
}

func TestSidecarSetNextUpgradePods(t *testing.T) {
	names := func(ps []*corev1.Pod) []string {
		out := []string{}
		for _, p := range ps {
			out = append(out, p.Name)
		}
		return out
	}
	intOr := func(v intstr.IntOrString) *intstr.IntOrString { return &v }
	mk := func(ss *sidecarSet, spec map[string]string) []*corev1.Pod {
		var out []*corev1.Pod
		for i, name := range []string{"a", "b", "c", "d"} {
			p := ssPod(t, ss, name, "envoy:1.30", spec[name] == "updating" || spec[name] == "restarted", spec[name] == "restarted")
			// older first: "a" is the oldest pod
			p.CreationTimestamp = metav1.NewTime(time.Unix(int64(1000+i), 0))
			if spec[name] == "unready" {
				p.Status.Conditions[0].Status = corev1.ConditionFalse
			}
			out = append(out, p)
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		setup func(ss *sidecarSet)
		pods  map[string]string
		want  []string
	}{
		{"maxUnavailable 1 (default): the newest pod", nil, nil, []string{"d"}},
		{"an updated pod not yet restarted holds the rest", nil, map[string]string{"d": "updating"}, []string{}},
		{"an updated pod restarted and Ready frees the next", nil, map[string]string{"d": "restarted"}, []string{"c"}},
		{"maxUnavailable 50%", func(ss *sidecarSet) { ss.Spec.UpdateStrategy.MaxUnavailable = intOr(intstr.FromString("50%")) }, nil, []string{"d", "c"}},
		{"partition 3 keeps three back", func(ss *sidecarSet) { ss.Spec.UpdateStrategy.Partition = intOr(intstr.FromInt32(3)) }, nil, []string{"d"}},
		{"partition 4: none", func(ss *sidecarSet) { ss.Spec.UpdateStrategy.Partition = intOr(intstr.FromInt32(4)) }, nil, []string{}},
		{"unready pods go first and cost no availability", nil, map[string]string{"a": "unready"}, []string{"a", "d"}},
		{"updateStrategy.selector", func(ss *sidecarSet) {
			ss.Spec.UpdateStrategy.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"canary": "true"}}
		}, nil, []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ss := ssMesh(t, "envoy:1.31")
			if tc.setup != nil {
				tc.setup(ss)
			}
			pods := mk(ss, tc.pods)
			for _, p := range pods {
				if p.Name == "a" && tc.pods["a"] == "unready" {
					p.Status.ContainerStatuses[1].Ready = false
				}
			}
			up, no := ss.nextUpgradePods(pods)
			if got := names(up); !reflect.DeepEqual(got, tc.want) || len(no) != 0 {
				t.Errorf("upgrade %v (not upgradable %v), want %v", got, names(no), tc.want)
			}
		})
	}

	t.Run("a change beyond images cannot be made in place", func(t *testing.T) {
		ss := ssMesh(t, "envoy:1.31")
		ss.Spec.Containers[0].Args = []string{"-l", "debug"}
		_, noImage, _ := sidecarHashes(ss.Spec.Containers)
		ss.Annotations[annotationSidecarHashNoImage] = noImage
		up, no := ss.nextUpgradePods(mk(ss, nil))
		if len(up) != 0 || len(no) != 4 {
			t.Errorf("upgrade %v, not upgradable %v: want none and all four", names(up), names(no))
		}
	})
}

func TestUpdateExpectations(t *testing.T) {
	ss := ssMesh(t, "envoy:1.31")
	rev := ss.revision()
	before := ssPod(t, ss, "web-a", "envoy:1.30", false, false)
	after := ssPod(t, ss, "web-a", "envoy:1.30", true, false)
	e := newUpdateExpectations()

	e.expectUpdated("mesh", rev, before)
	e.observeUpdated("mesh", rev, before) // the cache still has the pod before the update
	if ok, pods := e.satisfied("mesh", rev); ok || !reflect.DeepEqual(pods, []string{"shop/web-a"}) {
		t.Fatalf("update not yet seen: satisfied %v %v", ok, pods)
	}
	if ok, _ := e.satisfied("mesh", "another-revision"); !ok {
		t.Error("another revision expects nothing")
	}
	e.observeUpdated("mesh", rev, after)
	if ok, _ := e.satisfied("mesh", rev); !ok {
		t.Error("the pod seen on the revision satisfies the expectation")
	}

	e.expectUpdated("mesh", rev, before)
	e.deleteObject("mesh", before)
	if ok, _ := e.satisfied("mesh", rev); !ok {
		t.Error("the pod's delete event clears its expectation")
	}

	// The delete event handled before the expectation was made: nothing ever clears it.
	e.deleteObject("mesh", before)
	e.expectUpdated("mesh", rev, before)
	e.observeUpdated("mesh", rev, ssPod(t, ss, "web-b", "envoy:1.30", true, true))
	if ok, pods := e.satisfied("mesh", rev); ok || !reflect.DeepEqual(pods, []string{"shop/web-a"}) {
		t.Fatalf("leaked expectation: satisfied %v %v", ok, pods)
	}
	// A new revision drops it, as a restart does.
	e.observeUpdated("mesh", "next", after)
	if ok, _ := e.satisfied("mesh", rev); !ok {
		t.Error("an observation on another revision drops the entry")
	}
}
