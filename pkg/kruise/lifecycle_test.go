package kruise

import (
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestHookHeldAndMissing(t *testing.T) {
	h := &LifecycleHook{FinalizersHandler: []string{"a/f", "b/f"}, LabelsHandler: map[string]string{"ready": "true", "empty": ""}}
	pod := &metav1.ObjectMeta{Finalizers: []string{"b/f"}, Labels: map[string]string{"ready": "false"}}
	held := HookHeld(h, pod)
	// A label the hook wants empty is held when absent (IsPodHooked) and missing too (never set).
	if !slices.Equal(held.Finalizers, []string{"b/f"}) || !slices.Equal(held.Labels, []string{"empty"}) {
		t.Errorf("HookHeld = %+v", held)
	}
	missing := HookMissing(h, pod)
	if !slices.Equal(missing.Finalizers, []string{"a/f"}) || !slices.Equal(missing.Labels, []string{"empty", "ready"}) {
		t.Errorf("HookMissing = %+v", missing)
	}
	if !PodHooked(h, pod) || PodHooked(nil, pod) || !HookMissing(nil, pod).Empty() {
		t.Error("nil hook: neither hooked nor missing anything")
	}
	if PodHooked(&LifecycleHook{FinalizersHandler: []string{"a/f"}}, pod) {
		t.Error("a pod without the hook's finalizer is not hooked")
	}
}

func TestStateSince(t *testing.T) {
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	pod := &metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(created)}
	if got, stamped := StateSince(pod); stamped || !got.Equal(created) {
		t.Errorf("unstamped: %v %v", got, stamped)
	}
	pod.Annotations = map[string]string{AnnotationLifecycleTime: "not a time"}
	if got, stamped := StateSince(pod); stamped || !got.Equal(created) {
		t.Errorf("unreadable stamp: %v %v", got, stamped)
	}
	pod.Annotations[AnnotationLifecycleTime] = "2026-01-02T03:04:05Z"
	if got, stamped := StateSince(pod); !stamped || !got.Equal(created.Add(27*time.Hour+4*time.Minute+5*time.Second)) {
		t.Errorf("stamped: %v %v", got, stamped)
	}
}
