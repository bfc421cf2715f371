package kruiselifecycle

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/checktest"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks/terminating"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// The states below are those the CloneSet controller of OpenKruise v1.9.0 leaves, at tag v1.9.0:
//   - pkg/controller/cloneset/sync/cloneset_scale.go, Scale and deletePods: a pod chosen for
//     deletion (isSpecifiedDelete: label apps.kruise.io/specified-delete or
//     spec.scaleStrategy.podsToDelete) whose preDelete hook holds it (IsPodHooked) is moved to
//     PreparingDelete, not deleted; deletePods deletes a PreparingDelete pod once no hook holds it.
//   - pkg/controller/cloneset/sync/cloneset_sync_utils.go, calculateDiffsWithExpectation: pods in
//     PreparingDelete count toward spec.replicas unless shouldScalingExcludePreparingDelete (the
//     CloneSet label apps.kruise.io/cloneset-scaling-exclude-preparing-delete=true or the manager
//     flag --cloneset-scaling-exclude-preparing-delete); specified-delete pods are deleted within
//     deleteReadyLimit (maxUnavailable + surplus - unavailable).
//   - pkg/controller/cloneset/cloneset_status.go, calculateStatus: status.replicas counts every
//     active pod getOwnedPods lists (cloneset_controller.go), PreparingDelete ones included.

// deletionCase is a CloneSet of 3 replicas, healthy status written 40 minutes ago, whose third
// pod was chosen for deletion 40 minutes ago.
func deletionCase(spec map[string]any, labels map[string]string) cloneSetCase {
	return cloneSetCase{name: "demo", replicas: 3, generation: 2,
		lifecycle: map[string]any{"preDelete": map[string]any{"finalizersHandler": []any{hookFinalizer}}},
		status:    checktest.CloneSetStatus(2, 3, 3, "demo-5d4f8b7c9", "demo-5d4f8b7c9"),
		specAge:   time.Hour, statusAge: 40 * time.Minute, spec: spec, labels: labels}
}

// readyPods are n Normal pods, Running and Ready (with the kruise readiness conditions).
func readyPods(w *kruise.Workload, n int) []*corev1.Pod {
	ps := normalPods(w, n, "5d4f8b7c9", 2*time.Hour)
	for _, p := range ps {
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = append(p.Status.Conditions,
			corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: *checktest.MetaAgo(2 * time.Hour)},
			corev1.PodCondition{Type: kruise.ConditionInPlaceReady, Status: corev1.ConditionTrue})
	}
	return ps
}

// preparingDelete puts a pod where deletePods leaves it: PreparingDelete 40 minutes ago, the
// hook's finalizer removed unless held.
func preparingDelete(p *corev1.Pod, held bool) {
	p.Labels[kruise.LabelLifecycleState] = kruise.StatePreparingDelete
	p.Annotations[kruise.AnnotationLifecycleTime] = checktest.Ago(40 * time.Minute).Format(time.RFC3339)
	if !held {
		p.Finalizers = slices.DeleteFunc(p.Finalizers, func(f string) bool { return f == hookFinalizer })
	}
}

// hookedPods are ready pods on which the preDelete hook's owner has put its finalizer.
func hookedPods(w *kruise.Workload, n int) []*corev1.Pod {
	ps := readyPods(w, n)
	for _, p := range ps {
		p.Finalizers = append(p.Finalizers, hookFinalizer)
	}
	return ps
}

