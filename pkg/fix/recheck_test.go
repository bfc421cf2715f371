package fix

import (
	"strings"
	"testing"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

func TestJudge(t *testing.T) {
	obj := pod("shop", "a", "ua", "10")
	planned := finding("wd-a", "stuck-terminating", "finalizer-owner-missing", obj, rmFin("example.com/x"), rmFin("example.com/y"))
	step := func() *Step {
		steps, _ := Select(NewCatalog(), []report.Finding{planned}, Selection{})
		return steps[0] // remove example.com/x
	}
	withRV := func(f report.Finding, rv string) report.Finding {
		f.Object.ResourceVersion = rv
		return f
	}
	rep := func(fs ...report.Finding) *report.Report {
		return &report.Report{Findings: fs, Coverage: report.Coverage{Checks: []string{"stuck-terminating"}}}
	}
	other := finding("wd-other", "stuck-terminating", "node-missing", obj, forceFix)
	plan := func(r report.ObjectRef) string { return r.ResourceVersion }

	tests := []struct {
		name     string
		fresh    *report.Report
		expectRV func(report.ObjectRef) string
		want     Status
		reason   string
	}{
		{"still true and unchanged: go ahead", rep(planned), plan, "", ""},
		{"gone: already resolved", rep(), plan, StatusAlreadyResolved, "no longer reported"},
		{"fix no longer proposed (finalizer removed by someone else): already resolved",
			rep(withFixes(withRV(planned, "11"), rmFin("example.com/y"))), plan, StatusAlreadyResolved, "no longer proposes remove-finalizer example.com/x"},
		{"resourceVersion bumped: refused", rep(withRV(planned, "11")), plan, StatusRefused, "resourceVersion 11, the plan saw 10"},
		{"bumped by this run's own write: go ahead", rep(withRV(planned, "11")), func(report.ObjectRef) string { return "11" }, "", ""},
		{"object now has another diagnosis: refused", rep(other), plan, StatusRefused, "now diagnosed as node-missing"},
		{"check skipped: failed", &report.Report{Coverage: report.Coverage{Skipped: []report.Note{{Check: "stuck-terminating", Reason: "forbidden: list pods"}}}},
			plan, StatusFailed, "forbidden: list pods"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, reason := judge(removeFinalizer{}, step(), newView(tc.fresh), tc.expectRV)
			if got != tc.want || !strings.Contains(reason, tc.reason) {
				t.Errorf("judge = %q %q, want %q containing %q", got, reason, tc.want, tc.reason)
			}
		})
	}
}

func withFixes(f report.Finding, fixes ...report.Fix) report.Finding {
	f.Fixes = fixes
	return f
}

func TestJudgeSharedStep(t *testing.T) {
	owner := &report.ObjectRef{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Namespace: "shop", Name: "web", UID: "cs"}
	fC := finding("wd-c", "stuck-preparing-normal", "prenormal-event-dropped", pod("shop", "c", "uc", "1"), requeueFix)
	fD := finding("wd-d", "stuck-preparing-normal", "prenormal-event-dropped", pod("shop", "d", "ud", "2"), requeueFix)
	fC.Owner, fD.Owner = owner, owner
	steps, _ := Select(NewCatalog(), []report.Finding{fC, fD}, Selection{})
	if len(steps) != 1 {
		t.Fatalf("want one shared step, got %q", stepSummary(steps))
	}
	plan := func(r report.ObjectRef) string { return r.ResourceVersion }
	// One pod resolved, the other still stuck: the requeue still goes ahead.
	if got, reason := judge(requeueWorkload{}, steps[0], newView(&report.Report{Findings: []report.Finding{fD}}), plan); got != "" {
		t.Errorf("one of two still true: judge = %q %q, want go ahead", got, reason)
	}
	// Both resolved: nothing to do.
	if got, _ := judge(requeueWorkload{}, steps[0], newView(&report.Report{}), plan); got != StatusAlreadyResolved {
		t.Errorf("none still true: judge = %q, want already-resolved", got)
	}
	// One changed: refuse rather than act on an object nobody looked at.
	fD2 := fD
	fD2.Object.ResourceVersion = "3"
	if got, _ := judge(requeueWorkload{}, steps[0], newView(&report.Report{Findings: []report.Finding{fC, fD2}}), plan); got != StatusRefused {
		t.Errorf("one changed: judge = %q, want refused", got)
	}
}
