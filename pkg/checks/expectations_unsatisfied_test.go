package checks

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
)

// ktPods makes n Normal pods of the CloneSet on the given revision hash, created age ago.
func ktPods(w *kruise.Workload, n int, hash string, age time.Duration) []*corev1.Pod {
	var out []*corev1.Pod
	for i := 0; i < n; i++ {
		out = append(out, ktPod(w, fmt.Sprintf("%s-%c%c%c%c%c", w.Name, 'a'+i, 'k', 'x', '2', 'p'), kruise.StateNormal, age, hash))
	}
	return out
}

// The frozen CloneSet observed with the real v1.7.0 after a lost watch event (domain.md): scaled
// from 1 to 3, but the status stayed at observedGeneration 2, replicas 1, and no pod was created.
func ktLeakedCS() ktCS {
	return ktCS{name: "demo", replicas: 3, generation: 3, status: ktStatus(2, 1, 1, "demo-5d4f8b7c9", "demo-5d4f8b7c9"),
		specAge: 20 * time.Minute, statusAge: 26 * time.Minute}
}

const (
	ktLogV17 = `I0612 11:45:00.000366       1 cloneset_controller.go:232] "Not satisfied scale" cloneSet="shop/demo" scaleDirtyPods={"create":["demo-5l6cv"]}
I0612 11:46:00.000366       1 cloneset_controller.go:232] "Expectation unsatisfied overtime" cloneSet="shop/demo" scaleDirtyPods={"create":["demo-5l6cv"]} overTime="5m0.000366775s"
I0612 11:50:00.000366       1 cloneset_controller.go:232] "Expectation unsatisfied overtime" cloneSet="shop/other" scaleDirtyPods={"create":["other-1"]} overTime="9m0s"
`
	ktLogV16 = `W0612 11:46:00.000366       1 cloneset_controller.go:230] Expectation unsatisfied overtime for shop/demo, scaleDirtyPods=map[delete:[demo-akx2p]], overtime=6m0.1s
`
	ktLogPodUpdate = `I0612 11:46:00.000366       1 cloneset_controller.go:292] "Expectation unsatisfied overtime for CloneSet, wait for pod updating timeout" cloneSet="shop/demo" pod="shop/demo-akx2p" timeout="5m0.2s"
`
	ktLogRevisionOnly = `I0612 11:46:00.000366       1 cloneset_controller.go:285] "Expectation unsatisfied overtime for CloneSet, wait for updateRevision updating timeout" cloneSet="shop/demo" updateRevisionName="demo-5d4f8b7c9" timeout="5m0s"
`
)

