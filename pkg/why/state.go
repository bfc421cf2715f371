package why

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks/terminating"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// stateIn returns how each object of the tree is described, from what the scan read: the asked
// object from its own read (own), the others from the snapshot. An object the scan did not read
// in a form that says its state is "-".
func stateIn(s *snapshot.Snapshot, obj report.ObjectRef, own string) func(report.ObjectRef) string {
	return func(ref report.ObjectRef) string {
		if same(ref, obj) {
			return own
		}
		var meta *metav1.ObjectMeta
		switch {
		case ref.Kind == "Pod" && ref.APIVersion == "v1":
			for _, p := range s.FullPods {
				if p.Namespace == ref.Namespace && p.Name == ref.Name {
					return podState(p, s.Now)
				}
			}
		case ref.Kind == "Namespace" && ref.APIVersion == "v1":
			if ns, ok := s.Namespace(ref.Name); ok {
				return terminatingOr(&ns.ObjectMeta, s.Now, string(ns.Status.Phase))
			}
		case ref.Kind == "Deployment" && ref.APIVersion == "apps/v1":
			if d, ok := s.Deployment(ref.Namespace, ref.Name); ok {
				want := int32(1)
				if d.Spec.Replicas != nil {
					want = *d.Spec.Replicas
				}
				return terminatingOr(&d.ObjectMeta, s.Now, fmt.Sprintf("%d/%d available", d.Status.AvailableReplicas, want))
			}
		}
		for _, o := range s.Objects {
			if o.Kind == ref.Kind && o.Meta.Namespace == ref.Namespace && o.Meta.Name == ref.Name {
				meta = &o.Meta.ObjectMeta
			}
		}
		if meta != nil {
			return terminatingOr(meta, s.Now, "Exists")
		}
		return "-"
	}
}

// ownState describes the asked object from its own read: a pod as podState does, another object
// by its deletion or its status.phase, when it has one.
func ownState(u *unstructured.Unstructured, now time.Time) string {
	if u.GetAPIVersion() == "v1" && u.GetKind() == "Pod" {
		var p corev1.Pod
		if runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &p) == nil {
			return podState(&p, now)
		}
	}
	state := "Exists"
	if phase, ok, _ := unstructured.NestedString(u.Object, "status", "phase"); ok && phase != "" {
		state = phase
	}
	if ts := u.GetDeletionTimestamp(); ts != nil {
		return "Terminating for " + duration.HumanDuration(now.Sub(ts.Time))
	}
	return state
}

func podState(p *corev1.Pod, now time.Time) string {
	phase := string(p.Status.Phase)
	if phase == "" {
		phase = "Pending"
	}
	if p.Status.Phase == corev1.PodRunning && !podReady(p) {
		phase += ", not ready"
	}
	return terminatingOr(&p.ObjectMeta, now, phase)
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// terminatingOr says "Terminating for AGE" of an object being deleted, else otherwise.
func terminatingOr(m *metav1.ObjectMeta, now time.Time, otherwise string) string {
	if m.DeletionTimestamp == nil {
		return otherwise
	}
	return "Terminating for " + duration.HumanDuration(now.Sub(m.DeletionTimestamp.Time))
}

// Finalizer is one of the object's finalizers and who added it, from managedFields.
type Finalizer struct {
	Name string `json:"name"`
	// Manager is the field manager that owns it; empty when managedFields do not say.
	Manager string    `json:"manager,omitempty"`
	Time    time.Time `json:"time,omitzero"`
}

func finalizers(m *metav1.PartialObjectMetadata) []Finalizer {
	var out []Finalizer
	for _, fin := range m.Finalizers {
		f := Finalizer{Name: fin}
		// The entry last written is the one whose time says when it was (re-)added.
		for _, e := range terminating.FinalizerManagers(m, fin) {
			if e.Time != nil && e.Time.After(f.Time) || f.Manager == "" {
				f.Manager = e.Manager
				if e.Time != nil {
					f.Time = e.Time.Time.UTC()
				}
			}
		}
		out = append(out, f)
	}
	return out
}
