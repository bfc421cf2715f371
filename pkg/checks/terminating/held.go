package terminating

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// Built-in finalizers whose controller waits for a condition on other objects (docs/domain.md,
// "Built-in finalizers: what each controller waits for").
const (
	finPVCProtection   = "kubernetes.io/pvc-protection"
	finPVProtection    = "kubernetes.io/pv-protection"
	finForeground      = metav1.FinalizerDeleteDependents
	finOrphan          = metav1.FinalizerOrphanDependents
	finCRDCleanup      = "customresourcecleanup.apiextensions.k8s.io"
	maxBlockersInLines = 5
)

// protectionFinalizers are never offered for removal while their condition does not hold:
// removing one deletes an object something still uses or still owns.
var protectionFinalizers = map[string]bool{finPVCProtection: true, finPVProtection: true, finForeground: true, finCRDCleanup: true}

// blocker is an object a built-in controller's condition waits on, with its state in prose.
type blocker struct {
	ref   report.ObjectRef
	state string
}

func (b blocker) name() string { return refName(b.ref) }

// podState says what a pod is doing, as far as the snapshot shows: phase, deletion, and its node.
func (a *analysis) podState(m *metav1.ObjectMeta) string {
	p, full := a.s.FullPod(m.UID)
	if !full {
		if m.DeletionTimestamp != nil {
			return "Terminating (not read in full)"
		}
		return "not read in full"
	}
	state := string(p.Status.Phase)
	if p.DeletionTimestamp != nil {
		state = "Terminating for " + checks.Age(a.now, p.DeletionTimestamp.Time)
	}
	if p.Spec.NodeName == "" {
		return state + ", not scheduled"
	}
	state += " on node " + p.Spec.NodeName
	node, ok := a.s.Node(p.Spec.NodeName)
	switch {
	case !ok && a.read(snapshot.InputNodes):
		return state + ", which no longer exists"
	case !ok:
		return state
	}
	if r := readyCondition(node); r == nil || r.Status != corev1.ConditionTrue {
		if stale, _ := a.heartbeat(node); stale {
			return state + ", which stopped heartbeating"
		}
		return state + ", which is NotReady"
	}
	return state + " (node Ready)"
}

func objectState(m metav1.Object) string {
	if m.GetDeletionTimestamp() == nil {
		return "not being deleted"
	}
	if len(m.GetFinalizers()) == 0 {
		return "Deleting"
	}
	return "Deleting, finalizers [" + strings.Join(m.GetFinalizers(), ", ") + "]"
}

func (a *analysis) podBlocker(m *metav1.ObjectMeta) blocker {
	return blocker{ref: checks.Ref("v1", "Pod", m), state: a.podState(m)}
}

func objectBlocker(o snapshot.Object) blocker {
	return blocker{ref: checks.Ref(o.APIVersion(), o.Kind, o.Meta), state: objectState(o.Meta)}
}

// blockerLines renders the blockers as evidence, the first few one a line.
func blockerLines(what string, bs []blocker) []string {
	var out []string
	for i, b := range bs {
		if i == maxBlockersInLines {
			out = append(out, fmt.Sprintf("and %d more %s", len(bs)-i, what))
			break
		}
		out = append(out, fmt.Sprintf("%s: %s, %s", what, b.name(), b.state))
	}
	return out
}

// blockerList names the blockers in a sentence, the first few of them.
func blockerList(bs []blocker) string {
	var parts []string
	for i, b := range bs {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("%d more", len(bs)-i))
			break
		}
		parts = append(parts, b.name()+" ("+b.state+")")
	}
	return strings.Join(parts, ", ")
}

// heldByCondition checks, for each built-in finalizer of the subject whose controller waits on
// other objects, whether that condition holds; the first one that does not is the finding. The
// blockers are kept for the chain (see chains.go).
func (a *analysis) heldByCondition(subj subject) (checks.Draft, bool) {
	for _, fin := range subj.meta.GetFinalizers() {
		var (
			d  checks.Draft
			bs []blocker
			ok bool
		)
		switch {
		case fin == finPVCProtection && subj.group == "" && subj.kind == "PersistentVolumeClaim":
			d, bs, ok = a.claimInUse(subj)
		case fin == finPVProtection && subj.group == "" && subj.kind == "PersistentVolume":
			d, bs, ok = a.volumeBound(subj)
		case fin == finForeground || fin == finOrphan:
			d, bs, ok = a.dependentsRemaining(subj, fin)
		case fin == finCRDCleanup && subj.group == "apiextensions.k8s.io" && subj.kind == "CustomResourceDefinition":
			d, bs, ok = a.instancesRemaining(subj)
		}
		if ok {
			a.hold(subj, bs)
			return d, true
		}
	}
	return checks.Draft{}, false
}
