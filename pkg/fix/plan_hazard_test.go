package fix

import (
	"reflect"
	"strings"
	"testing"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// A restart of the only Ready kruise-manager replica leaves OpenKruise's pod webhook (mpod.kb.io,
// failurePolicy Fail: kruise v1.9.0 pkg/webhook/pod/mutating/webhooks.go) without a server, so
// the scan marks the fix high risk and the plan takes it only when --action names it.
func TestPlanRefusesAHighRiskRestartUnlessNamed(t *testing.T) {
	cloneSet := func(name string) report.ObjectRef {
		return report.ObjectRef{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Namespace: "shop", Name: name, UID: "cs-" + name, ResourceVersion: "7"}
	}
	high := restartFix("kruise-controller-manager-7d9f8-abcde_0b6e")
	high.Risk = report.RiskHigh
	requeue := report.Fix{Action: "requeue-workload", Risk: report.RiskLow}
	fA := finding("wd-a", "expectations-unsatisfied", "scale-expectations-leaked", cloneSet("web"), high, requeue)
	fB := finding("wd-b", "expectations-unsatisfied", "scale-expectations-leaked", cloneSet("api"), high, requeue)
	all := []report.Finding{fA, fB}

	// Default actions: nothing planned, one refusal for the shared leader, naming both findings,
	// the hazard and how to accept it.
	steps, refused := Select(NewCatalog(), all, Selection{})
	if len(steps) != 0 || len(refused) != 1 {
		t.Fatalf("steps %v, refused %+v; want none planned and one refusal", stepSummary(steps), refused)
	}
	r := refused[0]
	if !reflect.DeepEqual(r.Findings, []string{"wd-a", "wd-b"}) || r.Action != "restart-controller-leader" || r.Risk != report.RiskHigh ||
		!strings.Contains(r.Reason, "high risk, applied only when named with --action restart-controller-leader: the scan saw no other Ready replica") ||
		!strings.Contains(r.Reason, "mpod.kb.io, failurePolicy Fail") {
		t.Errorf("refusal = %+v", r)
	}

	// Named by ID only: still refused, the ID does not name the action.
	if steps, refused := Select(NewCatalog(), all, Selection{IDs: []string{"wd-a"}}); len(steps) != 0 || len(refused) != 1 {
		t.Errorf("by ID: steps %v, refused %+v; want a refusal", stepSummary(steps), refused)
	}

	// --action restart-controller-leader: one step for both, marked named.
	steps, refused = Select(NewCatalog(), all, Selection{Action: "restart-controller-leader"})
	if len(refused) != 0 || len(steps) != 1 || !steps[0].HazardAccepted || steps[0].Risk != report.RiskHigh || len(steps[0].Findings) != 2 {
		t.Fatalf("named: steps %v (named %v), refused %+v", stepSummary(steps), len(steps) == 1 && steps[0].HazardAccepted, refused)
	}

	// --action requeue-workload: the other fix is planned as usual.
	if steps, refused := Select(NewCatalog(), all, Selection{Action: "requeue-workload"}); len(refused) != 0 || len(steps) != 2 {
		t.Errorf("requeue: steps %v, refused %+v", stepSummary(steps), refused)
	}

	// Medium risk (another replica was Ready): planned by default, not named, so the action
	// re-checks for a Ready replica before deleting.
	medium := restartFix("kruise-controller-manager-7d9f8-abcde_0b6e")
	medium.Risk = report.RiskMedium
	steps, refused = Select(NewCatalog(), []report.Finding{finding("wd-c", "expectations-unsatisfied", "scale-expectations-leaked", cloneSet("cart"), medium)}, Selection{})
	if len(refused) != 0 || len(steps) != 1 || steps[0].HazardAccepted || steps[0].Hazard != "" {
		t.Errorf("medium: steps %v, refused %+v", stepSummary(steps), refused)
	}
}
