package kruiselifecycle

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/checktest"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
)

// normalPods makes n Normal pods of the CloneSet on the given revision hash, created age ago.
func normalPods(w *kruise.Workload, n int, hash string, age time.Duration) []*corev1.Pod {
	var out []*corev1.Pod
	for i := 0; i < n; i++ {
		out = append(out, cloneSetPod(w, fmt.Sprintf("%s-%c%c%c%c%c", w.Name, 'a'+i, 'k', 'x', '2', 'p'), kruise.StateNormal, age, hash))
	}
	return out
}

// The frozen CloneSet observed with the real v1.7.0 after a lost watch event (docs/domain.md): scaled
// from 1 to 3, but the status stayed at observedGeneration 2, replicas 1, and no pod was created.
func leakedCloneSet() cloneSetCase {
	return cloneSetCase{name: "demo", replicas: 3, generation: 3, status: checktest.CloneSetStatus(2, 1, 1, "demo-5d4f8b7c9", "demo-5d4f8b7c9"),
		specAge: 20 * time.Minute, statusAge: 26 * time.Minute}
}

const (
	logV17 = `I0612 11:45:00.000366       1 cloneset_controller.go:232] "Not satisfied scale" cloneSet="shop/demo" scaleDirtyPods={"create":["demo-5l6cv"]}
I0612 11:46:00.000366       1 cloneset_controller.go:232] "Expectation unsatisfied overtime" cloneSet="shop/demo" scaleDirtyPods={"create":["demo-5l6cv"]} overTime="5m0.000366775s"
I0612 11:50:00.000366       1 cloneset_controller.go:232] "Expectation unsatisfied overtime" cloneSet="shop/other" scaleDirtyPods={"create":["other-1"]} overTime="9m0s"
`
	logV16 = `W0612 11:46:00.000366       1 cloneset_controller.go:230] Expectation unsatisfied overtime for shop/demo, scaleDirtyPods=map[delete:[demo-akx2p]], overtime=6m0.1s
`
	logPodUpdate = `I0612 11:46:00.000366       1 cloneset_controller.go:292] "Expectation unsatisfied overtime for CloneSet, wait for pod updating timeout" cloneSet="shop/demo" pod="shop/demo-akx2p" timeout="5m0.2s"
`
	logRevisionOnly = `I0612 11:46:00.000366       1 cloneset_controller.go:285] "Expectation unsatisfied overtime for CloneSet, wait for updateRevision updating timeout" cloneSet="shop/demo" updateRevisionName="demo-5d4f8b7c9" timeout="5m0s"
`
)

