package checks

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// CheckStuckTerminating finds pods, namespaces and other objects whose deletion does not finish.
const CheckStuckTerminating = "stuck-terminating"

// Root causes of stuck-terminating (contract.md).
const (
	RCNodeMissing               = "node-missing"
	RCNodeNotReady              = "node-not-ready"
	RCKwokStageNotRun           = "kwok-stage-not-run"
	RCKruisePreDeleteHook       = "kruise-predelete-hook-pending"
	RCOwnerPaused               = "owner-paused"
	RCFinalizerReaddRace        = "finalizer-readd-race"
	RCFinalizerOwnerMissing     = "finalizer-owner-missing"
	RCFinalizerOwnerNotActing   = "finalizer-owner-not-acting"
	RCKubeletKillFailing        = "kubelet-kill-failing"
	RCNamespaceDiscoveryFailed  = "namespace-discovery-failed"
	RCNamespaceContentRemaining = "namespace-content-remaining"
)

// StuckTerminating is the stuck-terminating check. For every object whose deletion is overdue it
// names who is supposed to finish the deletion (the kubelet, kwok, a finalizer's controller, the
// namespace controller) and why that one has not.
type StuckTerminating struct{}

// Info describes the check and its root causes.
func (StuckTerminating) Info() Info {
	return Info{
		ID:    CheckStuckTerminating,
		Title: "Deletion that does not finish",
		Description: "Pods, namespaces and objects of any other listable resource whose deletion has not finished " +
			"past deletionTimestamp plus the threshold. The apiserver sets deletionTimestamp to the delete request " +
			"time plus the grace period, so the threshold counts from the end of the grace period. Each finding " +
			"names who must finish the deletion (the pod's kubelet, kwok, the controller owning a finalizer, the " +
			"namespace controller) and the evidence of why it has not.",
		Threshold: 5 * time.Minute,
		RootCauses: []RootCause{
			{ID: RCNodeMissing, Title: "The pod's node no longer exists", Severity: report.SeverityError,
				Description: "The pod is bound to a node whose Node object does not exist. No kubelet will ever confirm " +
					"that its containers stopped. PodGC in kube-controller-manager force-deletes such pods after about " +
					"40 seconds, so a pod still there means PodGC is not running, or finalizers hold the pod after " +
					"the force delete.",
				References: []string{"kubernetes/kubernetes pkg/controller/podgc"},
				Actions:    []string{ActionForceDelete, ActionRemoveFinalizer}},
			{ID: RCNodeNotReady, Title: "The pod's node stopped heartbeating", Severity: report.SeverityError,
				Description: "The pod is bound to a node whose Ready condition is False or Unknown and whose Lease in " +
					"kube-node-lease has not been renewed past the threshold: its kubelet is gone, so nothing confirms " +
					"that the containers stopped and the apiserver keeps the pod. Force-deleting frees the pod's name and " +
					"lets its controller replace it, but if the node is only partitioned the old containers keep running; " +
					"for pods with persistent volumes or a stable identity (StatefulSet) that can mean two writers.",
				References: []string{"kubernetes/enhancements#2268"},
				Actions:    []string{ActionForceDelete}},
			{ID: RCKwokStageNotRun, Title: "kwok did not run the pod's deletion stage", Severity: report.SeverityError,
				Description: "The pod runs on a node that kwok simulates. kwok plays the kubelet: its pod stages remove " +
					"its finalizer kwok.x-k8s.io/fake and delete the pod. That stage has not run. kwok v0.5.0 cancels " +
					"delayed stages when a stale re-listed copy of the pod arrives (kubernetes-sigs/kwok#958, fixed in " +
					"v0.5.1); other versions miss it when their stages do not match the pod. A restarted kwok re-plays " +
					"the stages; removing the finalizer lets the deletion finish.",
				Actions: []string{ActionRemoveFinalizer}},
			{ID: RCKruisePreDeleteHook, Title: "An OpenKruise preDelete hook is not released", Severity: report.SeverityWarning,
				Description: "The pod is in lifecycle state PreparingDelete and its workload's spec.lifecycle.preDelete " +
					"hook finalizers (or labels) are still on it. OpenKruise waits until the hook's owner, the component " +
					"that does the pre-delete work (draining, deregistering, backing up), removes them. Removing them by " +
					"hand skips that work, so no fix is offered: the hook owner must act.",
				References: []string{"openkruise/kruise pkg/util/lifecycle/lifecycle_utils.go"}},
			{ID: RCOwnerPaused, Title: "The object or its Cluster API owner is paused", Severity: report.SeverityWarning,
				Description: "Cluster API controllers skip paused objects (annotation cluster.x-k8s.io/paused, or " +
					"Cluster spec.paused), so nothing removes the finalizers of a paused object being deleted. " +
					"clusterctl move pauses the source Cluster and marks objects it deletes with " +
					"clusterctl.cluster.x-k8s.io/delete-for-move; a leftover annotation marks an interrupted move. " +
					"Finish the move, or unpause the object if the pause is no longer wanted."},
			{ID: RCFinalizerReaddRace, Title: "A controller keeps re-adding a finalizer", Severity: report.SeverityError,
				Description: "Warning events say \"no new finalizers can be added if the object is being deleted\": a " +
					"controller tries to add its finalizer to the object after its deletion began, and the apiserver " +
					"refuses with 422. The controller has not noticed the deletion, so it does not do its cleanup " +
					"either. Cluster API hit this in clusterctl move (kubernetes-sigs/cluster-api#11812, fixed in " +
					"v1.9.5 and v1.10.0)."},
			{ID: RCFinalizerOwnerMissing, Title: "A finalizer's owner is not installed", Severity: report.SeverityError,
				Description: "The object waits for a finalizer whose controller does not run in the cluster: the owner " +
					"is taken from a table of known finalizers, or else from the field manager that added the finalizer " +
					"(metadata.managedFields), and no Deployment of it was found. Nothing will remove the finalizer; " +
					"removing it by hand skips the cleanup it guards, which the fix says.",
				Actions: []string{ActionRemoveFinalizer}},
			{ID: RCFinalizerOwnerNotActing, Title: "A finalizer's owner has not removed it", Severity: report.SeverityWarning,
				Description: "The controller that owns a remaining finalizer runs (or is built into the control plane), " +
					"but has not finished its cleanup and removed the finalizer. Its Warning events and logs say why. " +
					"No automatic fix: removing the finalizer while its owner is alive skips cleanup the owner still " +
					"intends to do."},
			{ID: RCKubeletKillFailing, Title: "The kubelet cannot stop the pod", Severity: report.SeverityError,
				Description: "The pod's node is alive, but its kubelet has not confirmed that the containers stopped " +
					"(it deletes the pod with grace period 0 when they have). Events such as FailedKillPod, " +
					"FailedPreStopHook, ExceededGracePeriod or FailedUnMount, or containers still running, say what it " +
					"is stuck on. Look at the kubelet and container runtime on that node; force-deleting would leave " +
					"the containers running."},
			{ID: RCNamespaceDiscoveryFailed, Title: "Namespace deletion blocked by API discovery", Severity: report.SeverityError,
				Description: "The namespace controller must list every API group to prove a namespace is empty before it " +
					"removes the kubernetes finalizer. An aggregated APIService that is unavailable makes discovery " +
					"fail (condition NamespaceDeletionDiscoveryFailure), which blocks the deletion of every namespace. " +
					"Fix the service behind the APIService, or delete the APIService if that API is gone. No fix " +
					"finalizes the namespace by force: that would leave its content behind in etcd.",
				References: []string{"kubernetes/kubernetes#60807", "kubernetes/kubernetes#75788"}},
			{ID: RCNamespaceContentRemaining, Title: "Namespace content is not deleted yet", Severity: report.SeverityWarning,
				Description: "The namespace controller deleted what it could, but objects remain (conditions " +
					"NamespaceContentRemaining, NamespaceFinalizersRemaining, NamespaceDeletionContentFailure). The " +
					"namespace goes away when they do; their own findings say who holds them. No fix finalizes the " +
					"namespace by force."},
		},
		Needs: []Need{
			{Input: snapshot.InputPods, PodAnnotations: []string{kruise.AnnotationLifecycleTime}},
			{Input: snapshot.InputNodes, Optional: true},
			{Input: snapshot.InputNodeLeases, Optional: true},
			{Input: snapshot.InputEvents, Optional: true},
			{Input: snapshot.InputNamespaces, Optional: true},
			{Input: snapshot.InputAPIServices, Optional: true},
			{Input: snapshot.InputObjects, Optional: true},
			{Input: snapshot.InputControllers, Optional: true},
			{Input: snapshot.InputClusterAPI, Optional: true},
			{Input: snapshot.InputKruiseWorkloads, Optional: true},
		},
	}
}

