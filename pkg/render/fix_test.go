package render

import (
	"bytes"
	"strings"
	"testing"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/fix"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

func TestFixPlanAndResults(t *testing.T) {
	f := report.Finding{ID: "wd-a", Check: "stuck-terminating", Summary: "pod stuck Terminating",
		Object:    report.ObjectRef{APIVersion: "v1", Kind: "Pod", Namespace: "shop", Name: "a", UID: "ua", ResourceVersion: "10"},
		RootCause: report.RootCause{ID: "finalizer-owner-missing"},
		Fixes:     []report.Fix{{Action: "remove-finalizer", Risk: report.RiskLow, Params: map[string]string{"finalizer": "example.com/x"}}}}
	steps, refused := fix.Select(fix.NewCatalog(), []report.Finding{f}, fix.Selection{IDs: []string{"wd-a", "wd-gone"}})
	var buf bytes.Buffer
	FixPlan(&buf, steps, refused)
	for _, want := range []string{"Plan: 1 action", "remove-finalizer pod/a -n shop (risk: low)", `remove finalizer "example.com/x"`,
		"resolves: wd-a (stuck-terminating/finalizer-owner-missing)", "Not planned (1)", "wd-gone: no finding with this ID"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("plan lacks %q:\n%s", want, buf.String())
		}
	}
	buf.Reset()
	rs := append(fix.PlannedResults(steps), refused...)
	if err := FixResults(&buf, rs); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ACTION", "remove-finalizer", "dry-run", "refused", "2 actions: 0 applied, 0 already resolved, 1 refused, 0 failed, 1 dry run, 0 deferred."} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("results lack %q:\n%s", want, buf.String())
		}
	}

	buf.Reset()
	FixStepStarted(&buf, 1, 2, steps[0])
	FixStepFinished(&buf, 1, 2, steps[0], fix.Result{Status: fix.StatusApplied, Reason: "removed"})
	want := "[1/2] remove-finalizer shop/pod/a: re-checking\n[1/2] remove-finalizer shop/pod/a: applied: removed\n"
	if buf.String() != want {
		t.Errorf("progress =\n%s\nwant\n%s", buf.String(), want)
	}
}

// TestFixWaves: the plan says, per workload, how many pods go at a time and why, or why none do.
func TestFixWaves(t *testing.T) {
	cs := report.ObjectRef{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Namespace: "shop", Name: "inventory", UID: "cs"}
	dep := report.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "api", UID: "d"}
	evict := func(name string) *fix.Step {
		return &fix.Step{Action: "evict-pod", Target: report.ObjectRef{APIVersion: "v1", Kind: "Pod", Namespace: "shop", Name: name}}
	}
	groups := []*fix.Group{
		{Budget: fix.Budget{Workload: cs, Replicas: 2, MaxUnavailable: 1, Source: "its update strategy (maxUnavailable absent: the controller's default 20% of 2, rounded up)"},
			Steps: []*fix.Step{evict("inventory-a"), evict("inventory-b")}, PDBs: []fix.PDB{{Name: "inventory", DisruptionsAllowed: 1}}},
		{Budget: fix.Budget{Workload: dep, Replicas: 1, MaxUnavailable: 0, Source: "x"}, Steps: []*fix.Step{evict("api-1")},
			Refusal: "shop/deployment/api has 1 replica: ... name the action (--action evict-pod) to evict it anyway"},
		{Budget: fix.Budget{Workload: dep, Replicas: 1, MaxUnavailable: 0, Source: "x"}, Steps: []*fix.Step{evict("api-1")}, ActionChosen: true},
	}
	var buf bytes.Buffer
	FixWaves(&buf, groups)
	for _, want := range []string{
		"cloneset.apps.kruise.io/inventory -n shop: 2 pods, 1 at a time (2 waves); maxUnavailable 1 from its update strategy (maxUnavailable absent: the controller's default 20% of 2, rounded up); keeps 1 of 2 replicas Ready",
		"PodDisruptionBudget inventory also applies, through the Eviction API (1 disruption allowed now)",
		"deployment.apps/api -n shop: 1 pod refused: shop/deployment/api has 1 replica",
		"deployment.apps/api -n shop: 1 pod, 1 at a time (1 wave); maxUnavailable 0 from x; keeps 0 of 1 replicas Ready",
		"evicting one at a time because the action was named (--action evict-pod)",
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("waves lack %q:\n%s", want, buf.String())
		}
	}
	buf.Reset()
	FixWaves(&buf, nil)
	if buf.Len() != 0 {
		t.Errorf("no group, yet %q", buf.String())
	}
}

func TestFixPlanChanged(t *testing.T) {
	web := report.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web"}
	before := &fix.Group{Budget: fix.Budget{Workload: web, Replicas: 4, MaxUnavailable: 1}}
	after := &fix.Group{Budget: fix.Budget{Workload: web, Replicas: 2, MaxUnavailable: 1}, PDBs: []fix.PDB{{Name: "web-pdb"}}}
	var b strings.Builder
	FixPlanChanged(&b, nil)
	if b.Len() != 0 {
		t.Fatalf("no change wrote %q", b.String())
	}
	FixPlanChanged(&b, []fix.GroupChange{{Before: before, After: after}, {Before: before}})
	want := "The budgets changed since the plan was shown; the run goes by the ones read now:\n" +
		"  deployment.apps/web -n shop: was 1 at a time, keeps 3 of 4 replicas Ready; now 1 at a time, keeps 1 of 2 replicas Ready, PodDisruptionBudget web-pdb\n" +
		"  deployment.apps/web -n shop: no longer has pods to evict\n"
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
}
