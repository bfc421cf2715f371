package kruiselifecycle

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// isOwner reports whether an ownerReference names an OpenKruise workload of the given kinds.
func isOwner(ref *metav1.OwnerReference, kinds ...string) bool {
	if ref == nil || !strings.HasPrefix(ref.APIVersion, kruise.Group+"/") {
		return false
	}
	for _, k := range kinds {
		if ref.Kind == k {
			return true
		}
	}
	return false
}

// activePod mirrors kubecontroller.IsPodActive: not being deleted, not Succeeded or Failed.
// A pod not read in full has no known phase and counts as active unless being deleted.
func activePod(s *snapshot.Snapshot, p *metav1.ObjectMeta) bool {
	if p.DeletionTimestamp != nil {
		return false
	}
	full, ok := s.FullPod(p.UID)
	return !ok || (full.Status.Phase != corev1.PodSucceeded && full.Status.Phase != corev1.PodFailed)
}

// ownedPods splits the pods a workload controls into active and terminating ones. The controller
// reference alone decides: unlike Snapshot.OwnedPods, no namespace or selector filter.
func ownedPods(s *snapshot.Snapshot, w *kruise.Workload) (active, terminating []*metav1.ObjectMeta) {
	for _, p := range s.ControlledPods(w.UID) {
		if activePod(s, p) {
			active = append(active, p)
		} else if p.DeletionTimestamp != nil {
			terminating = append(terminating, p)
		}
	}
	sort.Slice(active, func(i, j int) bool { return active[i].Name < active[j].Name })
	return active, terminating
}

// lifecycleSince is when the pod entered its lifecycle state (kruise.StateSince) and, for the
// evidence, what dates it.
func lifecycleSince(p *metav1.ObjectMeta) (time.Time, string) {
	t, stamped := kruise.StateSince(p)
	if stamped {
		return t, "annotation " + kruise.AnnotationLifecycleTime
	}
	return t, "creation time (no " + kruise.AnnotationLifecycleTime + " annotation)"
}

// hookMisses lists what a lifecycle hook still waits for on a pod (kruise.HookMissing), each
// missing finalizer and each label missing or with another value, with who last set them.
func hookMisses(h *kruise.LifecycleHook, p *metav1.ObjectMeta) []string {
	missing := kruise.HookMissing(h, p)
	var out []string
	for _, f := range missing.Finalizers {
		line := checks.Evidencef("finalizer %s is missing", f)
		if ts := touchers(p, "f:metadata", "f:finalizers"); len(ts) > 0 {
			line += checks.Evidencef(" (finalizers last set by %s)", joinTouchers(ts))
		} else {
			line += " (no field manager has set any finalizer)"
		}
		out = append(out, line)
	}
	for _, k := range missing.Labels {
		want := h.LabelsHandler[k]
		got, ok := p.Labels[k]
		if !ok {
			out = append(out, checks.Evidencef("label %s is missing, the hook wants %q (no field manager has set it)", k, want))
			continue
		}
		line := checks.Evidencef("label %s is %q, the hook wants %q", k, got, want)
		if ts := touchers(p, "f:metadata", "f:labels", "f:"+k); len(ts) > 0 {
			line += checks.Evidencef(" (set by %s)", joinTouchers(ts))
		}
		out = append(out, line)
	}
	return out
}

// hookSatisfied says who put the hook's finalizers and labels in place.
func hookSatisfied(h *kruise.LifecycleHook, p *metav1.ObjectMeta) []string {
	var out []string
	for _, f := range h.FinalizersHandler {
		line := checks.Evidencef("preNormal finalizer %s is present", f)
		if ts := touchers(p, "f:metadata", "f:finalizers", fmt.Sprintf("v:%q", f)); len(ts) > 0 {
			line += checks.Evidencef(" (added by %s)", joinTouchers(ts))
		}
		out = append(out, line)
	}
	for _, k := range slices.Sorted(maps.Keys(h.LabelsHandler)) {
		line := checks.Evidencef("preNormal label %s=%q is present", k, h.LabelsHandler[k])
		if ts := touchers(p, "f:metadata", "f:labels", "f:"+k); len(ts) > 0 {
			line += checks.Evidencef(" (set by %s)", joinTouchers(ts))
		}
		out = append(out, line)
	}
	return out
}

// podCondition returns the pod's condition of the given type.
func podCondition(p *corev1.Pod, t corev1.PodConditionType) (corev1.PodCondition, bool) {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c, true
		}
	}
	return corev1.PodCondition{}, false
}
