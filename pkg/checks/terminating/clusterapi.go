package terminating

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// Cluster API names (docs/domain.md, "Stuck deletion").
const (
	capiGroup            = "cluster.x-k8s.io"
	capiPausedAnnotation = "cluster.x-k8s.io/paused"
	capiDeleteForMove    = "clusterctl.cluster.x-k8s.io/delete-for-move"
	capiClusterNameLabel = "cluster.x-k8s.io/cluster-name"
	capiClusterFinalizer = "cluster.cluster.x-k8s.io"
	// maxOwnerDepth bounds the walk up ownerReferences (Machine -> MachineSet -> MachineDeployment -> Cluster).
	maxOwnerDepth = 6
)

// isCAPIGroup reports whether an API group belongs to Cluster API or one of its providers
// (infrastructure.cluster.x-k8s.io, bootstrap.cluster.x-k8s.io, ...).
func isCAPIGroup(group string) bool {
	return group == capiGroup || strings.HasSuffix(group, "."+capiGroup)
}

// pausedObject is an object found paused, and how.
type pausedObject struct {
	desc string // "Cluster ns/name"
	how  string // "spec.paused=true", "annotation cluster.x-k8s.io/paused"
	meta metav1.Object
}

// ownerPaused reports an object that is paused itself or whose Cluster API owner is paused.
func (a *pass) ownerPaused(t *target) (checks.Draft, bool) {
	subj, owners := t.subject, t.owners
	paused := a.pausedChain(subj)
	if len(paused) == 0 {
		return checks.Draft{}, false
	}
	var ev, names []string
	for _, p := range paused {
		ev = append(ev, p.desc+": "+p.how)
		names = append(names, p.desc)
	}
	moved := false
	for _, m := range append([]metav1.Object{subj.meta}, pausedMetas(paused)...) {
		if v, ok := m.GetAnnotations()[capiDeleteForMove]; ok {
			moved = true
			ev = append(ev, fmt.Sprintf("%s/%s has annotation %s=%q: a clusterctl move deleted it and did not finish", m.GetNamespace(), m.GetName(), capiDeleteForMove, v))
			break
		}
	}
	for _, o := range owners.get() {
		ev = append(ev, o.line())
	}
	msg := fmt.Sprintf("%s is paused, and Cluster API controllers do nothing for paused objects, so the finalizers %s stay until it is unpaused.",
		strings.Join(names, " and "), strings.Join(subj.meta.GetFinalizers(), ", "))
	if moved {
		msg += " The delete-for-move annotation shows an interrupted clusterctl move: finish or re-run the move."
	} else {
		msg += " If nothing is being moved, unpause it (remove the annotation or set spec.paused=false) and the controller completes the deletion."
	}
	return checks.Draft{
		RootCause: RootCauseOwnerPaused,
		Summary: fmt.Sprintf("%s for %s: %s is paused", subj.noun, checks.Age(a.now, subj.meta.GetDeletionTimestamp().Time),
			strings.Join(names, ", ")),
		Message:  msg,
		Evidence: ev,
	}, true
}

func pausedMetas(ps []pausedObject) []metav1.Object {
	out := make([]metav1.Object, 0, len(ps))
	for _, p := range ps {
		out = append(out, p.meta)
	}
	return out
}

// pausedChain returns the paused objects among the subject, its owners (as far as the
// snapshot holds them) and its Cluster.
func (a *pass) pausedChain(subj subject) []pausedObject {
	var out []pausedObject
	seen := map[string]bool{}
	add := func(p pausedObject) {
		if !seen[p.desc] {
			seen[p.desc] = true
			out = append(out, p)
		}
	}
	var walk func(kind string, m metav1.Object, depth int)
	walk = func(kind string, m metav1.Object, depth int) {
		desc := fmt.Sprintf("%s %s/%s", kind, m.GetNamespace(), m.GetName())
		if m.GetNamespace() == "" {
			desc = kind + " " + m.GetName()
		}
		if _, ok := m.GetAnnotations()[capiPausedAnnotation]; ok {
			add(pausedObject{desc: desc, how: "annotation " + capiPausedAnnotation, meta: m})
		}
		if depth >= maxOwnerDepth {
			return
		}
		for _, ref := range m.GetOwnerReferences() {
			gv, _ := schema.ParseGroupVersion(ref.APIVersion)
			if ref.Kind == "Cluster" && gv.Group == capiGroup {
				if c := a.cluster(m.GetNamespace(), ref.Name); c != nil {
					a.clusterPaused(c, add)
				}
				continue
			}
			if o, ok := a.objectByUID(string(ref.UID)); ok {
				walk(o.Kind, o.Meta, depth+1)
			}
		}
	}
	walk(subj.kind, subj.meta, 0)
	if isCAPIGroup(subj.group) && subj.kind == "Cluster" {
		if c := a.clusterByUID(string(subj.meta.GetUID())); c != nil {
			a.clusterPaused(c, add)
		}
	}
	if name := subj.meta.GetLabels()[capiClusterNameLabel]; name != "" {
		if c := a.cluster(subj.meta.GetNamespace(), name); c != nil {
			a.clusterPaused(c, add)
		}
	}
	return out
}

// clusterPaused adds the Cluster if spec.paused or its annotation pauses it.
func (a *pass) clusterPaused(c *unstructured.Unstructured, add func(pausedObject)) {
	desc := fmt.Sprintf("Cluster %s/%s", c.GetNamespace(), c.GetName())
	if p, _, _ := unstructured.NestedBool(c.Object, "spec", "paused"); p {
		add(pausedObject{desc: desc, how: "spec.paused=true", meta: c})
		return
	}
	if _, ok := c.GetAnnotations()[capiPausedAnnotation]; ok {
		add(pausedObject{desc: desc, how: "annotation " + capiPausedAnnotation, meta: c})
	}
}

func (a *pass) cluster(ns, name string) *unstructured.Unstructured {
	for _, c := range a.s.Clusters {
		if c.GetNamespace() == ns && c.GetName() == name {
			return c
		}
	}
	return nil
}

func (a *pass) clusterByUID(uid string) *unstructured.Unstructured {
	for _, c := range a.s.Clusters {
		if string(c.GetUID()) == uid {
			return c
		}
	}
	return nil
}

func (a *pass) objectByUID(uid string) (snapshot.Object, bool) {
	if uid == "" {
		return snapshot.Object{}, false
	}
	if a.objByUID == nil {
		a.objByUID = make(map[types.UID]snapshot.Object, len(a.s.Objects))
		for _, o := range a.s.Objects {
			if o.Meta != nil {
				a.objByUID[o.Meta.UID] = o
			}
		}
	}
	o, ok := a.objByUID[types.UID(uid)]
	return o, ok
}
