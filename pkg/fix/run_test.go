package fix

import (
	"context"
	"maps"
	"reflect"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/collect"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// goneRechecker re-checks to an empty report: every finding is resolved, nothing is written.
type goneRechecker struct{}

func (goneRechecker) Recheck(context.Context, checks.Check, string) (*report.Report, error) {
	return &report.Report{}, nil
}

var deploymentGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}

// budgetCluster is a Deployment "api" in shop with maxUnavailable 1 of 3 replicas, its ReplicaSet
// and three Ready pods, served by client-go's fakes.
func budgetCluster(t *testing.T) (Clients, *dynamicfake.FakeDynamicClient) {
	t.Helper()
	dep := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "api", "namespace": "shop", "uid": "dep-1", "resourceVersion": "5"},
		"spec": map[string]any{"replicas": int64(3), "selector": map[string]any{"matchLabels": map[string]any{"app": "api"}},
			"strategy": map[string]any{"rollingUpdate": map[string]any{"maxUnavailable": int64(1)}}},
	}}
	ctrl := true
	rs := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "ReplicaSet",
		"metadata": map[string]any{"name": "api-1", "namespace": "shop", "uid": "rs-1",
			"ownerReferences": []any{map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "api", "uid": "dep-1", "controller": true}}},
	}}
	kubeObjs := []runtime.Object{}
	for _, name := range []string{"api-a", "api-b", "api-c"} {
		kubeObjs = append(kubeObjs, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", UID: types.UID("u-" + name), ResourceVersion: "7", Labels: map[string]string{"app": "api"},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "api-1", UID: "rs-1", Controller: &ctrl}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
		})
	}
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, meta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "ReplicaSet"}, meta.RESTScopeNamespace)
	dyn := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme(), dep, rs)
	return Clients{Clients: collect.Clients{Kube: kubefake.NewClientset(kubeObjs...), Dynamic: dyn}, Mapper: mapper}, dyn
}

func budgetSteps() []*Step {
	evict := func(name string) *Step {
		return &Step{Action: "evict-pod", Target: pod("shop", name, "u-"+name, "7"), Risk: report.RiskMedium}
	}
	return []*Step{
		{Action: "remove-finalizer", Target: pod("shop", "other", "u-other", "3"), Params: map[string]string{ParamFinalizer: "example.com/x"}},
		evict("api-a"), evict("api-b"),
	}
}

// clonePlan copies a plan deep enough that a change Run made to it would show.
func clonePlan(p *Plan) *Plan {
	c := *p
	steps := map[*Step]*Step{}
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

// Run applies the plan as it was prepared and leaves it so: the budget a wave reads afresh is
// the run's own, and the plan keeps the one it was shown with.
func TestRunLeavesThePlanAsItWas(t *testing.T) {
	c, dyn := budgetCluster(t)
	plan := Prepare(t.Context(), c, nil, budgetSteps(), "")
	if len(plan.Groups) != 1 || plan.Groups[0].Budget.MaxUnavailable != 1 || len(plan.Groups[0].Steps) != 2 {
		t.Fatalf("groups %+v, want the Deployment with maxUnavailable 1 and two pods", plan.Groups)
	}
	before := clonePlan(plan)

	// The Deployment changes after the plan was shown: the run's wave reads maxUnavailable 2.
	dep, err := dyn.Resource(deploymentGVR).Namespace("shop").Get(t.Context(), "api", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedField(dep.Object, int64(2), "spec", "strategy", "rollingUpdate", "maxUnavailable"); err != nil {
		t.Fatal(err)
	}
	if _, err := dyn.Resource(deploymentGVR).Namespace("shop").Update(t.Context(), dep, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	var waves []WaveStarted
	e := NewEngine(c, Options{Rechecker: goneRechecker{}, WaitTimeout: time.Second, PollInterval: 10 * time.Millisecond,
		OnWaveStarted: func(w WaveStarted) { waves = append(waves, w) }})
	rs := e.Run(t.Context(), plan)
	if len(rs) != 3 {
		t.Fatalf("results %+v, want 3", rs)
	}
	for _, r := range rs {
		if r.Status != StatusAlreadyResolved || r.NotAttempted {
			t.Errorf("result %+v, want already-resolved", r)
		}
	}
	if len(waves) != 1 || waves[0].Pods != 2 || waves[0].MinReady != 1 {
		t.Errorf("waves %+v, want one wave of 2 pods keeping 1 (the budget read when it ran)", waves)
	}
	if !reflect.DeepEqual(plan, before) {
		t.Errorf("Run changed the plan:\n got  %+v\n want %+v", plan.Groups[0], before.Groups[0])
	}

	// Refresh reads again into a new plan and leaves the old one as it was.
	fresh := plan.Refresh(t.Context(), c)
	if fresh.Groups[0].Budget.MaxUnavailable != 2 || plan.Groups[0].Budget.MaxUnavailable != 1 {
		t.Errorf("refresh: maxUnavailable %d (plan %d), want 2 (plan 1)", fresh.Groups[0].Budget.MaxUnavailable, plan.Groups[0].Budget.MaxUnavailable)
	}
}

// An interrupted run says, as a status, which steps it never tried: refused outside the waves,
// deferred in them, as the results always said.
func TestRunInterruptedMarksNotAttempted(t *testing.T) {
	c, _ := budgetCluster(t)
	plan := Prepare(t.Context(), c, nil, budgetSteps(), "")
	before := clonePlan(plan)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	rs := NewEngine(c, Options{Rechecker: goneRechecker{}}).Run(ctx, plan)
	want := []Status{StatusRefused, StatusDeferred, StatusDeferred}
	for i, r := range rs {
		if r.Status != want[i] || !r.NotAttempted {
			t.Errorf("result %d: %s (not attempted %v): %s; want %s, not attempted", i, r.Status, r.NotAttempted, r.Reason, want[i])
		}
	}
	if !reflect.DeepEqual(plan, before) {
		t.Error("an interrupted Run changed the plan")
	}
}

// A plan put together without Prepare has read no budget: its evictions fail, nothing is evicted blind.
func TestRunWithoutBudgetsEvictsNothing(t *testing.T) {
	c, _ := budgetCluster(t)
	rs := NewEngine(c, Options{Rechecker: goneRechecker{}}).Run(t.Context(), &Plan{Steps: budgetSteps()})
	want := []Status{StatusAlreadyResolved, StatusFailed, StatusFailed}
	for i, r := range rs {
		if r.Status != want[i] {
			t.Errorf("result %d: %s: %s; want %s", i, r.Status, r.Reason, want[i])
		}
	}
}