// PodCandidates returns the pods whose full objects the check reads: those being deleted and
// those OpenKruise is preparing to delete. Both are visible in metadata.
func (StuckTerminating) PodCandidates(s *snapshot.Snapshot) []types.UID {
	var out []types.UID
	for _, p := range s.Pods {
		if p.DeletionTimestamp != nil || p.Labels[kruise.LabelLifecycleState] == kruise.StatePreparingDelete {
			out = append(out, p.UID)
		}
	}
	return out
}

// Run reports every overdue deletion with its most specific root cause.
func (c StuckTerminating) Run(s *snapshot.Snapshot, threshold time.Duration) []report.Finding {
	a := &termAnalysis{s: s, info: c.Info(), now: s.Now, threshold: threshold}
	var out []report.Finding
	for _, p := range a.pods() {
		if f, ok := a.pod(p); ok {
			out = append(out, f)
		}
	}
	for _, o := range s.Objects {
		if o.Resource.Group == "" && (o.Resource.Resource == "pods" || o.Resource.Resource == "namespaces") {
			continue // read through their own inputs
		}
		if f, ok := a.object(o); ok {
			out = append(out, f)
		}
	}
	for _, ns := range s.Namespaces {
		if f, ok := a.namespace(ns); ok {
			out = append(out, f)
		}
	}
	return out
}

