package terminating

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// analysis holds what one run of the check shares between objects.
type analysis struct {
	s         *snapshot.Snapshot
	info      checks.Info
	now       time.Time
	threshold time.Duration

	// Looked up once per run: a cluster can have thousands of stuck objects.
	objByUID     map[types.UID]snapshot.Object
	kwok         *kwokController
	kwokLooked   bool
	allWorkloads []workload
	// held are the blockers of each subject a built-in controller's condition holds (held.go).
	held map[types.UID][]blocker
	// progress memoizes progressing (held.go) by UID.
	progress map[types.UID]bool
}

// subject is the object a finding is about, whatever its resource.
type subject struct {
	ref  report.ObjectRef
	kind string
	// group is the object's API group ("" for the core group).
	group string
	meta  metav1.Object
	// noun is how summaries name the state: "Terminating" for pods, "Deleting" otherwise.
	noun string
}

func (a *analysis) read(in snapshot.Input) bool {
	_, unread := a.s.Unread[in]
	return !unread
}

// pods returns once each pod in scope that is being deleted or that OpenKruise holds in
// PreparingDelete (the only ones the check can report), the full object when it was read.
func (a *analysis) pods() []*corev1.Pod {
	seen := map[types.UID]bool{}
	var out []*corev1.Pod
	add := func(m *metav1.ObjectMeta) {
		if seen[m.UID] || (m.DeletionTimestamp == nil && m.Labels[kruise.LabelLifecycleState] != kruise.StatePreparingDelete) {
			return
		}
		seen[m.UID] = true
		p, full := a.s.FullPod(m.UID)
		if !full {
			p = &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: *m}
		}
		out = append(out, p)
	}
	for _, m := range a.s.Pods {
		add(m)
	}
	for _, p := range a.s.FullPods {
		add(&p.ObjectMeta)
	}
	return out
}

// overdue returns when the deletion was due (deletionTimestamp: the request time plus the grace
// period) and whether it is past due by the threshold.
func (a *analysis) overdue(m metav1.Object) (time.Time, bool) {
	dt := m.GetDeletionTimestamp()
	if dt == nil {
		return time.Time{}, false
	}
	return dt.Time, !a.now.Before(dt.Add(a.threshold))
}

func graceSeconds(m metav1.Object) int64 {
	if g := m.GetDeletionGracePeriodSeconds(); g != nil {
		return *g
	}
	return 0
}

// deletionEvidence is the first evidence line of every finding: when the deletion was due.
func (a *analysis) deletionEvidence(m metav1.Object) string {
	dt := m.GetDeletionTimestamp()
	line := fmt.Sprintf("deletionTimestamp %s (%s ago)", dt.UTC().Format(time.RFC3339), checks.Age(a.now, dt.Time))
	if g := m.GetDeletionGracePeriodSeconds(); g != nil {
		line += fmt.Sprintf(", deletionGracePeriodSeconds %d", *g)
	}
	if fins := m.GetFinalizers(); len(fins) > 0 {
		line += ", finalizers [" + strings.Join(fins, ", ") + "]"
	} else {
		line += ", no finalizers"
	}
	return line
}

// finish completes a finding for the subject with the fields every finding shares.
func (a *analysis) finish(subj subject, since time.Time, f checks.Draft, node string) report.Finding {
	f.Object = subj.ref
	f.Owner = checks.OwnerRef(subj.meta.GetNamespace(), snapshot.ControllerOf(subj.meta))
	f.Since = since
	f.Node = node
	if subj.meta.GetDeletionTimestamp() != nil {
		f.Evidence = append([]string{a.deletionEvidence(subj.meta)}, f.Evidence...)
	}
	return checks.NewFinding(a.info, f)
}

func podSubject(p *corev1.Pod) subject {
	return subject{ref: checks.Ref("v1", "Pod", p), kind: "Pod", meta: p, noun: "Terminating"}
}

// pod diagnoses one pod, root causes most specific first.
func (a *analysis) pod(p *corev1.Pod) (report.Finding, bool) {
	subj := podSubject(p)
	if p.DeletionTimestamp == nil {
		// OpenKruise decided to delete the pod but its preDelete hook holds it back.
		since, ok := lifecycleSince(p)
		if !ok || a.now.Before(since.Add(a.threshold)) {
			return report.Finding{}, false
		}
		f, ok := a.kruisePreDelete(p, since)
		if !ok {
			return report.Finding{}, false
		}
		return a.finish(subj, since, f, p.Spec.NodeName), true
	}
	since, due := a.overdue(p)
	if !due {
		return report.Finding{}, false
	}
	_, full := a.s.FullPod(p.UID)
	owners := newOwnerCache(a, subj)
	steps := []func() (checks.Draft, bool){
		func() (checks.Draft, bool) { return a.nodeMissing(p, full, owners) },
		func() (checks.Draft, bool) { return a.nodeNotReady(p, full) },
		func() (checks.Draft, bool) { return a.kwokStageNotRun(p, full) },
		func() (checks.Draft, bool) { return a.kruisePreDelete(p, since) },
		func() (checks.Draft, bool) { return a.kruiseHookBypassed(p, owners) },
		func() (checks.Draft, bool) { return a.ownerPaused(subj, owners) },
		func() (checks.Draft, bool) { return a.readdRace(subj, owners) },
		// While the grace period is above 0 the kubelet has not confirmed the containers stopped:
		// finalizers matter only once it has, so it comes before them.
		func() (checks.Draft, bool) { return a.kubeletKillFailing(p, full, owners) },
		func() (checks.Draft, bool) { return a.jobTracking(p, owners) },
		func() (checks.Draft, bool) { return a.finalizerOwners(subj, owners) },
	}
	for _, step := range steps {
		if f, ok := step(); ok {
			return a.finish(subj, since, f, p.Spec.NodeName), true
		}
	}
	return report.Finding{}, false
}

// object diagnoses an object of any other resource.
func (a *analysis) object(o snapshot.Object) (report.Finding, bool) {
	if o.Meta == nil || len(o.Meta.Finalizers) == 0 {
		return report.Finding{}, false // nothing holds it: it is gone in a moment
	}
	since, due := a.overdue(o.Meta)
	if !due {
		return report.Finding{}, false
	}
	subj := subject{ref: checks.Ref(o.APIVersion(), o.Kind, o.Meta), kind: o.Kind, group: o.Resource.Group, meta: o.Meta, noun: "Deleting"}
	if a.progressing(subj) {
		return report.Finding{}, false
	}
	owners := newOwnerCache(a, subj)
	for _, step := range []func() (checks.Draft, bool){
		func() (checks.Draft, bool) { return a.ownerPaused(subj, owners) },
		func() (checks.Draft, bool) { return a.readdRace(subj, owners) },
		func() (checks.Draft, bool) { return a.heldByCondition(subj) },
		func() (checks.Draft, bool) { return a.loadBalancerCleanup(subj) },
		func() (checks.Draft, bool) { return a.volumeDetach(subj) },
		func() (checks.Draft, bool) { return a.finalizerOwners(subj, owners) },
	} {
		if f, ok := step(); ok {
			return a.finish(subj, since, f, ""), true
		}
	}
	return report.Finding{}, false
}
