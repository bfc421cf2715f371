package terminating

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

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
	// leaving: it is being deleted and not overdue yet, so the condition is on its way to hold.
	leaving bool
}

func (b blocker) name() string { return checks.RefName(b.ref) }

// podState says what a pod is doing, as far as the snapshot shows: phase, deletion, and its node.
func (a *pass) podState(m *metav1.ObjectMeta) string {
	p, full := a.s.FullPod(m.UID)
	if !full {
		if m.DeletionTimestamp != nil {
			return "Terminating (not read in full)"
		}
		return "not read in full"
	}
	state := string(p.Status.Phase)
	switch dt := p.DeletionTimestamp; {
	case dt != nil && a.now.Before(dt.Time):
		state = "Terminating, grace period ends in " + checks.Age(dt.Time, a.now)
	case dt != nil:
		state = "Terminating for " + checks.Age(a.now, dt.Time)
	}
	if p.Spec.NodeName == "" {
		return state + ", not scheduled"
	}
	state += " on node " + p.Spec.NodeName
	node, ok := a.s.Node(p.Spec.NodeName)
	switch {
	case a.s.NodeAbsent(p.Spec.NodeName):
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

func (a *pass) podBlocker(m *metav1.ObjectMeta) blocker {
	return blocker{ref: checks.Ref("v1", "Pod", m), state: a.podState(m), leaving: a.leaving(m)}
}

// objectBlocker is an object a condition waits on; one past due is still leaving when what it
// waits on in turn is (a ReplicaSet whose pods are in their grace period).
func (a *pass) objectBlocker(o snapshot.Object) blocker {
	leaving := a.leaving(o.Meta) || o.Meta.DeletionTimestamp != nil &&
		a.progressing(subject{kind: o.Kind, group: o.Resource.Group, meta: o.Meta})
	return blocker{ref: checks.Ref(o.APIVersion(), o.Kind, o.Meta), state: objectState(o.Meta), leaving: leaving}
}

// leaving says whether an object is being deleted and not yet overdue.
func (a *pass) leaving(m metav1.Object) bool {
	_, due := a.overdue(m)
	return m.GetDeletionTimestamp() != nil && !due
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
// other objects, whether that condition holds; the first one that does not is the finding, and
// what it waits on are its blockers, followed to the root across the scan (checks.RootCause
// ChainsToRoot).
func (a *pass) heldByCondition(t *target) (checks.Draft, bool) {
	d, bs, ok := a.condition(t.subject)
	for _, b := range bs {
		d.BlockedBy = append(d.BlockedBy, blockRef(b.ref))
	}
	return d, ok
}

// blockRef names an object as something a finding waits on.
func blockRef(o report.ObjectRef) report.BlockRef {
	return report.BlockRef{APIVersion: o.APIVersion, Kind: o.Kind, Namespace: o.Namespace, Name: o.Name}
}

// withoutProtectionRemoval drops any removal of a protection finalizer: its controller removes
// it once its condition holds, and removing it earlier deletes what is still in use.
func withoutProtectionRemoval(fixes []report.Fix) []report.Fix {
	out := fixes[:0]
	for _, f := range fixes {
		if f.Action == checks.ActionRemoveFinalizer && protectionFinalizers[f.Params["finalizer"]] {
			continue
		}
		out = append(out, f)
	}
	return out
}

// progressing says whether every object the subject's built-in condition waits on is itself on
// its way out within the threshold (a foreground deletion whose pods are in their grace period):
// the controller is working, nothing is stuck yet.
func (a *pass) progressing(subj subject) bool {
	uid := subj.meta.GetUID()
	if done, ok := a.progress[uid]; ok {
		return done // a chain that loops back counts as not progressing
	}
	if a.progress == nil {
		a.progress = map[types.UID]bool{}
	}
	a.progress[uid] = false
	_, bs, ok := a.condition(subj)
	yes := ok
	for _, b := range bs {
		yes = yes && b.leaving
	}
	a.progress[uid] = yes
	return yes
}

// condition evaluates the first built-in finalizer of the subject whose controller's condition
// on other objects does not hold.
func (a *pass) condition(subj subject) (checks.Draft, []blocker, bool) {
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
			return d, bs, true
		}
	}
	return checks.Draft{}, nil, false
}
