package e2e

import (
	"context"
	"maps"
	"reflect"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/fix"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// How Engine.Run treats the plan it is given, on the real apiserver (these were unit tests on
// client-go's fakes). Each runs in its own namespace of TestFixEngineAgainstAPIServer's cluster.

// runGoneRechecker re-checks to an empty report: every finding is resolved, nothing is written,
// so what is tested is the run's handling of the plan, not an action.
type runGoneRechecker struct{}

func (runGoneRechecker) Recheck(context.Context, checks.Check, string) (*report.Report, error) {
	return &report.Report{}, nil
}

// runBudgetDeployment creates a Deployment "api" with maxUnavailable 1 of 3 replicas, its
// ReplicaSet and three pods reported Running and Ready as a kubelet would (no controller runs
// in this cluster), and returns the steps a fix plans there: a remove-finalizer step on a pod
// outside the Deployment, then the evictions of two of its pods.
func (fx *engineFixture) runBudgetDeployment(t *testing.T, ns string) []*fix.Step {
	t.Helper()
	ctx := t.Context()
	labels := map[string]string{"app": "api"}
	template := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/api:1"}}}}
	one := intstr.FromInt32(1)
	dep, err := fx.kube.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: ns},
		Spec: appsv1.DeploymentSpec{Replicas: enginePtr(int32(3)), Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template,
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: &one}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create Deployment: %v", err)
	}
	rs, err := fx.kube.AppsV1().ReplicaSets(ns).Create(ctx, &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "api-1", Namespace: ns, Labels: labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: dep.Name, UID: dep.UID, Controller: enginePtr(true)}}},
		Spec: appsv1.ReplicaSetSpec{Replicas: enginePtr(int32(3)), Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create ReplicaSet: %v", err)
	}
	pods := map[string]*corev1.Pod{}
	for _, name := range []string{"api-a", "api-b", "api-c"} {
		p := enginePod(ns, name, nil)
		p.Labels = labels
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: enginePtr(true)}}
		pods[name] = fx.runningPod(t, p)
	}
	evict := func(name string) *fix.Step {
		return &fix.Step{Action: checks.ActionEvictPod, Target: runPodRef(pods[name]), Risk: report.RiskMedium}
	}
	// "other" does not exist: the step is resolved by the re-check before anything reads it.
	other := report.ObjectRef{APIVersion: "v1", Kind: "Pod", Namespace: ns, Name: "other", UID: "u-other", ResourceVersion: "3"}
	return []*fix.Step{
		{Action: checks.ActionRemoveFinalizer, Target: other, Params: map[string]string{"finalizer": "example.com/x"}},
		evict("api-a"), evict("api-b"),
	}
}

func runPodRef(p *corev1.Pod) report.ObjectRef {
	return report.ObjectRef{APIVersion: "v1", Kind: "Pod", Namespace: p.Namespace, Name: p.Name, UID: string(p.UID), ResourceVersion: p.ResourceVersion}
}

// runClonePlan copies a plan deep enough that a change Run made to it would show.
func runClonePlan(p *fix.Plan) *fix.Plan {
	c := *p
	steps := map[*fix.Step]*fix.Step{}
	c.Steps = nil
	for _, s := range p.Steps {
		cs := *s
		cs.Params = maps.Clone(s.Params)
		cs.Findings = slices.Clone(s.Findings)
		steps[s] = &cs
		c.Steps = append(c.Steps, &cs)
	}
	c.Groups = nil
	for _, g := range p.Groups {
		cg := *g
		cg.PDBs = slices.Clone(g.PDBs)
		cg.Steps = nil
		for _, s := range g.Steps {
			cg.Steps = append(cg.Steps, steps[s])
		}
		c.Groups = append(c.Groups, &cg)
	}
	return &c
}

