package fix

import (
	"context"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks/builtin"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks/rollout"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// The revisions of the forced-rollback state: db rolled from good to bad and back to good.
const (
	revGood = "db-5d8c7f9b6"
	revBad  = "db-7c4f88d5b"
)

// brokenSet is StatefulSet shop/db as kube-controller-manager v1.37.1 leaves it after a rollout
// to a crashing template was reverted: getStatefulSetRevisions made the good revision the
// updateRevision again, and the update never completed, so currentRevision is the good one too
// (pkg/controller/statefulset/stateful_set_control.go). RollingUpdate's partition is defaulted
// to 0 by the apiserver.
func brokenSet() *appsv1.StatefulSet {
	replicas, partition := int32(3), int32(0)
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "shop", UID: "sts-uid", ResourceVersion: "40"},
		Spec: appsv1.StatefulSetSpec{Replicas: &replicas, PodManagementPolicy: appsv1.OrderedReadyPodManagement,
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: &partition}}},
		Status: appsv1.StatefulSetStatus{Replicas: 3, ReadyReplicas: 2, CurrentReplicas: 2, UpdatedReplicas: 2,
			CurrentRevision: revGood, UpdateRevision: revGood},
	}
}

// brokenPod is db-2, which the controller recreated on the bad revision: it crash-loops, Running
// and not Ready, as the kubelet reports it.
func brokenPod() *corev1.Pod {
	ctrl := true
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "db-2", Namespace: "shop", UID: "pod-uid", ResourceVersion: "38",
			Labels:          map[string]string{"app": "db", appsv1.StatefulSetRevisionLabel: revBad, "statefulset.kubernetes.io/pod-name": "db-2"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db", UID: "sts-uid", Controller: &ctrl}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady"}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", RestartCount: 5,
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}}}},
	}
}

func brokenParams() map[string]string {
	return map[string]string{ParamPod: "db-2", ParamPodUID: "pod-uid", ParamRevision: revBad, ParamUpdateRevision: revGood}
}

func setRef() report.ObjectRef {
	return report.ObjectRef{APIVersion: "apps/v1", Kind: "StatefulSet", Namespace: "shop", Name: "db", UID: "sts-uid", ResourceVersion: "40"}
}

// Each guard of delete-pod on the objects read right before the delete: only the pod the scan
// saw, still on the revision it saw, not Ready, of the same StatefulSet whose updateRevision has
// not moved, is deleted; every refusal names the guard.
func TestJudgeDeletePod(t *testing.T) {
	tests := []struct {
		name   string
		change func(set *appsv1.StatefulSet, pod *corev1.Pod)
		want   Status // "" to delete
		reason string
	}{
		{"the forced-rollback state: delete", func(*appsv1.StatefulSet, *corev1.Pod) {}, "", ""},
		{"StatefulSet replaced", func(set *appsv1.StatefulSet, _ *corev1.Pod) { set.UID = "sts-new" },
			StatusRefused, "shop/statefulset/db was replaced since the scan: its uid is now sts-new"},
		{"StatefulSet being deleted", func(set *appsv1.StatefulSet, _ *corev1.Pod) { set.DeletionTimestamp = &metav1.Time{} },
			StatusRefused, "is being deleted: nothing would recreate the pod"},
		{"updateRevision moved since the scan", func(set *appsv1.StatefulSet, _ *corev1.Pod) { set.Status.UpdateRevision = "db-9a1b2c3d4" },
			StatusRefused, "updateRevision of shop/statefulset/db is now db-9a1b2c3d4, the scan saw " + revGood},
		{"pod replaced", func(_ *appsv1.StatefulSet, pod *corev1.Pod) { pod.UID = "pod-new" },
			StatusRefused, "shop/pod/db-2 was replaced since the scan: its uid is now pod-new, the scan saw pod-uid"},
		{"pod already terminating", func(_ *appsv1.StatefulSet, pod *corev1.Pod) { pod.DeletionTimestamp = &metav1.Time{} },
			StatusAlreadyResolved, "already being deleted"},
		{"pod of another controller", func(_ *appsv1.StatefulSet, pod *corev1.Pod) { pod.OwnerReferences[0].UID = "other" },
			StatusRefused, "is not controlled by shop/statefulset/db (its controller: StatefulSet db uid other)"},
		{"pod without a controller", func(_ *appsv1.StatefulSet, pod *corev1.Pod) { pod.OwnerReferences = nil },
			StatusRefused, "(its controller: none)"},
		{"pod's revision changed", func(_ *appsv1.StatefulSet, pod *corev1.Pod) { pod.Labels[appsv1.StatefulSetRevisionLabel] = revGood },
			StatusRefused, `shop/pod/db-2 is now on revision "` + revGood + `", the scan saw ` + revBad},
		{"pod below the partition", func(set *appsv1.StatefulSet, _ *corev1.Pod) {
			p := int32(3)
			set.Spec.UpdateStrategy.RollingUpdate.Partition = &p
		}, StatusRefused, "below the partition 3"},
		{"pod below the partition counted from spec.ordinals.start", func(set *appsv1.StatefulSet, pod *corev1.Pod) {
			p := int32(1)
			set.Spec.UpdateStrategy.RollingUpdate.Partition = &p
			set.Spec.Ordinals = &appsv1.StatefulSetOrdinals{Start: 2}
		}, StatusRefused, "below the partition 1"},
		{"pod at the partition", func(set *appsv1.StatefulSet, _ *corev1.Pod) {
			p := int32(2)
			set.Spec.UpdateStrategy.RollingUpdate.Partition = &p
		}, "", ""},
		{"OnDelete recreates on updateRevision", func(set *appsv1.StatefulSet, _ *corev1.Pod) {
			set.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}
		}, "", ""},
		{"pod turned Ready", func(_ *appsv1.StatefulSet, pod *corev1.Pod) { pod.Status.Conditions[0].Status = corev1.ConditionTrue },
			StatusRefused, "shop/pod/db-2 is Ready now"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set, p := brokenSet(), brokenPod()
			tt.change(set, p)
			o := judgeDeletePod(setRef(), brokenParams(), set, p)
			switch {
			case tt.want == "" && o != nil:
				t.Fatalf("judged %s: %s, want the delete", o.Status, o.Reason)
			case tt.want == "":
			case o == nil:
				t.Fatalf("judged the delete, want %s", tt.want)
			case o.Status != tt.want || !strings.Contains(o.Reason, tt.reason):
				t.Errorf("judged %s: %s\nwant %s containing %q", o.Status, o.Reason, tt.want, tt.reason)
			}
		})
	}
}