func TestExpectationsUnsatisfiedRootCauses(t *testing.T) {
	restartThenRequeue := []string{ActionRestartControllerLeader, ActionRequeueWorkload}
	tests := []struct {
		name      string
		env       ktEnv
		cs        ktCS
		pods      func(w *kruise.Workload) []*corev1.Pod
		events    func(w *kruise.Workload) []*corev1.Event
		threshold time.Duration
		rootCause string
		evidence  []string
		fixes     []string
	}{
		{
			name: "manager down",
			env:  ktEnv{mgr: ktManager("v1.7.0", 0), lease: ktLease(20 * time.Minute)},
			cs:   ktLeakedCS(), pods: func(w *kruise.Workload) []*corev1.Pod { return ktPods(w, 1, "5d4f8b7c9", time.Hour) },
			rootCause: rcControllerUnavailable, evidence: []string{"has no available replica", "was last renewed 20m ago"},
		},
		{
			name: "pod creation rejected by quota",
			env:  ktEnv{mgr: ktManager("v1.7.0", 1), lease: ktLease(time.Second), logs: ktStr("")},
			// Status is current: the controller reconciles, but every create fails.
			cs: ktCS{name: "demo", replicas: 3, generation: 2, status: ktStatus(2, 1, 1, "demo-5d4f8b7c9", "demo-5d4f8b7c9"),
				specAge: 20 * time.Minute, statusAge: 20 * time.Minute},
			pods: func(w *kruise.Workload) []*corev1.Pod { return ktPods(w, 1, "5d4f8b7c9", time.Hour) },
			events: func(w *kruise.Workload) []*corev1.Event {
				return []*corev1.Event{ktEvent(w, corev1.EventTypeWarning, "FailedCreate",
					`failed to create pod: pods "demo-5l6cv" is forbidden: exceeded quota: compute, requested: cpu=1, used: cpu=4, limited: cpu=4, pod: {"metadata":{"name":"demo-5l6cv"},"spec":{"containers":[{"name":"app","env":[{"name":"DB_PASSWORD","value":"hunter2"}]}]}}`,
					2*time.Minute)}
			},
			rootCause: rcPodCreationFailing,
			evidence: []string{"spec.replicas 3 but 1 active pods", "event Warning FailedCreate from cloneset-controller",
				"exceeded quota: compute, requested: cpu=1, used: cpu=4, limited: cpu=4"},
		},
		{
			name: "scale leak confirmed by the v1.7 log",
			env:  ktEnv{mgr: ktManager("v1.7.0", 1), lease: ktLease(time.Second), logs: ktStr(ktLogV17)},
			cs:   ktLeakedCS(), pods: func(w *kruise.Workload) []*corev1.Pod { return ktPods(w, 1, "5d4f8b7c9", time.Hour) },
			events: func(w *kruise.Workload) []*corev1.Event {
				return []*corev1.Event{ktEvent(w, corev1.EventTypeNormal, "SuccessfulCreate", "succeed to create pod demo-5l6cv", 25*time.Minute)}
			},
			rootCause: rcScaleExpectationsLeaked,
			evidence: []string{`leader log: I0612 11:46:00.000366       1 cloneset_controller.go:232] "Expectation unsatisfied overtime" cloneSet="shop/demo"`,
				"dirty pod demo-5l6cv (expected create) no longer exists", "predates the expectation timeout handling of openkruise/kruise#1829",
				"the newest, SuccessfulCreate, is 25m old"},
			fixes: restartThenRequeue,
		},
		{
			name: "scale leak confirmed by the v1.6 printf log",
			env:  ktEnv{mgr: ktManager("v1.6.3", 1), lease: ktLease(time.Second), logs: ktStr(ktLogV16)},
			cs:   ktLeakedCS(), pods: func(w *kruise.Workload) []*corev1.Pod { return ktPods(w, 1, "5d4f8b7c9", time.Hour) },
			rootCause: rcScaleExpectationsLeaked,
			evidence:  []string{"dirty pod demo-akx2p (expected delete) still exists", "scaleDirtyPods=map[delete:[demo-akx2p]]"},
			fixes:     restartThenRequeue,
		},
		{
			name: "update leak confirmed by the pod updating line",
			env:  ktEnv{mgr: ktManager("v1.8.2", 1), lease: ktLease(time.Second), logs: ktStr(ktLogPodUpdate)},
			cs:   ktLeakedCS(), pods: func(w *kruise.Workload) []*corev1.Pod { return ktPods(w, 1, "5d4f8b7c9", time.Hour) },
			rootCause: rcUpdateExpectationsLeaked,
			evidence: []string{"pod demo-akx2p the leader waits for still exists",
				"has the expectation timeout handling of openkruise/kruise#1829; ForceDeleteTimeoutExpectationGate is off"},
			fixes: restartThenRequeue,
		},
		{
			name: "scale leak inferred without logs",
			env:  ktEnv{mgr: ktManager("v1.7.0", 1), lease: ktLease(time.Second), logsUnread: "get pods/log of kruise-system/x: the server rejected our request"},
			cs:   ktLeakedCS(), pods: func(w *kruise.Workload) []*corev1.Pod { return ktPods(w, 1, "5d4f8b7c9", time.Hour) },
			rootCause: rcScaleExpectationsLeaked,
			evidence:  []string{"inferred from the frozen status: the leader's log could not be read (get pods/log of kruise-system/x"},
			fixes:     restartThenRequeue,
		},
		{
			name: "update leak inferred without logs: only updatedReplicas is stale",
			env:  ktEnv{mgr: ktManager("v1.8.0", 1, "--feature-gates=ForceDeleteTimeoutExpectationGate=true"), lease: ktLease(time.Second), logsUnread: "forbidden: get pods/log"},
			cs: ktCS{name: "demo", replicas: 2, generation: 4, updateType: "InPlaceIfPossible", status: ktStatus(4, 2, 0, "demo-6c8d9e7f5", "demo-5d4f8b7c9"),
				specAge: 40 * time.Minute, statusAge: 39 * time.Minute},
			pods: func(w *kruise.Workload) []*corev1.Pod {
				// Both pods were updated in place 30m ago; the status never counted them.
				return ktPods(w, 2, "6c8d9e7f5", 30*time.Minute)
			},
			rootCause: rcUpdateExpectationsLeaked,
			evidence: []string{"status.updatedReplicas 0 but 2 active pods carry updateRevision demo-6c8d9e7f5",
				"ForceDeleteTimeoutExpectationGate=true: a timed-out scale expectation is dropped"},
			fixes: restartThenRequeue,
		},
		{
			name: "stalled with a readable log that names nothing",
			env:  ktEnv{mgr: ktManager("v1.7.0", 1), lease: ktLease(time.Second), logs: ktStr(ktLogRevisionOnly)},
			cs:   ktLeakedCS(), pods: func(w *kruise.Workload) []*corev1.Pod { return ktPods(w, 1, "5d4f8b7c9", time.Hour) },
			rootCause: rcStalledUnknown,
			evidence:  []string{"the leader's log has no expectation line for CloneSet shop/demo"},
			fixes:     []string{ActionRequeueWorkload, ActionRestartControllerLeader},
		},
		{
			name: "the manager's own expectation timeout is the default threshold",
			env:  ktEnv{mgr: ktManager("v1.7.0", 1, "--expectation-timeout=30s"), lease: ktLease(time.Second), logsUnread: "no kubelet"},
			cs: ktCS{name: "demo", replicas: 3, generation: 3, status: ktStatus(2, 1, 1, "demo-5d4f8b7c9", "demo-5d4f8b7c9"),
				specAge: 2 * time.Minute, statusAge: 3 * time.Minute},
			pods:      func(w *kruise.Workload) []*corev1.Pod { return ktPods(w, 1, "5d4f8b7c9", time.Hour) },
			rootCause: rcScaleExpectationsLeaked, fixes: restartThenRequeue,
			evidence: []string{"kruise-manager --expectation-timeout is 30s"},
		},
		{
			name: "manager unknown: still reported, leak inferred",
			env:  ktEnv{},
			cs:   ktLeakedCS(), pods: func(w *kruise.Workload) []*corev1.Pod { return ktPods(w, 1, "5d4f8b7c9", time.Hour) },
			rootCause: rcScaleExpectationsLeaked, fixes: []string{ActionRequeueWorkload},
			evidence: []string{"kruise-manager not found", "inferred from the frozen status"},
		},
		// Near misses that must not fire.
		{
			name: "near miss: a scale-up 2m ago within the default timeout",
			env:  ktEnv{mgr: ktManager("v1.7.0", 1), lease: ktLease(time.Second), logsUnread: "no kubelet"},
			cs: ktCS{name: "demo", replicas: 3, generation: 3, status: ktStatus(2, 1, 1, "demo-5d4f8b7c9", "demo-5d4f8b7c9"),
				specAge: 2 * time.Minute, statusAge: 3 * time.Minute},
			pods: func(w *kruise.Workload) []*corev1.Pod { return ktPods(w, 1, "5d4f8b7c9", time.Hour) },
		},
		{
			name: "near miss: CloneSet mid-rollout",
			env:  ktHealthy("v1.7.0"),
			cs: ktCS{name: "demo", replicas: 3, generation: 2, updateType: "InPlaceIfPossible", status: ktStatus(2, 3, 1, "demo-6c8d9e7f5", "demo-5d4f8b7c9"),
				specAge: 20 * time.Minute, statusAge: 8 * time.Minute},
			pods: func(w *kruise.Workload) []*corev1.Pod {
				return append(ktPods(w, 1, "6c8d9e7f5", 8*time.Minute)[:1], ktPods(w, 3, "5d4f8b7c9", time.Hour)[1:]...)
			},
			events: func(w *kruise.Workload) []*corev1.Event {
				return []*corev1.Event{ktEvent(w, corev1.EventTypeNormal, "SuccessfulUpdatePodInPlace", "successfully update pod demo-akx2p in-place(revision demo-6c8d9e7f5)", 8*time.Minute)}
			},
		},
		{
			name: "near miss: rollout with a surge pod",
			env:  ktHealthy("v1.7.0"),
			cs: ktCS{name: "demo", replicas: 2, generation: 2, status: ktStatus(2, 3, 1, "demo-6c8d9e7f5", "demo-5d4f8b7c9"),
				specAge: 20 * time.Minute, statusAge: 15 * time.Minute},
			pods: func(w *kruise.Workload) []*corev1.Pod {
				return append(ktPods(w, 1, "6c8d9e7f5", 15*time.Minute)[:1], ktPods(w, 3, "5d4f8b7c9", time.Hour)[1:]...)
			},
		},
		{
			name: "near miss: paused update held at one pod",
			env:  ktHealthy("v1.7.0"),
			cs: ktCS{name: "demo", replicas: 3, generation: 3, paused: true, status: ktStatus(3, 3, 1, "demo-6c8d9e7f5", "demo-5d4f8b7c9"),
				specAge: 2 * time.Hour, statusAge: 90 * time.Minute},
			pods: func(w *kruise.Workload) []*corev1.Pod {
				return append(ktPods(w, 1, "6c8d9e7f5", 100*time.Minute)[:1], ktPods(w, 3, "5d4f8b7c9", 3*time.Hour)[1:]...)
			},
		},
		{
			name: "near miss: partition holds back two pods",
			env:  ktHealthy("v1.7.0"),
			cs: ktCS{name: "demo", replicas: 3, generation: 2, partition: int64(2), status: ktStatus(2, 3, 1, "demo-6c8d9e7f5", "demo-5d4f8b7c9"),
				specAge: 2 * time.Hour, statusAge: 90 * time.Minute},
			pods: func(w *kruise.Workload) []*corev1.Pod {
				return append(ktPods(w, 1, "6c8d9e7f5", 100*time.Minute)[:1], ktPods(w, 3, "5d4f8b7c9", 3*time.Hour)[1:]...)
			},
		},
		{
			name: "near miss: pods not Ready, scale-up limited by maxUnavailable",
			env:  ktHealthy("v1.7.0"),
			cs: ktCS{name: "demo", replicas: 3, generation: 2, status: ktStatus(2, 1, 1, "demo-5d4f8b7c9", "demo-5d4f8b7c9"),
				specAge: 30 * time.Minute, statusAge: 29 * time.Minute},
			pods: func(w *kruise.Workload) []*corev1.Pod {
				ps := ktPods(w, 1, "5d4f8b7c9", time.Hour)
				ps[0].Status.Conditions = append(ps[0].Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse})
				return ps
			},
			events: func(w *kruise.Workload) []*corev1.Event {
				return []*corev1.Event{ktEvent(w, corev1.EventTypeWarning, "ScaleUpLimited", "scaleUp is limited because of scaleStrategy.maxUnavailable, limit: 0", 29*time.Minute)}
			},
		},
		{
			name: "near miss: scale-down waiting for a preDelete hook",
			env:  ktHealthy("v1.7.0"),
			cs: ktCS{name: "demo", replicas: 1, generation: 2, lifecycle: map[string]any{"preDelete": map[string]any{"finalizersHandler": []any{ktFin}}},
				status: ktStatus(2, 2, 2, "demo-5d4f8b7c9", "demo-5d4f8b7c9"), specAge: time.Hour, statusAge: 59 * time.Minute},
			pods: func(w *kruise.Workload) []*corev1.Pod {
				ps := ktPods(w, 2, "5d4f8b7c9", 2*time.Hour)
				ps[1].Labels[kruise.LabelLifecycleState] = kruise.StatePreparingDelete
				return ps
			},
		},
		{
			name: "near miss: CloneSet being deleted",
			env:  ktHealthy("v1.7.0"),
			cs:   func() ktCS { c := ktLeakedCS(); c.deleting = true; return c }(),
			pods: func(w *kruise.Workload) []*corev1.Pod { return ktPods(w, 1, "5d4f8b7c9", time.Hour) },
		},
		{
			name: "near miss: steady CloneSet with Succeeded and terminating pods not counted",
			env:  ktHealthy("v1.7.0"),
			cs: ktCS{name: "demo", replicas: 2, generation: 1, status: ktStatus(1, 2, 2, "demo-5d4f8b7c9", "demo-5d4f8b7c9"),
				specAge: 2 * time.Hour, statusAge: 50 * time.Minute},
			pods: func(w *kruise.Workload) []*corev1.Pod {
				ps := ktPods(w, 4, "5d4f8b7c9", time.Hour)
				ps[2].Status.Phase = corev1.PodSucceeded
				ps[3].DeletionTimestamp = ktMT(-20 * time.Second)
				grace := int64(30)
				ps[3].DeletionGracePeriodSeconds = &grace
				return ps
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := tt.cs.cloneSet(t)
			var pods []*corev1.Pod
			if tt.pods != nil {
				pods = tt.pods(w)
			}
			var events []*corev1.Event
			if tt.events != nil {
				events = tt.events(w)
			}
			th := tt.threshold
			if th == 0 {
				th = expectationsThreshold
			}
			got := ExpectationsUnsatisfied().Run(ktSnapshot(tt.env, []*kruise.Workload{w}, pods, events), th)
			ktExpect(t, got, tt.rootCause, tt.evidence, tt.fixes)
			if len(got) == 1 && (got[0].Object.Kind != "CloneSet" || got[0].Object.UID != string(w.UID) || got[0].Owner != nil) {
				t.Errorf("object = %+v owner = %+v", got[0].Object, got[0].Owner)
			}
		})
	}
}

