package kruiselifecycle

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/checktest"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
)

const (
	hookFinalizer = "example.com/registered"
	hookLabel     = "example.com/ready"
)

// hookBoth is a preNormal hook with a finalizer and a label, as a service-registration
// controller would use it.
var hookBoth = map[string]any{"preNormal": map[string]any{
	"finalizersHandler": []any{hookFinalizer}, "labelsHandler": map[string]any{hookLabel: "true"}}}

var hookFinalizerOnly = map[string]any{"preNormal": map[string]any{"finalizersHandler": []any{hookFinalizer}}}

var hookLabelOnly = map[string]any{"preNormal": map[string]any{"labelsHandler": map[string]any{hookLabel: "true"}}}

// steady is a CloneSet the controller has fully reconciled: status matches its one pod.
func steady(name string, lifecycle map[string]any) cloneSetCase {
	return cloneSetCase{name: name, replicas: 1, generation: 1, lifecycle: lifecycle,
		status: checktest.CloneSetStatus(1, 1, 1, name+"-5d4f8b7c9", name+"-5d4f8b7c9"), specAge: time.Hour, statusAge: 59 * time.Minute}
}

func TestStuckPreparingNormalRootCauses(t *testing.T) {
	type scenario struct {
		env   controlPlane
		cs    cloneSetCase
		pod   func(p *corev1.Pod) // shapes the stuck pod (age 20m unless changed)
		age   time.Duration
		extra func(w *kruise.Workload) ([]*corev1.Pod, []*corev1.Event)
	}
	satisfied := func(p *corev1.Pod) {
		hook(p, "registry-controller", 19*time.Minute, []string{hookFinalizer}, map[string]string{hookLabel: "true"})
	}
	finalizerOnly := func(p *corev1.Pod) { hook(p, "registry-controller", 19*time.Minute, []string{hookFinalizer}, nil) }
	tests := []struct {
		name      string
		sc        scenario
		rootCause string
		evidence  []string
		fixes     []string
	}{
		{
			// No Lease to judge the leader by: the Deployment's status decides.
			name:      "manager has no available replica",
			sc:        scenario{env: controlPlane{mgr: checktest.KruiseManager("v1.7.0", 0)}, cs: steady("web", hookBoth), pod: satisfied},
			rootCause: RootCauseControllerUnavailable, evidence: []string{"has no available replica"},
		},
		{
			name:      "leader lease not renewed",
			sc:        scenario{env: controlPlane{mgr: checktest.KruiseManager("v1.7.0", 1), lease: checktest.KruiseLeaderLease(10 * time.Minute)}, cs: steady("web", nil)},
			rootCause: RootCauseControllerUnavailable, evidence: []string{"last renewed 10m before the apiserver's time when the scan read it", "leaseDurationSeconds 15"},
		},
		{
			name: "owner frozen by expectations",
			sc: scenario{env: controlPlane{mgr: checktest.KruiseManager("v1.7.0", 1), lease: checktest.KruiseLeaderLease(time.Second), logsUnread: "get pods/log: the server rejected our request"},
				cs: cloneSetCase{name: "web", replicas: 3, generation: 3, lifecycle: hookBoth, status: checktest.CloneSetStatus(2, 1, 1, "web-5d4f8b7c9", "web-5d4f8b7c9"),
					specAge: 30 * time.Minute, statusAge: 31 * time.Minute},
				pod: satisfied},
			rootCause: RootCauseWorkloadExpectationsBlock,
			evidence:  []string{"status.observedGeneration 2 < metadata.generation 3", "expectations-unsatisfied finding wd-", "scale-expectations-leaked"},
			fixes:     []string{checks.ActionRestartControllerLeader, checks.ActionRequeueWorkload},
		},
		{
			name: "hook finalizer missing, label with another value",
			sc: scenario{env: healthy("v1.7.0", "--feature-gates=CloneSetEventHandlerOptimization=true"), cs: steady("web", hookBoth),
				pod: func(p *corev1.Pod) {
					hook(p, "registry-controller", 18*time.Minute, []string{"example.com/other"}, map[string]string{hookLabel: "false"})
				}},
			rootCause: RootCausePreNormalHookPending,
			evidence: []string{"finalizer example.com/registered is missing (finalizers last set by registry-controller at ",
				`label example.com/ready is "false", the hook wants "true" (set by registry-controller at `},
		},
		{
			name: "near miss: finalizer there but the label has another value is not the event bug",
			sc: scenario{env: healthy("v1.7.0", "--feature-gates=CloneSetEventHandlerOptimization=true"), cs: steady("web", hookBoth),
				pod: func(p *corev1.Pod) {
					hook(p, "registry-controller", 18*time.Minute, []string{hookFinalizer}, map[string]string{hookLabel: "True"})
				}},
			rootCause: RootCausePreNormalHookPending,
			evidence:  []string{`label example.com/ready is "True", the hook wants "true"`},
		},
		{
			name:      "label never set",
			sc:        scenario{env: healthy("v1.7.0"), cs: steady("web", hookLabelOnly)},
			rootCause: RootCausePreNormalHookPending,
			evidence:  []string{`label example.com/ready is missing, the hook wants "true" (no field manager has set it)`},
		},
		{
			name:      "v1.9.0 OnDelete CloneSet",
			sc:        scenario{env: healthy("v1.9.0"), cs: func() cloneSetCase { c := steady("web", nil); c.updateType = "OnDelete"; return c }()},
			rootCause: RootCauseOnDeleteRefreshBug,
			evidence:  []string{"updateStrategy.type OnDelete", "kruise-manager v1.9.0 is in the affected range >= v1.9.0, < v1.10.0"},
		},
		{
			name:      "near miss: OnDelete on v1.10.0 is not the bug",
			sc:        scenario{env: healthy("v1.10.0"), cs: func() cloneSetCase { c := steady("web", nil); c.updateType = "OnDelete"; return c }()},
			rootCause: RootCausePreNormalReconcileMissed, fixes: []string{checks.ActionRequeueWorkload},
		},
		{
			name: "v1.9.0 waits for scheduling",
			sc: scenario{env: healthy("v1.9.0"), cs: steady("web", nil), pod: func(p *corev1.Pod) {
				p.Spec.NodeName = ""
				p.Status.Phase = corev1.PodPending
				p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable",
					Message: "0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."}}
			}},
			rootCause: RootCausePodNotScheduled,
			evidence:  []string{"spec.nodeName is empty", "condition PodScheduled=False reason Unschedulable: 0/3 nodes are available: 3 Insufficient cpu"},
		},
		{
			name:      "near miss: unscheduled pod on v1.8.4 is not the scheduling wait",
			sc:        scenario{env: healthy("v1.8.4"), cs: steady("web", nil), pod: func(p *corev1.Pod) { p.Spec.NodeName = "" }},
			rootCause: RootCausePreNormalReconcileMissed, fixes: []string{checks.ActionRequeueWorkload},
		},
		{
			name:      "event dropped: gate set explicitly on v1.7.0",
			sc:        scenario{env: healthy("v1.7.0", "--feature-gates=CloneSetEventHandlerOptimization=true"), cs: steady("web", hookBoth), pod: satisfied},
			rootCause: RootCausePreNormalEventDropped,
			evidence: []string{"affected range >= v1.4.0, < v1.9.0 of openkruise/kruise#2057", "--feature-gates sets CloneSetEventHandlerOptimization=true",
				"preNormal finalizer example.com/registered is present (added by registry-controller", "upgrade to v1.9.0 or turn the gate off"},
			fixes: []string{checks.ActionRequeueWorkload},
		},
		{
			name: "event dropped: gate on through AllAlpha on v1.8.4",
			sc: scenario{env: healthy("v1.8.4", "--feature-gates=AllAlpha=true,ResourcesDeletionProtection=false"), cs: steady("web", hookFinalizerOnly),
				pod: finalizerOnly},
			rootCause: RootCausePreNormalEventDropped,
			evidence:  []string{"CloneSetEventHandlerOptimization is on through --feature-gates AllAlpha=true"},
			fixes:     []string{checks.ActionRequeueWorkload},
		},
		{
			name: "near miss: AllAlpha with the gate turned off explicitly",
			sc: scenario{env: healthy("v1.8.4", "--feature-gates=AllAlpha=true,CloneSetEventHandlerOptimization=false"), cs: steady("web", hookFinalizerOnly),
				pod: finalizerOnly},
			rootCause: RootCausePreNormalReconcileMissed, fixes: []string{checks.ActionRequeueWorkload},
			evidence: []string{"openkruise/kruise#2057 does not apply"},
		},
		{
			name: "near miss: label-only hook is never filtered",
			sc: scenario{env: healthy("v1.7.0", "--feature-gates=CloneSetEventHandlerOptimization=true"), cs: steady("web", hookLabelOnly),
				pod: func(p *corev1.Pod) {
					hook(p, "registry-controller", 19*time.Minute, nil, map[string]string{hookLabel: "true"})
				}},
			rootCause: RootCausePreNormalReconcileMissed, fixes: []string{checks.ActionRequeueWorkload},
			evidence: []string{"the preNormal hook has no finalizer"},
		},
		{
			name: "near miss: fixed release v1.9.0 with the gate on",
			sc: scenario{env: healthy("v1.9.0", "--feature-gates=CloneSetEventHandlerOptimization=true"), cs: steady("web", hookBoth),
				pod: satisfied},
			rootCause: RootCausePreNormalReconcileMissed, fixes: []string{checks.ActionRequeueWorkload},
		},
		{
			name:      "reconcile missed with the gate off",
			sc:        scenario{env: healthy("v1.7.0"), cs: steady("web", hookBoth), pod: satisfied},
			rootCause: RootCausePreNormalReconcileMissed, fixes: []string{checks.ActionRequeueWorkload},
			evidence: []string{"CloneSetEventHandlerOptimization is off"},
		},
		{
			name:      "manager unknown: the finding stays with what is known",
			sc:        scenario{env: controlPlane{}, cs: steady("web", hookBoth), pod: satisfied},
			rootCause: RootCausePreNormalReconcileMissed, fixes: []string{checks.ActionRequeueWorkload},
			evidence: []string{"kruise-manager not found", "openkruise/kruise#2057 cannot be ruled out"},
		},
		{
			name: "near miss: CloneSet mid-rollout is not an expectations block",
			sc: scenario{env: healthy("v1.7.0"),
				cs: cloneSetCase{name: "web", replicas: 3, generation: 2, lifecycle: hookBoth, updateType: "InPlaceIfPossible",
					status: checktest.CloneSetStatus(2, 3, 1, "web-6c8d9e7f5", "web-5d4f8b7c9"), specAge: 25 * time.Minute, statusAge: 10 * time.Second},
				pod: satisfied,
				extra: func(w *kruise.Workload) ([]*corev1.Pod, []*corev1.Event) {
					// Two more pods: one updated, one still on the old revision.
					a := cloneSetPod(w, "web-b", kruise.StateNormal, 10*time.Second, "6c8d9e7f5")
					b := cloneSetPod(w, "web-c", kruise.StateNormal, 30*time.Minute, "5d4f8b7c9")
					return []*corev1.Pod{a, b}, []*corev1.Event{workloadEvent(w, corev1.EventTypeNormal, "SuccessfulUpdatePodInPlace",
						"successfully update pod web-b in-place(revision web-6c8d9e7f5)", 10*time.Second)}
				}},
			rootCause: RootCausePreNormalReconcileMissed, fixes: []string{checks.ActionRequeueWorkload},
		},
		{
			name:      "near miss: pod younger than the threshold",
			sc:        scenario{env: healthy("v1.7.0", "--feature-gates=CloneSetEventHandlerOptimization=true"), cs: steady("web", hookBoth), pod: satisfied, age: 9 * time.Minute},
			rootCause: "",
		},
		{
			name: "near miss: Normal pod",
			sc: scenario{env: healthy("v1.7.0"), cs: steady("web", nil), pod: func(p *corev1.Pod) {
				p.Labels[kruise.LabelLifecycleState] = kruise.StateNormal
			}},
			rootCause: "",
		},
		{
			name: "near miss: pod being deleted",
			sc: scenario{env: healthy("v1.7.0"), cs: steady("web", nil), pod: func(p *corev1.Pod) {
				p.DeletionTimestamp = checktest.MetaAgo(time.Minute)
			}},
			rootCause: "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := tt.sc.cs.cloneSet(t)
			age := tt.sc.age
			if age == 0 {
				age = 20 * time.Minute
			}
			hash := "5d4f8b7c9"
			p := cloneSetPod(w, "web-a", kruise.StatePreparingNormal, age, hash)
			if tt.sc.pod != nil {
				tt.sc.pod(p)
			}
			pods := []*corev1.Pod{p}
			var events []*corev1.Event
			if tt.sc.extra != nil {
				more, evs := tt.sc.extra(w)
				pods, events = append(pods, more...), evs
			}
			s := snapshotOf(tt.sc.env, []*kruise.Workload{w}, pods, events)
			got := StuckPreparingNormal().Run(s, preparingNormalThreshold)
			expect(t, got, tt.rootCause, tt.evidence, tt.fixes)
			if len(got) == 1 {
				f := got[0]
				if f.Object.Kind != "Pod" || f.Object.Name != "web-a" || f.Owner == nil || f.Owner.Kind != "CloneSet" || f.Owner.UID != string(w.UID) {
					t.Errorf("object/owner = %+v / %+v", f.Object, f.Owner)
				}
				if !f.Since.Equal(checktest.Ago(age).Truncate(time.Second)) {
					t.Errorf("since = %v, want the lifecycle timestamp %v", f.Since, checktest.Ago(age))
				}
			}
		})
	}
}