// termAnalysis holds what one run of the check shares between objects.
type termAnalysis struct {
	s         *snapshot.Snapshot
	info      Info
	now       time.Time
	threshold time.Duration

	// Looked up once per run: a cluster can have thousands of stuck objects.
	objByUID   map[types.UID]snapshot.Object
	kwok       *stKwokController
	kwokLooked bool
}

// stSubject is the object a finding is about, whatever its resource.
type stSubject struct {
	ref  report.ObjectRef
	kind string
	// group is the object's API group ("" for the core group).
	group string
	meta  metav1.Object
	// noun is how summaries name the state: "Terminating" for pods, "Deleting" otherwise.
	noun string
}

func (a *termAnalysis) read(in snapshot.Input) bool {
	_, unread := a.s.Unread[in]
	return !unread
}

// pods returns once each pod in scope that is being deleted or that OpenKruise holds in
// PreparingDelete (the only ones the check can report), the full object when it was read.
func (a *termAnalysis) pods() []*corev1.Pod {
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
func (a *termAnalysis) overdue(m metav1.Object) (time.Time, bool) {
	dt := m.GetDeletionTimestamp()
	if dt == nil {
		return time.Time{}, false
	}
	return dt.Time, !a.now.Before(dt.Add(a.threshold))
}

func stGraceSeconds(m metav1.Object) int64 {
	if g := m.GetDeletionGracePeriodSeconds(); g != nil {
		return *g
	}
	return 0
}

// deletionEvidence is the first evidence line of every finding: when the deletion was due.
func (a *termAnalysis) deletionEvidence(m metav1.Object) string {
	dt := m.GetDeletionTimestamp()
	line := fmt.Sprintf("deletionTimestamp %s (%s ago)", dt.UTC().Format(time.RFC3339), Age(a.now, dt.Time))
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
func (a *termAnalysis) finish(subj stSubject, since time.Time, f Draft, node string) report.Finding {
	f.Object = subj.ref
	f.Owner = OwnerRef(subj.meta.GetNamespace(), snapshot.ControllerOf(subj.meta))
	f.Since = since
	f.Node = node
	if subj.meta.GetDeletionTimestamp() != nil {
		f.Evidence = append([]string{a.deletionEvidence(subj.meta)}, f.Evidence...)
	}
	return NewFinding(a.info, f)
}

func stPodSubject(p *corev1.Pod) stSubject {
	return stSubject{ref: Ref("v1", "Pod", p), kind: "Pod", meta: p, noun: "Terminating"}
}

// pod diagnoses one pod, root causes most specific first.
func (a *termAnalysis) pod(p *corev1.Pod) (report.Finding, bool) {
	subj := stPodSubject(p)
	if p.DeletionTimestamp == nil {
		// OpenKruise decided to delete the pod but its preDelete hook holds it back.
		since, ok := stLifecycleSince(p)
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
	owners := stNewOwnerCache(a, subj)
	steps := []func() (Draft, bool){
		func() (Draft, bool) { return a.nodeMissing(p, full, owners) },
		func() (Draft, bool) { return a.nodeNotReady(p, full) },
		func() (Draft, bool) { return a.kwokStageNotRun(p, full) },
		func() (Draft, bool) { return a.kruisePreDelete(p, since) },
		func() (Draft, bool) { return a.ownerPaused(subj, owners) },
		func() (Draft, bool) { return a.readdRace(subj, owners) },
		// While the grace period is above 0 the kubelet has not confirmed the containers stopped:
		// finalizers matter only once it has, so it comes before them.
		func() (Draft, bool) { return a.kubeletKillFailing(p, full, owners) },
		func() (Draft, bool) { return a.finalizerOwners(subj, owners) },
	}
	for _, step := range steps {
		if f, ok := step(); ok {
			return a.finish(subj, since, f, p.Spec.NodeName), true
		}
	}
	return report.Finding{}, false
}

// object diagnoses an object of any other resource.
func (a *termAnalysis) object(o snapshot.Object) (report.Finding, bool) {
	if o.Meta == nil || len(o.Meta.Finalizers) == 0 {
		return report.Finding{}, false // nothing holds it: it is gone in a moment
	}
	since, due := a.overdue(o.Meta)
	if !due {
		return report.Finding{}, false
	}
	subj := stSubject{ref: Ref(o.APIVersion(), o.Kind, o.Meta), kind: o.Kind, group: o.Resource.Group, meta: o.Meta, noun: "Deleting"}
	owners := stNewOwnerCache(a, subj)
	for _, step := range []func() (Draft, bool){
		func() (Draft, bool) { return a.ownerPaused(subj, owners) },
		func() (Draft, bool) { return a.readdRace(subj, owners) },
		func() (Draft, bool) { return a.finalizerOwners(subj, owners) },
	} {
		if f, ok := step(); ok {
			return a.finish(subj, since, f, ""), true
		}
	}
	return report.Finding{}, false
}

// stLifecycleSince is when a pod entered its current OpenKruise lifecycle state.
func stLifecycleSince(p *corev1.Pod) (time.Time, bool) {
	if p.Labels[kruise.LabelLifecycleState] != kruise.StatePreparingDelete {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339, p.Annotations[kruise.AnnotationLifecycleTime])
	if err != nil {
		return time.Time{}, false
	}
	return t, true
}

// kruisePreDelete reports a pod held in PreparingDelete by its workload's preDelete hook.
func (a *termAnalysis) kruisePreDelete(p *corev1.Pod, since time.Time) (Draft, bool) {
	if p.Labels[kruise.LabelLifecycleState] != kruise.StatePreparingDelete {
		return Draft{}, false
	}
	ref := snapshot.ControllerOf(p)
	if ref == nil {
		return Draft{}, false
	}
	w, ok := a.s.Workload(ref.UID)
	if !ok || w.Lifecycle.PreDelete.Empty() {
		return Draft{}, false
	}
	hook := w.Lifecycle.PreDelete
	var fins, labels []string
	for _, f := range hook.FinalizersHandler {
		if stHasString(p.Finalizers, f) {
			fins = append(fins, f)
		}
	}
	for _, k := range stSortedMapKeys(hook.LabelsHandler) {
		if v, ok := p.Labels[k]; ok && v == hook.LabelsHandler[k] {
			labels = append(labels, k+"="+v)
		}
	}
	// Once the pod is deleted only finalizers can hold it; before, labels hold OpenKruise back too.
	if len(fins) == 0 && (p.DeletionTimestamp != nil || len(labels) == 0) {
		return Draft{}, false
	}
	wl := fmt.Sprintf("%s %s/%s", w.Kind, w.Namespace, w.Name)
	ev := []string{}
	if t, ok := stLifecycleSince(p); ok {
		ev = append(ev, fmt.Sprintf("label %s=%s since %s (%s ago)", kruise.LabelLifecycleState, kruise.StatePreparingDelete,
			t.UTC().Format(time.RFC3339), Age(a.now, t)))
	} else {
		ev = append(ev, fmt.Sprintf("label %s=%s", kruise.LabelLifecycleState, kruise.StatePreparingDelete))
	}
	ev = append(ev, fmt.Sprintf("%s spec.lifecycle.preDelete: finalizersHandler [%s], labelsHandler {%s}", wl,
		strings.Join(hook.FinalizersHandler, ", "), stJoinLabels(hook.LabelsHandler)))
	for _, f := range fins {
		line := "hook finalizer " + f + " is still on the pod"
		if mgrs := stFinalizerManagers(p, f); len(mgrs) > 0 {
			line += " (added by field manager " + strings.Join(stManagerNames(mgrs), ", ") + ")"
		}
		ev = append(ev, line)
	}
	for _, l := range labels {
		ev = append(ev, "hook label "+l+" is still on the pod")
	}
	if t, ok := stLifecycleSince(p); ok {
		since = t
	}
	held := append(append([]string{}, fins...), labels...)
	state := "is being deleted"
	if p.DeletionTimestamp == nil {
		state = "was chosen for deletion (PreparingDelete)"
	}
	return Draft{
		RootCause: RCKruisePreDeleteHook,
		Summary: fmt.Sprintf("PreparingDelete for %s: preDelete hook %s of %s not released", Age(a.now, since),
			strings.Join(held, ", "), wl),
		Message: fmt.Sprintf("The pod %s, and %s has a preDelete lifecycle hook: OpenKruise lets the pod go only when "+
			"the hook's owner has done its pre-delete work and removed %s. The hook owner has not done so.",
			state, wl, strings.Join(held, ", ")),
		Evidence: ev,
	}, true
}

func stHasString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func stSortedMapKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func stJoinLabels(m map[string]string) string {
	var parts []string
	for _, k := range stSortedMapKeys(m) {
		parts = append(parts, k+": "+m[k])
	}
	return strings.Join(parts, ", ")
}

// stOneLine shortens a message for an evidence line.
func stOneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > max {
		return s[:max] + "..."
	}
	return s
}

// warningEvents renders the newest Warning events about an object, at most n.
func (a *termAnalysis) warningEvents(kind string, m metav1.Object, n int) []string {
	var lines []string
	evs := a.s.EventsFor(kind, m.GetNamespace(), m.GetName(), m.GetUID())
	for i := len(evs) - 1; i >= 0 && len(lines) < n; i-- {
		e := evs[i]
		if e.Type != corev1.EventTypeWarning {
			continue
		}
		lines = append(lines, fmt.Sprintf("Warning %s from %s (x%d, %s ago): %s", e.Reason, stEventReporter(e),
			stEventCount(e), Age(a.now, snapshot.EventTime(e)), stOneLine(e.Message, 200)))
	}
	return lines
}

// stEventReporter names the component that emitted an event.
func stEventReporter(e *corev1.Event) string {
	switch {
	case e.ReportingController != "":
		return e.ReportingController
	case e.Source.Component != "":
		return e.Source.Component
	}
	return "an unnamed component"
}

// stEventCount is how many times an event was seen.
func stEventCount(e *corev1.Event) int32 {
	n := e.Count
	if e.Series != nil && e.Series.Count > n {
		n = e.Series.Count
	}
	if n < 1 {
		n = 1
	}
	return n
}
