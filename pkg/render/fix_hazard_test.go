package render

import (
	"bytes"
	"strings"
	"testing"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/fix"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// The plan says why a high-risk restart is not planned, and why a named one is high risk.
func TestFixPlanSaysWhyARestartIsHighRisk(t *testing.T) {
	f := report.Finding{ID: "wd-a", Check: "expectations-unsatisfied", Summary: "CloneSet shop/web is frozen",
		Object:    report.ObjectRef{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Namespace: "shop", Name: "web", UID: "cs", ResourceVersion: "7"},
		RootCause: report.RootCause{ID: "scale-expectations-leaked"},
		Fixes: []report.Fix{{Action: "restart-controller-leader", Risk: report.RiskHigh, Params: map[string]string{
			"leaseNamespace": "kruise-system", "leaseName": "kruise-manager", "holderIdentity": "kruise-controller-manager-7d9f8-abcde_0b6e"}}}}
	for _, tc := range []struct {
		sel  fix.Selection
		want string
	}{
		{fix.Selection{}, "wd-a: high risk, applied only when named with --action restart-controller-leader: the scan saw no other Ready replica"},
		{fix.Selection{Action: "restart-controller-leader"}, "high risk, taken because --action names it: the scan saw no other Ready replica"},
	} {
		steps, refused := fix.Select(fix.NewCatalog(), []report.Finding{f}, tc.sel)
		var buf bytes.Buffer
		FixPlan(&buf, steps, refused)
		if !strings.Contains(buf.String(), tc.want) {
			t.Errorf("plan with %+v lacks %q:\n%s", tc.sel, tc.want, buf.String())
		}
	}
}