func TestExpectationsUnsatisfiedRootCauses(t *testing.T) {
	restartThenRequeue := []string{checks.ActionRestartControllerLeader, checks.ActionRequeueWorkload}
	tests := []struct {
		name      string
		env       controlPlane
		cs        cloneSetCase
		pods      func(w *kruise.Workload) []*corev1.Pod
		events    func(w *kruise.Workload) []*corev1.Event
		threshold time.Duration
		rootCause string
		evidence  []string
		fixes     []string
	}{
		{
			name: "manager down",
			env:  controlPlane{mgr: checktest.KruiseManager("v1.7.0", 0), lease: checktest.KruiseLeaderLease(20 * time.Minute)},
			cs:   leakedCloneSet(), pods: func(w *kruise.Workload) []*corev1.Pod { return normalPods(w, 1, "5d4f8b7c9", time.Hour) },
			rootCause: RootCauseControllerUnavailable, evidence: []string{"has no available replica", "was last renewed 20m before the apiserver's time"},
		},
		{
			name: "pod creation rejected by quota",
			env:  controlPlane{mgr: checktest.KruiseManager("v1.7.0", 1), lease: checktest.KruiseLeaderLease(time.Second), logs: text("")},
			// Status is current: the controller reconciles, but every create fails.
			cs: cloneSetCase{name: "demo", replicas: 3, generation: 2, status: checktest.CloneSetStatus(2, 1, 1, "demo-5d4f8b7c9", "demo-5d4f8b7c9"),
				specAge: 20 * time.Minute, statusAge: 20 * time.Minute},
			pods: func(w *kruise.Workload) []*corev1.Pod { return normalPods(w, 1, "5d4f8b7c9", time.Hour) },
			events: func(w *kruise.Workload) []*corev1.Event {
				return []*corev1.Event{workloadEvent(w, corev1.EventTypeWarning, "FailedCreate",
					`failed to create pod: pods "demo-5l6cv" is forbidden: exceeded quota: compute, requested: cpu=1, used: cpu=4, limited: cpu=4, pod: {"metadata":{"name":"demo-5l6cv"},"spec":{"containers":[{"name":"app","env":[{"name":"DB_PASSWORD","value":"hunter2"}]}]}}`,
					2*time.Minute)}
			},
			rootCause: RootCausePodCreationFailing,
			evidence: []string{"spec.replicas 3 but 1 active pods", "event Warning FailedCreate from cloneset-controller",
				"exceeded quota: compute, requested: cpu=1, used: cpu=4, limited: cpu=4"},
		},
		{
			name: "scale leak confirmed by the v1.7 log",
			env:  controlPlane{mgr: checktest.KruiseManager("v1.7.0", 1), lease: checktest.KruiseLeaderLease(time.Second), logs: text(logV17)},
			cs:   leakedCloneSet(), pods: func(w *kruise.Workload) []*corev1.Pod { return normalPods(w, 1, "5d4f8b7c9", time.Hour) },
			events: func(w *kruise.Workload) []*corev1.Event {
				return []*corev1.Event{workloadEvent(w, corev1.EventTypeNormal, "SuccessfulCreate", "succeed to create pod demo-5l6cv", 25*time.Minute)}
			},
			rootCause: RootCauseScaleExpectationsLeaked,
			evidence: []string{`leader log: I0612 11:46:00.000366       1 cloneset_controller.go:232] "Expectation unsatisfied overtime" cloneSet="shop/demo"`,
				"dirty pod demo-5l6cv (expected create) no longer exists", "predates the expectation timeout handling of openkruise/kruise#1829",
				"the newest, SuccessfulCreate, is 25m old"},
			fixes: restartThenRequeue,
		},
		{
			name: "scale leak confirmed by the v1.6 printf log",
			env:  controlPlane{mgr: checktest.KruiseManager("v1.6.3", 1), lease: checktest.KruiseLeaderLease(time.Second), logs: text(logV16)},
			cs:   leakedCloneSet(), pods: func(w *kruise.Workload) []*corev1.Pod { return normalPods(w, 1, "5d4f8b7c9", time.Hour) },
			rootCause: RootCauseScaleExpectationsLeaked,
			evidence:  []string{"dirty pod demo-akx2p (expected delete) still exists", "scaleDirtyPods=map[delete:[demo-akx2p]]"},
			fixes:     restartThenRequeue,
		},
		{
			name: "update leak confirmed by the pod updating line",
			env:  controlPlane{mgr: checktest.KruiseManager("v1.8.2", 1), lease: checktest.KruiseLeaderLease(time.Second), logs: text(logPodUpdate)},
			cs:   leakedCloneSet(), pods: func(w *kruise.Workload) []*corev1.Pod { return normalPods(w, 1, "5d4f8b7c9", time.Hour) },
			rootCause: RootCauseUpdateExpectationsLeaked,
			evidence: []string{"pod demo-akx2p the leader waits for still exists",
				"has the expectation timeout handling of openkruise/kruise#1829; ForceDeleteTimeoutExpectationGate is off"},
			fixes: restartThenRequeue,
		},
		{
			name: "scale leak inferred without logs",
			env:  controlPlane{mgr: checktest.KruiseManager("v1.7.0", 1), lease: checktest.KruiseLeaderLease(time.Second), logsUnread: "get pods/log of kruise-system/x: the server rejected our request"},
			cs:   leakedCloneSet(), pods: func(w *kruise.Workload) []*corev1.Pod { return normalPods(w, 1, "5d4f8b7c9", time.Hour) },
			rootCause: RootCauseScaleExpectationsLeaked,
			evidence:  []string{"inferred from the frozen status: the leader's log could not be read (get pods/log of kruise-system/x"},
			fixes:     restartThenRequeue,
		},
		{
			name: "update leak inferred without logs: only updatedReplicas is stale",
			env:  controlPlane{mgr: checktest.KruiseManager("v1.8.0", 1, "--feature-gates=ForceDeleteTimeoutExpectationGate=true"), lease: checktest.KruiseLeaderLease(time.Second), logsUnread: "forbidden: get pods/log"},
			cs: cloneSetCase{name: "demo", replicas: 2, generation: 4, updateType: "InPlaceIfPossible", status: checktest.CloneSetStatus(4, 2, 0, "demo-6c8d9e7f5", "demo-5d4f8b7c9"),
				specAge: 40 * time.Minute, statusAge: 39 * time.Minute},
			pods: func(w *kruise.Workload) []*corev1.Pod {
				// Both pods were updated in place 30m ago; the status never counted them.
				return normalPods(w, 2, "6c8d9e7f5", 30*time.Minute)
			},
			rootCause: RootCauseUpdateExpectationsLeaked,
			evidence: []string{"status.updatedReplicas 0 but 2 active pods carry updateRevision demo-6c8d9e7f5",
				"ForceDeleteTimeoutExpectationGate=true: a timed-out scale expectation is dropped"},
			fixes: restartThenRequeue,
		},
		{
			name: "stalled with a readable log that names nothing",
			env:  controlPlane{mgr: checktest.KruiseManager("v1.7.0", 1), lease: checktest.KruiseLeaderLease(time.Second), logs: text(logRevisionOnly)},
			cs:   leakedCloneSet(), pods: func(w *kruise.Workload) []*corev1.Pod { return normalPods(w, 1, "5d4f8b7c9", time.Hour) },
			rootCause: RootCauseStalledUnknown,
			evidence:  []string{"the leader's log has no expectation line for CloneSet shop/demo"},
			fixes:     []string{checks.ActionRequeueWorkload, checks.ActionRestartControllerLeader},
		},
		{
			name: "the manager's own expectation timeout is the default threshold",
			env:  controlPlane{mgr: checktest.KruiseManager("v1.7.0", 1, "--expectation-timeout=30s"), lease: checktest.KruiseLeaderLease(time.Second), logsUnread: "no kubelet"},
			cs: cloneSetCase{name: "demo", replicas: 3, generation: 3, status: checktest.CloneSetStatus(2, 1, 1, "demo-5d4f8b7c9", "demo-5d4f8b7c9"),
				specAge: 2 * time.Minute, statusAge: 3 * time.Minute},
			pods:      func(w *kruise.Workload) []*corev1.Pod { return normalPods(w, 1, "5d4f8b7c9", time.Hour) },
			rootCause: RootCauseScaleExpectationsLeaked, fixes: restartThenRequeue,
			evidence: []string{"kruise-manager --expectation-timeout is 30s"},
		},
		{
			name: "manager unknown: still reported, leak inferred",
			env:  controlPlane{},
			cs:   leakedCloneSet(), pods: func(w *kruise.Workload) []*corev1.Pod { return normalPods(w, 1, "5d4f8b7c9", time.Hour) },
			rootCause: RootCauseScaleExpectationsLeaked, fixes: []string{checks.ActionRequeueWorkload},
			evidence: []string{"kruise-manager not found", "inferred from the frozen status"},
		},
		// Near misses that must not fire.
		{
			name: "near miss: a scale-up 2m ago within the default timeout",
			env:  controlPlane{mgr: checktest.KruiseManager("v1.7.0", 1), lease: checktest.KruiseLeaderLease(time.Second), logsUnread: "no kubelet"},
			cs: cloneSetCase{name: "demo", replicas: 3, generation: 3, status: checktest.CloneSetStatus(2, 1, 1, "demo-5d4f8b7c9", "demo-5d4f8b7c9"),
				specAge: 2 * time.Minute, statusAge: 3 * time.Minute},
			pods: func(w *kruise.Workload) []*corev1.Pod { return normalPods(w, 1, "5d4f8b7c9", time.Hour) },
		},
		{
			name: "near miss: CloneSet mid-rollout",
			env:  healthy("v1.7.0"),
			cs: cloneSetCase{name: "demo", replicas: 3, generation: 2, updateType: "InPlaceIfPossible", status: checktest.CloneSetStatus(2, 3, 1, "demo-6c8d9e7f5", "demo-5d4f8b7c9"),
				specAge: 20 * time.Minute, statusAge: 8 * time.Minute},
			pods: func(w *kruise.Workload) []*corev1.Pod {
				return append(normalPods(w, 1, "6c8d9e7f5", 8*time.Minute)[:1], normalPods(w, 3, "5d4f8b7c9", time.Hour)[1:]...)
			},
			events: func(w *kruise.Workload) []*corev1.Event {
				return []*corev1.Event{workloadEvent(w, corev1.EventTypeNormal, "SuccessfulUpdatePodInPlace", "successfully update pod demo-akx2p in-place(revision demo-6c8d9e7f5)", 8*time.Minute)}
			},
		},
		{
			name: "near miss: rollout with a surge pod",
			env:  healthy("v1.7.0"),
			// maxSurge 1: calculateDiffsWithExpectation's updateSurge keeps replicas+1 pods while
			// old and new revisions both wait (cloneset_sync_utils.go, v1.9.0).
			cs: cloneSetCase{name: "demo", replicas: 2, generation: 2, status: checktest.CloneSetStatus(2, 3, 1, "demo-6c8d9e7f5", "demo-5d4f8b7c9"),
				specAge: 20 * time.Minute, statusAge: 15 * time.Minute, spec: map[string]any{"updateStrategy.maxSurge": int64(1)}},
			pods: func(w *kruise.Workload) []*corev1.Pod {
				return append(normalPods(w, 1, "6c8d9e7f5", 15*time.Minute)[:1], normalPods(w, 3, "5d4f8b7c9", time.Hour)[1:]...)
			},
		},
		{
			name: "near miss: paused update held at one pod",
			env:  healthy("v1.7.0"),
			cs: cloneSetCase{name: "demo", replicas: 3, generation: 3, paused: true, status: checktest.CloneSetStatus(3, 3, 1, "demo-6c8d9e7f5", "demo-5d4f8b7c9"),
				specAge: 2 * time.Hour, statusAge: 90 * time.Minute},
			pods: func(w *kruise.Workload) []*corev1.Pod {
				return append(normalPods(w, 1, "6c8d9e7f5", 100*time.Minute)[:1], normalPods(w, 3, "5d4f8b7c9", 3*time.Hour)[1:]...)
			},
		},
		{
			name: "near miss: partition holds back two pods",
			env:  healthy("v1.7.0"),
			cs: cloneSetCase{name: "demo", replicas: 3, generation: 2, partition: int64(2), status: checktest.CloneSetStatus(2, 3, 1, "demo-6c8d9e7f5", "demo-5d4f8b7c9"),
				specAge: 2 * time.Hour, statusAge: 90 * time.Minute},
			pods: func(w *kruise.Workload) []*corev1.Pod {
				return append(normalPods(w, 1, "6c8d9e7f5", 100*time.Minute)[:1], normalPods(w, 3, "5d4f8b7c9", 3*time.Hour)[1:]...)
			},
		},
		{
			name: "near miss: pods not Ready, scale-up limited by maxUnavailable",
			env:  healthy("v1.7.0"),
			// scaleStrategy.maxUnavailable 1 with one unavailable pod: scaleUpLimit 0, so Scale only
			// records ScaleUpLimited (cloneset_scale.go Scale, cloneset_sync_utils.go, v1.9.0).
			cs: cloneSetCase{name: "demo", replicas: 3, generation: 2, status: checktest.CloneSetStatus(2, 1, 1, "demo-5d4f8b7c9", "demo-5d4f8b7c9"),
				specAge: 30 * time.Minute, statusAge: 29 * time.Minute, spec: map[string]any{"scaleStrategy.maxUnavailable": int64(1)}},
			pods: func(w *kruise.Workload) []*corev1.Pod {
				ps := normalPods(w, 1, "5d4f8b7c9", time.Hour)
				ps[0].Status.Conditions = append(ps[0].Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse})
				return ps
			},
			events: func(w *kruise.Workload) []*corev1.Event {
				return []*corev1.Event{workloadEvent(w, corev1.EventTypeWarning, "ScaleUpLimited", "scaleUp is limited because of scaleStrategy.maxUnavailable, limit: 0", 29*time.Minute)}
			},
		},
		{
			name: "near miss: scale-down waiting for a preDelete hook",
			env:  healthy("v1.7.0"),
			cs: cloneSetCase{name: "demo", replicas: 1, generation: 2, lifecycle: map[string]any{"preDelete": map[string]any{"finalizersHandler": []any{hookFinalizer}}},
				status: checktest.CloneSetStatus(2, 2, 2, "demo-5d4f8b7c9", "demo-5d4f8b7c9"), specAge: time.Hour, statusAge: 59 * time.Minute},
			pods: func(w *kruise.Workload) []*corev1.Pod {
				// The hook's finalizer still holds the pod, so deletePods leaves it PreparingDelete.
				ps := normalPods(w, 2, "5d4f8b7c9", 2*time.Hour)
				ps[1].Labels[kruise.LabelLifecycleState] = kruise.StatePreparingDelete
				ps[1].Finalizers = append(ps[1].Finalizers, hookFinalizer)
				return ps
			},
		},
		{
			name: "near miss: CloneSet being deleted",
			env:  healthy("v1.7.0"),
			cs:   func() cloneSetCase { c := leakedCloneSet(); c.deleting = true; return c }(),
			pods: func(w *kruise.Workload) []*corev1.Pod { return normalPods(w, 1, "5d4f8b7c9", time.Hour) },
		},
		{
			name: "near miss: steady CloneSet with Succeeded and terminating pods not counted",
			env:  healthy("v1.7.0"),
			cs: cloneSetCase{name: "demo", replicas: 2, generation: 1, status: checktest.CloneSetStatus(1, 2, 2, "demo-5d4f8b7c9", "demo-5d4f8b7c9"),
				specAge: 2 * time.Hour, statusAge: 50 * time.Minute},
			pods: func(w *kruise.Workload) []*corev1.Pod {
				ps := normalPods(w, 4, "5d4f8b7c9", time.Hour)
				ps[2].Status.Phase = corev1.PodSucceeded
				ps[3].DeletionTimestamp = checktest.MetaAgo(-20 * time.Second)
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
			got := ExpectationsUnsatisfied().Run(snapshotOf(tt.env, []*kruise.Workload{w}, pods, events), th)
			expect(t, got, tt.rootCause, tt.evidence, tt.fixes)
			if len(got) == 1 && (got[0].Object.Kind != "CloneSet" || got[0].Object.UID != string(w.UID) || got[0].Owner != nil) {
				t.Errorf("object = %+v owner = %+v", got[0].Object, got[0].Owner)
			}
		})
	}
}