func brokenFinding(id string, params map[string]string) report.Finding {
	return report.Finding{ID: id, Check: rollout.ID, Object: setRef(), RootCause: report.RootCause{ID: rollout.RootCauseStatefulSetBrokenPod},
		Fixes: []report.Fix{{Action: checks.ActionDeletePod, Risk: report.RiskMedium, Params: params}}}
}

// delete-pod is planned only for the finding it was made for, with every param it guards on.
func TestDeletePodStep(t *testing.T) {
	a := newDeletePod()
	fx := func(f report.Finding) report.Fix { return f.Fixes[0] }
	ok := brokenFinding("wd-1", brokenParams())
	s, err := a.Step(ok, fx(ok))
	if err != nil {
		t.Fatal(err)
	}
	if want := pod("shop", "db-2", "pod-uid", ""); s.Target != want {
		t.Errorf("target %+v, want %+v", s.Target, want)
	}
	if a.Key(s.Params) != "db-2 (uid pod-uid)" || !strings.Contains(s.Change, "on revision "+revBad) || !strings.Contains(s.Change, "updateRevision "+revGood) {
		t.Errorf("key %q change %q", a.Key(s.Params), s.Change)
	}
	s.Findings = []report.Finding{ok}
	if got := a.oncePer(s); got == nil || *got != setRef() {
		t.Errorf("oncePer = %v, want the StatefulSet", got)
	}

	bad := func(change func(f *report.Finding)) report.Finding {
		f := brokenFinding("wd-2", brokenParams())
		change(&f)
		return f
	}
	for _, tt := range []struct {
		name   string
		f      report.Finding
		reason string
	}{
		{"finding on a pod", bad(func(f *report.Finding) { f.Object = pod("shop", "db-2", "pod-uid", "38") }), "the finding is on v1 Pod"},
		{"finding on an Advanced StatefulSet", bad(func(f *report.Finding) { f.Object.APIVersion = "apps.kruise.io/v1beta1" }), "apps.kruise.io/v1beta1 StatefulSet"},
		{"another root cause", bad(func(f *report.Finding) { f.RootCause.ID = rollout.RootCauseCrashLooping }), "not crash-looping"},
		{"no resourceVersion", bad(func(f *report.Finding) { f.Object.ResourceVersion = "" }), "does not record the uid and resourceVersion"},
		{"no podUID", bad(func(f *report.Finding) { delete(f.Fixes[0].Params, ParamPodUID) }), "no params.podUID"},
		{"no updateRevision", bad(func(f *report.Finding) { delete(f.Fixes[0].Params, ParamUpdateRevision) }), "no params.updateRevision"},
		{"pod on updateRevision", bad(func(f *report.Finding) { f.Fixes[0].Params[ParamRevision] = revGood }), "would recreate the same revision"},
	} {
		if _, err := a.Step(tt.f, fx(tt.f)); err == nil || !strings.Contains(err.Error(), tt.reason) {
			t.Errorf("%s: error %v, want %q", tt.name, err, tt.reason)
		}
	}
	if !slices.Equal(a.allowed, []string{rollout.RootCauseStatefulSetBrokenPod}) {
		t.Errorf("delete-pod is offered by %v, want %s alone", a.allowed, rollout.RootCauseStatefulSetBrokenPod)
	}
}

