package resizepolicy

import (
	"encoding/json"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// history is the workloads' ControllerRevisions in the snapshot, by namespace/name, and the pod
// templates of those read in full, decoded once per run.
type history struct {
	revs      map[string]*appsv1.ControllerRevision
	templates map[string]*corev1.PodTemplateSpec
}

func newHistory(s *snapshot.Snapshot) *history {
	h := &history{revs: map[string]*appsv1.ControllerRevision{}, templates: map[string]*corev1.PodTemplateSpec{}}
	for _, cr := range s.Revisions {
		h.revs[cr.Namespace+"/"+cr.Name] = cr
	}
	return h
}

// revisionName is the ControllerRevision a revision label names: CloneSets and Advanced
// StatefulSets label pods with the revision's name, Advanced DaemonSets with its hash.
func revisionName(w *kruise.Workload, label string) string {
	if w.Kind == kruise.KindDaemonSet {
		return w.Name + "-" + label
	}
	return label
}

// revision returns the workload's ControllerRevision a label names, if the snapshot has it
// (metadata-only or full) and the workload controls it.
func (h *history) revision(w *kruise.Workload, label string) *appsv1.ControllerRevision {
	cr := h.revs[w.Namespace+"/"+revisionName(w, label)]
	if cr == nil {
		return nil
	}
	if ref := snapshot.ControllerOf(cr); ref != nil && ref.UID != w.UID {
		return nil
	}
	return cr
}

// template returns the pod template a revision records, when it was read in full. kruise stores
// it as a patch of the workload, {"spec":{"template":{...,"$patch":"replace"}}} (CloneSet
// revision getPatch, statefulset getPatch in v1.9.0).
func (h *history) template(w *kruise.Workload, label string) *corev1.PodTemplateSpec {
	key := w.Namespace + "/" + revisionName(w, label)
	if t, ok := h.templates[key]; ok {
		return t
	}
	var t *corev1.PodTemplateSpec
	if cr := h.revision(w, label); cr != nil && len(cr.Data.Raw) > 0 {
		var patch struct {
			Spec struct {
				Template *corev1.PodTemplateSpec `json:"template"`
			} `json:"spec"`
		}
		if json.Unmarshal(cr.Data.Raw, &patch) == nil {
			t = patch.Spec.Template
		}
	}
	h.templates[key] = t
	return t
}

func (h *history) templateFor(w *kruise.Workload) func(string) *corev1.PodTemplateSpec {
	return func(label string) *corev1.PodTemplateSpec { return h.template(w, label) }
}

// driftSince is when the pod's difference from its placement's template began: the latest of
// the pod's creation, the revision's creation (the template change) and the pod's in-place
// update to that revision. Without the revision's creation, a failed in-place update of the pod
// stands for it. It returns an evidence line saying so.
func (pa *pass) driftSince(p *podDiff) (time.Time, string) {
	since := p.pod.CreationTimestamp.Time
	from := "the pod's creation"
	later := func(t time.Time, what string) {
		if t.After(since) {
			since, from = t, what
		}
	}
	rev := p.place.revision
	if cr := pa.hist.revision(p.w, rev); cr != nil {
		later(cr.CreationTimestamp.Time, fmt.Sprintf("ControllerRevision %s's creation (the template change)", cr.Name))
	} else {
		var first time.Time
		for _, r := range rejections(pa.s, p.w, p.pod) {
			if t := eventFirst(r.event); first.IsZero() || t.Before(first) {
				first = t
			}
		}
		later(first, "the first failed in-place update of the pod")
	}
	if st, ok := inPlaceState(p.pod); ok && st.Revision == rev {
		later(st.UpdateTimestamp.Time, "the pod's in-place update to "+rev)
	}
	line := fmt.Sprintf("differs from revision %s since %s: %s", rev, since.UTC().Format(time.RFC3339), from)
	if pa.hist.revision(p.w, rev) == nil {
		line += fmt.Sprintf(" (ControllerRevision %s not read)", revisionName(p.w, rev))
	}
	return since, line
}

// inPlaceStateAnnotation is the part of kruise's apps.kruise.io/inplace-update-state the check reads.
type inPlaceStateAnnotation struct {
	Revision        string      `json:"revision"`
	UpdateTimestamp metav1.Time `json:"updateTimestamp"`
}

func inPlaceState(pod *corev1.Pod) (inPlaceStateAnnotation, bool) {
	var st inPlaceStateAnnotation
	raw, ok := pod.Annotations[kruise.AnnotationInPlaceState]
	if !ok || json.Unmarshal([]byte(raw), &st) != nil {
		return st, false
	}
	return st, true
}
