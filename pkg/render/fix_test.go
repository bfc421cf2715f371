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
	steps, refused := fix.Plan(fix.NewCatalog(), []report.Finding{f}, fix.Selection{IDs: []string{"wd-a", "wd-gone"}})
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
	for _, want := range []string{"ACTION", "remove-finalizer", "dry-run", "refused", "2 actions: 0 applied, 0 already resolved, 1 refused, 0 failed, 1 dry run."} {
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