// stubDeletePod is delete-pod with an Apply that records the pod instead of reading and writing
// the cluster, refusing the pods named in refuse: the engine's once-per-StatefulSet rule is the
// engine's, whatever the action's Apply does.
type stubDeletePod struct {
	deletePod
	applied *[]string
	refuse  map[string]bool
}

func (a stubDeletePod) Apply(_ context.Context, _ *Env, s *Step) Outcome {
	if a.refuse[s.Target.Name] {
		return refused("stub refuses %s", s.Target.Name)
	}
	*a.applied = append(*a.applied, s.Target.Name)
	return Outcome{Status: StatusApplied, Reason: "stub"}
}

// liveRechecker re-checks to the findings as planned: each still holds, unchanged.
type liveRechecker struct{ findings []report.Finding }

func (r liveRechecker) Recheck(context.Context, checks.Check, string) (*report.Report, error) {
	return &report.Report{Findings: r.findings}, nil
}

// A run deletes at most one pod of a StatefulSet: the next waits for a later run (deferred, or dry
// run under server dry run), unless the first was not deleted. Another StatefulSet's pod is not held.
func TestDeletePodOncePerStatefulSet(t *testing.T) {
	twoPods := brokenFinding("wd-db", brokenParams())
	p1 := brokenParams()
	p1[ParamPod], p1[ParamPodUID] = "db-1", "pod-uid-1"
	twoPods.Fixes = append(twoPods.Fixes, report.Fix{Action: checks.ActionDeletePod, Risk: report.RiskMedium, Params: p1})
	other := brokenFinding("wd-cache", map[string]string{ParamPod: "cache-0", ParamPodUID: "cache-uid", ParamRevision: "cache-1", ParamUpdateRevision: "cache-2"})
	other.Object.Name, other.Object.UID = "cache", "cache-sts-uid"
	findings := []report.Finding{twoPods, other}

	run := func(t *testing.T, dryRun DryRun, refuse map[string]bool) ([]string, []Result) {
		t.Helper()
		var applied []string
		a := stubDeletePod{deletePod: newDeletePod(), applied: &applied, refuse: refuse}
		cat := &Catalog{actions: []Action{a}, byID: map[string]Action{checks.ActionDeletePod: a}}
		steps, refused := Select(cat, findings, Selection{})
		if len(refused) > 0 || len(steps) != 3 {
			t.Fatalf("steps %v, refused %+v; want db-2, db-1 and cache-0", stepSummary(steps), refused)
		}
		e := NewEngine(Clients{}, Options{Catalog: cat, Registry: builtin.Checks(), Rechecker: liveRechecker{findings}, DryRun: dryRun})
		return applied, e.Run(t.Context(), &Plan{Steps: steps})
	}

	t.Run("the second pod of db waits", func(t *testing.T) {
		applied, rs := run(t, DryRunNone, nil)
		if !slices.Equal(applied, []string{"db-2", "cache-0"}) {
			t.Errorf("applied %v, want db-2 and cache-0", applied)
		}
		if rs[1].Status != StatusDeferred || !strings.Contains(rs[1].Reason, "once per run to shop/statefulset/db, and this run already applied it to shop/pod/db-2") {
			t.Errorf("db-1: %s: %s, want deferred behind db-2", rs[1].Status, rs[1].Reason)
		}
	})
	t.Run("server dry run reports it dry-run", func(t *testing.T) {
		_, rs := run(t, DryRunServer, nil)
		if rs[1].Status != StatusDryRun || !strings.Contains(rs[1].Reason, "once per run") {
			t.Errorf("db-1: %s: %s, want dry-run behind db-2", rs[1].Status, rs[1].Reason)
		}
	})
	t.Run("a pod not deleted takes no turn", func(t *testing.T) {
		applied, rs := run(t, DryRunNone, map[string]bool{"db-2": true})
		if !slices.Equal(applied, []string{"db-1", "cache-0"}) || rs[0].Status != StatusRefused {
			t.Errorf("applied %v (db-2 %s), want db-1 and cache-0 after db-2 was refused", applied, rs[0].Status)
		}
	})
}