func TestStuckPreparingNormalAdvancedStatefulSet(t *testing.T) {
	yes := true
	cs := steady("db", hookFinalizerOnly).cloneSet(t)
	// An Advanced StatefulSet with the same hook: no CloneSet-only bug applies.
	cs.Kind, cs.APIVersion = kruise.KindStatefulSet, "apps.kruise.io/v1beta1"
	p := cloneSetPod(cs, "db-0", kruise.StatePreparingNormal, 20*time.Minute, "5d4f8b7c9")
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps.kruise.io/v1beta1", Kind: "StatefulSet", Name: "db", UID: cs.UID, Controller: &yes}}
	hook(p, "registry-controller", 19*time.Minute, []string{hookFinalizer}, nil)
	s := snapshotOf(healthy("v1.8.0", "--feature-gates=CloneSetEventHandlerOptimization=true"), []*kruise.Workload{cs}, []*corev1.Pod{p}, nil)
	expect(t, StuckPreparingNormal().Run(s, 0), RootCausePreNormalReconcileMissed, nil, []string{checks.ActionRequeueWorkload})
}

func TestStuckPreparingNormalCandidates(t *testing.T) {
	yes := true
	w := steady("web", nil).cloneSet(t)
	stuck := cloneSetPod(w, "web-a", kruise.StatePreparingNormal, time.Hour, "5d4f8b7c9")
	normal := cloneSetPod(w, "web-b", kruise.StateNormal, time.Hour, "5d4f8b7c9")
	foreign := cloneSetPod(w, "other", kruise.StatePreparingNormal, time.Hour, "x")
	foreign.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "rs", Controller: &yes}}
	// The CloneSet's status matches its two pods, so none is an expectations candidate.
	two := int32(2)
	w.Replicas, w.Status.Replicas, w.Status.UpdatedReplicas = &two, 2, 2
	s := snapshotOf(healthy("v1.7.0"), []*kruise.Workload{w}, nil, nil)
	for _, p := range []*corev1.Pod{stuck, normal, foreign} {
		meta := p.ObjectMeta
		s.Pods = append(s.Pods, &meta)
	}
	s.Index()
	got := StuckPreparingNormal().(checks.ReadDeclarer).DeclareReads(s).PodsDue(s)
	if len(got) != 1 || got[0] != stuck.UID {
		t.Errorf("candidates = %v, want only %s", got, stuck.UID)
	}
	// A CloneSet whose status disagrees with its pods has them read in full.
	w.Status.Replicas = 1
	got = ExpectationsUnsatisfied().(checks.ReadDeclarer).DeclareReads(s).PodsDue(s)
	if len(got) != 2 {
		t.Errorf("expectations candidates = %v, want the CloneSet's two pods", got)
	}
}

// Both checks declare the pods they need in full.
var (
	_ checks.ReadDeclarer = stuckPreparingNormal{}
	_ checks.ReadDeclarer = expectationsUnsatisfied{}
)