func TestFrozenVerdictCountsLikeTheCloneSetController(t *testing.T) {
	specified := func(p *corev1.Pod) { p.Labels[kruise.LabelSpecifiedDelete] = "true" }
	tests := []struct {
		name   string
		env    controlPlane
		cs     cloneSetCase
		pods   func(w *kruise.Workload, ps []*corev1.Pod) []*corev1.Pod
		frozen string // evidence of the pending step; "" for no finding
	}{
		{
			name: "specified-delete label, hook pending: 2 Normal + 1 PreparingDelete is as designed",
			env:  healthy("v1.9.0"), cs: deletionCase(nil, nil),
			pods: func(_ *kruise.Workload, ps []*corev1.Pod) []*corev1.Pod {
				specified(ps[2])
				preparingDelete(ps[2], true)
				return ps
			},
		},
		{
			name: "podsToDelete, hook pending: as designed",
			env:  healthy("v1.9.0"), cs: deletionCase(map[string]any{"scaleStrategy.podsToDelete": []any{"demo-ckx2p"}}, nil),
			pods: func(_ *kruise.Workload, ps []*corev1.Pod) []*corev1.Pod { preparingDelete(ps[2], true); return ps },
		},
		{
			name: "exclude label, hook pending, replacement created: 3 Normal + 1 PreparingDelete is as designed",
			env:  healthy("v1.9.0"),
			cs: func() cloneSetCase {
				c := deletionCase(nil, map[string]string{kruise.LabelScalingExcludePreparingDelete: "true"})
				c.status = checktest.CloneSetStatus(2, 4, 4, "demo-5d4f8b7c9", "demo-5d4f8b7c9") // calculateStatus counts all 4
				return c
			}(),
			pods: func(w *kruise.Workload, ps []*corev1.Pod) []*corev1.Pod {
				ps = append(ps, hookedPods(w, 4)[3])
				specified(ps[2])
				preparingDelete(ps[2], true)
				return ps
			},
		},
		{
			name: "specified-delete of a ready pod with maxUnavailable 0: deleteReadyLimit 0 holds it by design",
			env:  healthy("v1.9.0"), cs: deletionCase(map[string]any{"updateStrategy.maxUnavailable": int64(0)}, nil),
			pods: func(_ *kruise.Workload, ps []*corev1.Pod) []*corev1.Pod { specified(ps[2]); return ps },
		},
		{
			name: "exclude label, no replacement created for 40m: frozen",
			env:  healthy("v1.9.0"), cs: deletionCase(nil, map[string]string{kruise.LabelScalingExcludePreparingDelete: "true"}),
			pods: func(_ *kruise.Workload, ps []*corev1.Pod) []*corev1.Pod {
				specified(ps[2])
				preparingDelete(ps[2], true)
				return ps
			},
			frozen: "1 pods to create (spec.replicas 3 + surge 0, 2 pods counted, 1 PreparingDelete pods not counted)",
		},
		{
			name: "manager flag --cloneset-scaling-exclude-preparing-delete, no replacement: frozen",
			env:  healthy("v1.9.0", "--cloneset-scaling-exclude-preparing-delete"), cs: deletionCase(nil, nil),
			pods: func(_ *kruise.Workload, ps []*corev1.Pod) []*corev1.Pod {
				specified(ps[2])
				preparingDelete(ps[2], true)
				return ps
			},
			frozen: "1 pods to create",
		},
		{
			name: "PreparingDelete pod whose hook was released, still there after 40m: frozen",
			env:  healthy("v1.9.0"), cs: deletionCase(nil, nil),
			pods: func(_ *kruise.Workload, ps []*corev1.Pod) []*corev1.Pod {
				specified(ps[2])
				preparingDelete(ps[2], false)
				return ps
			},
			frozen: "pod demo-ckx2p is PreparingDelete and its preDelete hook no longer holds it",
		},
		{
			name: "specified-delete of a ready pod within maxUnavailable, untouched for 40m: frozen",
			env:  healthy("v1.9.0"), cs: deletionCase(nil, nil),
			pods:   func(_ *kruise.Workload, ps []*corev1.Pod) []*corev1.Pod { specified(ps[2]); return ps },
			frozen: "pod demo-ckx2p is chosen for deletion (label apps.kruise.io/specified-delete): the controller moves it to PreparingDelete",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := tt.cs.cloneSet(t)
			pods := tt.pods(w, hookedPods(w, 3))
			s := snapshotOf(tt.env, []*kruise.Workload{w}, pods, nil)
			got := ExpectationsUnsatisfied().Run(s, 5*time.Minute)
			if tt.frozen == "" {
				expect(t, got, "", nil, nil)
				expect(t, StuckPreparingNormal().Run(s, 5*time.Minute), "", nil, nil)
				return
			}
			expect(t, got, RootCauseScaleExpectationsLeaked, []string{tt.frozen},
				[]string{checks.ActionRestartControllerLeader, checks.ActionRequeueWorkload})
		})
	}
}

// A pod chosen for deletion whose preDelete hook is pending: the only finding of the whole scan
// is the pod's own kruise-predelete-hook-pending (stuck-terminating), never a frozen CloneSet.
func TestPreparingDeleteByDesignOnlyHookFinding(t *testing.T) {
	w := deletionCase(nil, nil).cloneSet(t)
	pods := hookedPods(w, 3)
	pods[2].Labels[kruise.LabelSpecifiedDelete] = "true"
	preparingDelete(pods[2], true)
	s := snapshotOf(healthy("v1.9.0"), []*kruise.Workload{w}, pods, nil)
	var all []report.Finding
	for _, c := range []checks.Check{ExpectationsUnsatisfied(), StuckPreparingNormal(), terminating.New()} {
		all = append(all, c.Run(s, 5*time.Minute)...)
	}
	if len(all) != 1 || all[0].Object.Name != "demo-ckx2p" || all[0].RootCause.ID != terminating.RootCauseKruisePreDeleteHook {
		for _, f := range all {
			t.Logf("%s %s/%s: %s", f.Check, f.Object.Kind, f.Object.Name, f.RootCause.ID)
		}
		t.Fatalf("want only the pod's %s finding, got %d findings", terminating.RootCauseKruisePreDeleteHook, len(all))
	}
}

// With -l, a CloneSet whose selector does not fix the labels the selector tests is not judged:
// its pods may have been cut. One whose selector fixes them is judged on every pod.
func TestFrozenVerdictUnderLabelSelector(t *testing.T) {
	w := leakedCloneSet().cloneSet(t) // selector app=demo, frozen at 1 of 3 pods
	pods := normalPods(w, 1, "5d4f8b7c9", time.Hour)
	for _, tt := range []struct {
		selector string
		judged   bool
	}{
		{"", true},
		{"app=demo", true},
		{"app in (demo,web)", true},
		{"tier=frontend", false},
		{"app=demo,tier=frontend", false},
	} {
		s := snapshotOf(controlPlane{mgr: checktest.KruiseManager("v1.7.0", 1), lease: checktest.KruiseLeaderLease(time.Second), logsUnread: "no kubelet"},
			[]*kruise.Workload{w}, pods, nil)
		s.Scope = snapshot.Scope{LabelSelector: tt.selector}
		if got := len(ExpectationsUnsatisfied().Run(s, 5*time.Minute)) == 1; got != tt.judged {
			t.Errorf("-l %q: judged = %v, want %v", tt.selector, got, tt.judged)
		}
		if got := len(ExpectationsUnsatisfied().(checks.ReadDeclarer).DeclareReads(s).PodsDue(s)) > 0; got != tt.judged {
			t.Errorf("-l %q: pods asked for = %v, want %v", tt.selector, got, tt.judged)
		}
	}
}