// runLeavesThePlanAsItWas: Run applies the plan as it was prepared and leaves it so. The budget a
// wave reads afresh is the run's own; the plan keeps the one it was shown with, and Refresh reads
// again into a new plan.
func (fx *engineFixture) runLeavesThePlanAsItWas(t *testing.T) {
	ns := fx.namespace(t, "run-plan")
	plan := fix.Prepare(t.Context(), fx.clients, nil, fx.runBudgetDeployment(t, ns), "")
	if len(plan.Groups) != 1 || plan.Groups[0].Budget.MaxUnavailable != 1 || len(plan.Groups[0].Steps) != 2 {
		t.Fatalf("groups %+v, want the Deployment with maxUnavailable 1 and two pods", plan.Groups)
	}
	before := runClonePlan(plan)

	// The Deployment changes after the plan was shown: the run's wave reads maxUnavailable 2.
	patch := []byte(`{"spec":{"strategy":{"rollingUpdate":{"maxUnavailable":2}}}}`)
	if _, err := fx.kube.AppsV1().Deployments(ns).Patch(t.Context(), "api", types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}

	var waves []fix.WaveStarted
	e := fix.NewEngine(fx.clients, fix.Options{Rechecker: runGoneRechecker{}, WaitTimeout: time.Second, PollInterval: 10 * time.Millisecond,
		OnWaveStarted: func(w fix.WaveStarted) { waves = append(waves, w) }})
	rs := e.Run(t.Context(), plan)
	if len(rs) != 3 {
		t.Fatalf("results %+v, want 3", rs)
	}
	for _, r := range rs {
		if r.Status != fix.StatusAlreadyResolved || r.NotAttempted {
			t.Errorf("result %+v, want already-resolved", r)
		}
	}
	if len(waves) != 1 || waves[0].Pods != 2 || waves[0].MinReady != 1 {
		t.Errorf("waves %+v, want one wave of 2 pods keeping 1 (the budget read when it ran)", waves)
	}
	if !reflect.DeepEqual(plan, before) {
		t.Errorf("Run changed the plan:\n got  %+v\n want %+v", plan.Groups[0], before.Groups[0])
	}

	fresh := plan.Refresh(t.Context(), fx.clients)
	if fresh.Groups[0].Budget.MaxUnavailable != 2 || plan.Groups[0].Budget.MaxUnavailable != 1 {
		t.Errorf("refresh: maxUnavailable %d (plan %d), want 2 (plan 1)", fresh.Groups[0].Budget.MaxUnavailable, plan.Groups[0].Budget.MaxUnavailable)
	}
}

// runInterruptedMarksNotAttempted: an interrupted run says, as a status, which steps it never
// tried (refused outside the waves, deferred in them) and leaves the plan as it was.
func (fx *engineFixture) runInterruptedMarksNotAttempted(t *testing.T) {
	ns := fx.namespace(t, "run-interrupted")
	plan := fix.Prepare(t.Context(), fx.clients, nil, fx.runBudgetDeployment(t, ns), "")
	before := runClonePlan(plan)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	rs := fix.NewEngine(fx.clients, fix.Options{Rechecker: runGoneRechecker{}}).Run(ctx, plan)
	want := []fix.Status{fix.StatusRefused, fix.StatusDeferred, fix.StatusDeferred}
	if len(rs) != len(want) {
		t.Fatalf("results %+v, want %d", rs, len(want))
	}
	for i, r := range rs {
		if r.Status != want[i] || !r.NotAttempted {
			t.Errorf("result %d: %s (not attempted %v): %s; want %s, not attempted", i, r.Status, r.NotAttempted, r.Reason, want[i])
		}
	}
	if !reflect.DeepEqual(plan, before) {
		t.Error("an interrupted Run changed the plan")
	}
	fx.runPodsUntouched(t, ns)
}

// runWithoutBudgetsEvictsNothing: a plan put together without Prepare has read no budget, so its
// evictions fail and nothing is evicted blind.
func (fx *engineFixture) runWithoutBudgetsEvictsNothing(t *testing.T) {
	ns := fx.namespace(t, "run-unprepared")
	rs := fix.NewEngine(fx.clients, fix.Options{Rechecker: runGoneRechecker{}}).Run(t.Context(), &fix.Plan{Steps: fx.runBudgetDeployment(t, ns)})
	want := []fix.Status{fix.StatusAlreadyResolved, fix.StatusFailed, fix.StatusFailed}
	if len(rs) != len(want) {
		t.Fatalf("results %+v, want %d", rs, len(want))
	}
	for i, r := range rs {
		if r.Status != want[i] {
			t.Errorf("result %d: %s: %s; want %s", i, r.Status, r.Reason, want[i])
		}
	}
	fx.runPodsUntouched(t, ns)
}

// runPodsUntouched checks that the Deployment's three pods are all there and not being deleted.
func (fx *engineFixture) runPodsUntouched(t *testing.T, ns string) {
	t.Helper()
	l, err := fx.kube.CoreV1().Pods(ns).List(t.Context(), metav1.ListOptions{LabelSelector: "app=api"})
	if err != nil {
		t.Fatal(err)
	}
	live := 0
	for _, p := range l.Items {
		if p.DeletionTimestamp == nil {
			live++
		}
	}
	if live != 3 {
		t.Errorf("%d of the Deployment's pods are left untouched, want 3", live)
	}
}