func TestExpectationsUnsatisfiedMinAgeZero(t *testing.T) {
	// --min-age 0s reports a frozen difference as soon as it is seen.
	c := leakedCloneSet()
	c.specAge, c.statusAge = 5*time.Second, 6*time.Second
	w := c.cloneSet(t)
	env := controlPlane{mgr: checktest.KruiseManager("v1.7.0", 1), lease: checktest.KruiseLeaderLease(time.Second), logsUnread: "no kubelet"}
	got := ExpectationsUnsatisfied().Run(snapshotOf(env, []*kruise.Workload{w}, normalPods(w, 1, "5d4f8b7c9", time.Hour), nil), 0)
	expect(t, got, RootCauseScaleExpectationsLeaked, []string{"the spec changed 5s ago"}, []string{checks.ActionRestartControllerLeader, checks.ActionRequeueWorkload})
}

func TestExpectationsUnsatisfiedDatesWithoutManagedFields(t *testing.T) {
	// Without managedFields the spec change is dated by creation or the newest event, and says so.
	w := leakedCloneSet().cloneSet(t)
	w.ManagedFields = nil
	w.CreationTimestamp = metav1.NewTime(checktest.Ago(3 * time.Hour))
	ev := workloadEvent(w, corev1.EventTypeNormal, "SuccessfulCreate", "succeed to create pod demo-akx2p", 40*time.Minute)
	env := controlPlane{mgr: checktest.KruiseManager("v1.7.0", 1), lease: checktest.KruiseLeaderLease(time.Second), logsUnread: "no kubelet"}
	got := ExpectationsUnsatisfied().Run(snapshotOf(env, []*kruise.Workload{w}, normalPods(w, 1, "5d4f8b7c9", time.Hour), []*corev1.Event{ev}), expectationsThreshold)
	expect(t, got, RootCauseScaleExpectationsLeaked, []string{"dated by newest event about the CloneSet (no managedFields entry dates the spec change)"},
		[]string{checks.ActionRestartControllerLeader, checks.ActionRequeueWorkload})
	if !strings.Contains(got[0].Summary, "has not been reconciled for 40m") {
		t.Errorf("summary = %q", got[0].Summary)
	}
}