func TestExpectationsUnsatisfiedMinAgeZero(t *testing.T) {
	// --min-age 0s reports a frozen difference as soon as it is seen.
	c := ktLeakedCS()
	c.specAge, c.statusAge = 5*time.Second, 6*time.Second
	w := c.cloneSet(t)
	env := ktEnv{mgr: ktManager("v1.7.0", 1), lease: ktLease(time.Second), logsUnread: "no kubelet"}
	got := ExpectationsUnsatisfied().Run(ktSnapshot(env, []*kruise.Workload{w}, ktPods(w, 1, "5d4f8b7c9", time.Hour), nil), 0)
	ktExpect(t, got, rcScaleExpectationsLeaked, []string{"the spec changed 5s ago"}, []string{ActionRestartControllerLeader, ActionRequeueWorkload})
}

func TestExpectationsUnsatisfiedDatesWithoutManagedFields(t *testing.T) {
	// Without managedFields the spec change is dated by creation or the newest event, and says so.
	w := ktLeakedCS().cloneSet(t)
	w.ManagedFields = nil
	w.CreationTimestamp = metav1.NewTime(ktAgo(3 * time.Hour))
	ev := ktEvent(w, corev1.EventTypeNormal, "SuccessfulCreate", "succeed to create pod demo-akx2p", 40*time.Minute)
	env := ktEnv{mgr: ktManager("v1.7.0", 1), lease: ktLease(time.Second), logsUnread: "no kubelet"}
	got := ExpectationsUnsatisfied().Run(ktSnapshot(env, []*kruise.Workload{w}, ktPods(w, 1, "5d4f8b7c9", time.Hour), []*corev1.Event{ev}), expectationsThreshold)
	ktExpect(t, got, rcScaleExpectationsLeaked, []string{"dated by newest event about the CloneSet (no managedFields entry dates the spec change)"},
		[]string{ActionRestartControllerLeader, ActionRequeueWorkload})
	if !strings.Contains(got[0].Summary, "has not been reconciled for 40m") {
		t.Errorf("summary = %q", got[0].Summary)
	}
}
