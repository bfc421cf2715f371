package terminating

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// pass holds what one run of the check shares between objects.
type pass struct {
	s         *snapshot.Snapshot
	info      checks.Info
	now       time.Time
	threshold time.Duration

	// Looked up once per run: a cluster can have thousands of stuck objects.
	objByUID     map[types.UID]snapshot.Object
	kwok         *kwokController
	kwokLooked   bool
	allWorkloads []workload
	// progress memoizes progressing (held.go) by UID.
	progress map[types.UID]bool
	// failing are the webhooks that reject what they are called for, judged once (webhooks.go).
	failing *failingWebhooks
}

// subject is the object a finding is about, whatever its resource.
type subject struct {
	ref  report.ObjectRef
	kind string
	// group is the object's API group ("" for the core group); resource the resource it is
	// written through.
	group    string
	resource schema.GroupVersionResource
	meta     metav1.Object
	// noun is how summaries name the state: "Terminating" for pods, "Deleting" otherwise.
	noun string
}

// target is what the rules judge: the subject with the owners of its finalizers (resolved once,
// when a rule first asks) and when its deletion was due; for a pod, the pod and whether it was
// read in full; for a namespace, the namespace.
type target struct {
	subject
	owners *ownerCache
	since  time.Time
	pod    *corev1.Pod
	full   bool
	ns     *corev1.Namespace
}

// podRules diagnose a pod being deleted, root causes most specific first.
var podRules = []checks.Rule[*pass, *target]{
	(*pass).nodeMissing,
	(*pass).nodeNotReady,
	(*pass).kwokStageNotRun,
	(*pass).kruisePreDelete,
	(*pass).kruiseHookBypassed,
	(*pass).ownerPaused,
	(*pass).readdRace,
	// While the grace period is above 0 the kubelet has not confirmed the containers stopped:
	// finalizers matter only once it has, so it comes before them.
	(*pass).kubeletKillFailing,
	(*pass).jobTracking,
	(*pass).webhookBlocksRemoval,
	(*pass).finalizerOwners,
}

// objectRules diagnose an object of any other resource being deleted.
var objectRules = []checks.Rule[*pass, *target]{
	(*pass).ownerPaused,
	(*pass).readdRace,
	(*pass).heldByCondition,
	(*pass).loadBalancerCleanup,
	(*pass).volumeDetach,
	(*pass).webhookBlocksRemoval,
	(*pass).finalizerOwners,
}

func (a *pass) read(in snapshot.Input) bool {
	_, unread := a.s.Unread[in]
	return !unread
}

// pods returns once each pod in scope that is being deleted or that OpenKruise holds in
// PreparingDelete (the only ones the check can report), the full object when it was read.
func (a *pass) pods() []*corev1.Pod {
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
func (a *pass) overdue(m metav1.Object) (time.Time, bool) {
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
func (a *pass) deletionEvidence(m metav1.Object) string {
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
func (a *pass) finish(subj subject, since time.Time, f checks.Draft, node string) report.Finding {
	f.Object = subj.ref
	f.Owner = checks.OwnerRef(subj.meta.GetNamespace(), snapshot.ControllerOf(subj.meta))
	f.Since = since
	f.Node = node
	f.Fixes = withoutProtectionRemoval(f.Fixes)
	if subj.meta.GetDeletionTimestamp() != nil {
		f.Evidence = append([]string{a.deletionEvidence(subj.meta)}, f.Evidence...)
	}
	return checks.NewFinding(a.info, f)
}

func podSubject(p *corev1.Pod) subject {
	return subject{ref: checks.Ref("v1", "Pod", p), kind: "Pod", meta: p, noun: "Terminating", resource: corev1.SchemeGroupVersion.WithResource("pods")}
}

// pod diagnoses one pod.
func (a *pass) pod(p *corev1.Pod) (report.Finding, bool) {
	subj := podSubject(p)
	t := &target{subject: subj, pod: p}
	if p.DeletionTimestamp == nil {
		// OpenKruise decided to delete the pod but its preDelete hook holds it back.
		since, ok := lifecycleSince(p)
		if !ok || a.now.Before(since.Add(a.threshold)) {
			return report.Finding{}, false
		}
		t.since = since
		f, ok := a.kruisePreDelete(t)
		if !ok {
			return report.Finding{}, false
		}
		return a.finish(subj, since, f, p.Spec.NodeName), true
	}
	since, due := a.overdue(p)
	if !due {
		return report.Finding{}, false
	}
	_, t.full = a.s.FullPod(p.UID)
	t.since, t.owners = since, newOwnerCache(a, subj)
	f, ok := checks.Diagnose(podRules, a, t)
	if !ok {
		return report.Finding{}, false
	}
	return a.finish(subj, since, f, p.Spec.NodeName), true
}

// object diagnoses an object of any other resource.
func (a *pass) object(o snapshot.Object) (report.Finding, bool) {
	if o.Meta == nil || len(o.Meta.Finalizers) == 0 {
		return report.Finding{}, false // nothing holds it: it is gone in a moment
	}
	since, due := a.overdue(o.Meta)
	if !due {
		return report.Finding{}, false
	}
	subj := subject{ref: checks.Ref(o.APIVersion(), o.Kind, o.Meta), kind: o.Kind, group: o.Resource.Group, meta: o.Meta, noun: "Deleting",
		resource: o.Resource}
	if a.progressing(subj) {
		return report.Finding{}, false
	}
	f, ok := checks.Diagnose(objectRules, a, &target{subject: subj, owners: newOwnerCache(a, subj), since: since})
	if !ok {
		return report.Finding{}, false
	}
	return a.finish(subj, since, f, ""), true
}
