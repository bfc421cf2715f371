package kruise

import (
	"maps"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// What OpenKruise's lifecycle hooks and states are on a pod, as its controllers read them
// (pkg/util/lifecycle/lifecycle_utils.go, OpenKruise v1.9.0). Pods are taken as metav1.Object so
// a pod read in full and one read as metadata answer alike.

// HookParts are parts of a lifecycle hook: finalizers in the hook's order, label keys sorted.
type HookParts struct {
	Finalizers []string
	Labels     []string
}

// Empty reports whether no part is named.
func (p HookParts) Empty() bool { return len(p.Finalizers) == 0 && len(p.Labels) == 0 }

// HookHeld lists the parts of the hook on the pod: each of its finalizers the pod carries and
// each of its labels whose value on the pod is the hook's (a label the hook wants empty counts
// when absent, as in IsPodHooked). Nothing for a nil hook.
func HookHeld(h *LifecycleHook, pod metav1.Object) HookParts {
	var out HookParts
	if h == nil {
		return out
	}
	for _, f := range h.FinalizersHandler {
		if slices.Contains(pod.GetFinalizers(), f) {
			out.Finalizers = append(out.Finalizers, f)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(h.LabelsHandler)) {
		if pod.GetLabels()[k] == h.LabelsHandler[k] {
			out.Labels = append(out.Labels, k)
		}
	}
	return out
}

// PodHooked is IsPodHooked: any part of the hook is on the pod. A controller does not move a
// hooked pod on (out of PreparingUpdate, or from PreparingDelete to its deletion).
func PodHooked(h *LifecycleHook, pod metav1.Object) bool { return !HookHeld(h, pod).Empty() }

// HookMissing lists the parts of the hook not on the pod: each finalizer the pod lacks and each
// label absent or with another value; nothing for a nil hook. The pod is all hooked
// (IsPodAllHooked) when nothing is missing, except that a label the hook wants empty is missing
// here when absent, where IsPodAllHooked counts it: the hook's third party never set it.
func HookMissing(h *LifecycleHook, pod metav1.Object) HookParts {
	var out HookParts
	if h == nil {
		return out
	}
	for _, f := range h.FinalizersHandler {
		if !slices.Contains(pod.GetFinalizers(), f) {
			out.Finalizers = append(out.Finalizers, f)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(h.LabelsHandler)) {
		if got, ok := pod.GetLabels()[k]; !ok || got != h.LabelsHandler[k] {
			out.Labels = append(out.Labels, k)
		}
	}
	return out
}

// StateSince is when the pod entered its lifecycle state: the annotation AnnotationLifecycleTime
// that OpenKruise rewrites in RFC 3339 with every state change (SetPodLifecycle and
// UpdatePodLifecycle). Without a readable annotation it is the pod's creation, and stamped false.
func StateSince(pod metav1.Object) (since time.Time, stamped bool) {
	if t, err := time.Parse(time.RFC3339, pod.GetAnnotations()[AnnotationLifecycleTime]); err == nil {
		return t, true
	}
	return pod.GetCreationTimestamp().Time, false
}
