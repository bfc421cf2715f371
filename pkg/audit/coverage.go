package audit

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// The rules of the results that say what a cycle did not cover (docs/contract.md, "Auditor").
// Their result is `error`, which both report APIs define as "the policy could not be evaluated",
// so a report's summary.error counts the checks the cycle could not fully evaluate.
const (
	RuleNotEvaluated    = "not-evaluated"    // the check was skipped
	RulePartlyEvaluated = "partly-evaluated" // the check ran without some inputs
	propCoverage        = "coverage"
)

// gap is a check a scan did not fully cover.
type gap struct {
	note    report.Note
	skipped bool
	// hides: the check may have missed findings, because it was skipped or could not read an
	// input it detects from (not only evidence such as Events).
	hides bool
}

func gapsOf(cov report.Coverage) []gap {
	var out []gap
	for _, n := range cov.Skipped {
		out = append(out, gap{note: n, skipped: true, hides: true})
	}
	for _, n := range cov.Degraded {
		// A note without inputs (an older report's) hides findings: Hides assumes the worst.
		out = append(out, gap{note: n, hides: snapshot.Hides(n.Inputs...)})
	}
	return out
}

// hiddenChecks are the checks a scan may have missed findings of, whose earlier findings not found
// again are kept (planReports, and the metrics' findingsCollector).
func hiddenChecks(gaps []gap) map[string]bool {
	hidden := map[string]bool{}
	for _, g := range gaps {
		hidden[g.note.Check] = hidden[g.note.Check] || g.hides
	}
	return hidden
}

// result is the report result that says what the gap left out.
func (g gap) result() map[string]any {
	rule, how := RulePartlyEvaluated, "degraded"
	var msg string
	switch {
	case g.skipped:
		rule, how = RuleNotEvaluated, "skipped"
		msg = fmt.Sprintf("%s was not evaluated (%s); its results of earlier scans are kept until it is", g.note.Check, g.note.Reason)
	case g.hides:
		msg = fmt.Sprintf("%s ran without some of its inputs (%s): findings on what it could not read may be missing; "+
			"its results of earlier scans not found again are kept until it reads everything", g.note.Check, g.note.Reason)
	default:
		msg = fmt.Sprintf("%s ran without some evidence (%s): its findings are all here, their root causes may be less precise", g.note.Check, g.note.Reason)
	}
	props := map[string]any{propCoverage: how}
	if len(g.note.Inputs) > 0 {
		props["inputs"] = strings.Join(g.note.Inputs, ",")
	}
	return map[string]any{
		"source": resultSource, "policy": g.note.Check, "rule": rule, "category": resultCategory,
		"result": "error", "message": msg, "properties": props,
	}
}

// planReports returns the reports a cycle writes, keyed by namespace ("" cluster-scoped). With
// complete coverage that is BuildReports. Otherwise the scan cannot vouch for what it did not
// find, so: the results of checks that may have missed findings are carried over from the
// auditor's existing reports (as they were) unless this scan found their object again, which
// keeps the reports of namespaces whose findings may merely be unread; every report gets one
// result per gap saying what was not covered; and the report of the scanned scope (scope: the
// namespace of -n, "" for -A) is written even without findings, so the gaps are always stated.
func planReports(r *report.Report, api ReportAPI, existing []unstructured.Unstructured, scope string) map[string]*unstructured.Unstructured {
	want := BuildReports(r, api)
	gaps := gapsOf(r.Coverage)
	if len(gaps) == 0 {
		return want
	}
	hidden := hiddenChecks(gaps)
	for i := range existing {
		ns := existing[i].GetNamespace()
		kept := carried(&existing[i], want[ns], hidden)
		if len(kept) == 0 {
			continue
		}
		if want[ns] == nil {
			want[ns] = buildReport(api, ns, nil, time.Time{})
		}
		setResults(want[ns], append(resultsOf(want[ns]), kept...))
	}
	if want[scope] == nil {
		want[scope] = buildReport(api, scope, nil, time.Time{})
	}
	for _, rep := range want {
		res := resultsOf(rep)
		for _, g := range gaps {
			res = append(res, g.result())
		}
		setResults(rep, res)
	}
	return want
}

// carried returns the finding results of old whose check is hidden and whose object now (the
// report this cycle built for the same namespace, possibly nil) has no result of that check for.
func carried(old, now *unstructured.Unstructured, hidden map[string]bool) []any {
	found := map[string]bool{}
	if now != nil {
		for _, res := range resultsOf(now) {
			found[resultKey(res)] = true
		}
	}
	var out []any
	for _, res := range resultsOf(old) {
		m, ok := res.(map[string]any)
		if !ok || !hidden[fmt.Sprint(m["policy"])] || isGap(m) || found[resultKey(res)] {
			continue
		}
		out = append(out, res)
	}
	return out
}

// resultKey names a result by its check and its object.
func resultKey(res any) string {
	m, _ := res.(map[string]any)
	ref := map[string]any{}
	if rs, _ := m["resources"].([]any); len(rs) > 0 {
		ref, _ = rs[0].(map[string]any)
	}
	return fmt.Sprint(m["policy"], "|", ref["apiVersion"], "|", ref["kind"], "|", ref["namespace"], "|", ref["name"])
}

// isGap says whether a result is one of the auditor's coverage results, not a finding.
func isGap(m map[string]any) bool {
	props, _ := m["properties"].(map[string]any)
	_, ok := props[propCoverage]
	return ok
}

func resultsOf(u *unstructured.Unstructured) []any {
	res, _ := u.Object["results"].([]any)
	return res
}
