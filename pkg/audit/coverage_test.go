package audit

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

const rollout = "rollout-stalled"

// stored is what the apiserver hands back for the reports planned: each one after a JSON round trip.
func stored(t *testing.T, plan map[string]*unstructured.Unstructured) []unstructured.Unstructured {
	t.Helper()
	var out []unstructured.Unstructured
	for _, ns := range slices.Sorted(maps.Keys(plan)) {
		raw, err := plan[ns].MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		var u unstructured.Unstructured
		if err := u.UnmarshalJSON(raw); err != nil {
			t.Fatal(err)
		}
		out = append(out, u)
	}
	return out
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// resultLines are "policy rule result name" per result, and the summary's fail/warn/error.
func resultLines(u *unstructured.Unstructured) string {
	var out []string
	for _, res := range resultsOf(u) {
		m := res.(map[string]any)
		name := ""
		if rs, _ := m["resources"].([]any); len(rs) > 0 {
			name, _ = rs[0].(map[string]any)["name"].(string)
		}
		out = append(out, strings.TrimSpace(strings.Join([]string{m["policy"].(string), m["rule"].(string), m["result"].(string), name}, " ")))
	}
	sum := u.Object["summary"].(map[string]any)
	return strings.Join(out, "; ") + fmt.Sprintf(" | fail=%v warn=%v error=%v", sum["fail"], sum["warn"], sum["error"])
}

// The last complete scan published a stalled CloneSet in shop and db and a stuck pod in shop.
func lastGood(t *testing.T) []unstructured.Unstructured {
	t.Helper()
	cov := report.Coverage{Checks: []string{"stuck-terminating", rollout}}
	r := newReport(cov,
		finding("shop", "CloneSet", "web", rollout, "new-pods-crash", report.SeverityError, time.Hour, nil),
		finding("db", "CloneSet", "pg", rollout, "new-pods-crash", report.SeverityError, time.Hour, nil),
		finding("shop", "Pod", "a", "stuck-terminating", "finalizer-owner-missing", report.SeverityWarning, time.Hour, nil))
	return stored(t, planReports(r, OpenReports, nil, ""))
}

// With complete coverage the plan is BuildReports: nothing carried over, no coverage result,
// and a namespace without findings has no report (the prune deletes it).
func TestPlanCompleteCoverageIsTheScan(t *testing.T) {
	r := newReport(report.Coverage{Checks: []string{"stuck-terminating", rollout}},
		finding("shop", "Pod", "b", "stuck-terminating", "finalizer-owner-missing", report.SeverityWarning, time.Minute, nil))
	got := planReports(r, OpenReports, lastGood(t), "")
	if keys := slices.Sorted(maps.Keys(got)); len(keys) != 1 || keys[0] != "shop" {
		t.Fatalf("reports for %v, want shop only", keys)
	}
	if jsonOf(t, got["shop"].Object) != jsonOf(t, BuildReports(r, OpenReports)["shop"].Object) {
		t.Errorf("plan differs from BuildReports:\n%s", resultLines(got["shop"]))
	}
}

// A skipped check: its earlier results are kept as they were, so db's report stays; the covered
// check's resolved finding goes; every report, and the cluster-scoped one written for the
// purpose, says what was not evaluated.
func TestPlanSkippedCheckKeepsItsResults(t *testing.T) {
	existing := lastGood(t)
	cov := report.Coverage{Checks: []string{"stuck-terminating"},
		Skipped: []report.Note{{Check: rollout, Reason: "forbidden: list apps.kruise.io/clonesets", Inputs: []string{string(snapshot.InputKruiseWorkloads)}}}}
	r := newReport(cov, finding("shop", "Pod", "b", "stuck-terminating", "finalizer-owner-missing", report.SeverityWarning, time.Minute, nil))
	got := planReports(r, OpenReports, existing, "")
	if keys := slices.Sorted(maps.Keys(got)); strings.Join(keys, ",") != ",db,shop" {
		t.Fatalf("reports for %q, want the cluster, db and shop", keys)
	}
	want := map[string]string{
		"shop": "stuck-terminating finalizer-owner-missing warn b; rollout-stalled new-pods-crash fail web; rollout-stalled not-evaluated error | fail=1 warn=1 error=1",
		"db":   "rollout-stalled new-pods-crash fail pg; rollout-stalled not-evaluated error | fail=1 warn=0 error=1",
		"":     "rollout-stalled not-evaluated error | fail=0 warn=0 error=1",
	}
	for ns, w := range want {
		if g := resultLines(got[ns]); g != w {
			t.Errorf("%q: %s\nwant %s", ns, g, w)
		}
	}
	// Carried over byte for byte.
	for _, old := range existing {
		if old.GetNamespace() != "db" {
			continue
		}
		if jsonOf(t, resultsOf(&old)[0]) != jsonOf(t, resultsOf(got["db"])[0]) {
			t.Errorf("carried result changed:\n%s\n%s", jsonOf(t, resultsOf(&old)[0]), jsonOf(t, resultsOf(got["db"])[0]))
		}
	}
	gapRes := resultsOf(got[""])[0].(map[string]any)
	props := gapRes["properties"].(map[string]any)
	if props["coverage"] != "skipped" || props["inputs"] != "kruise-workloads" || !strings.Contains(gapRes["message"].(string), "forbidden: list apps.kruise.io/clonesets") ||
		gapRes["source"] != "workloaddoctor" || gapRes["category"] != "stuck-workloads" {
		t.Errorf("coverage result = %v", gapRes)
	}
	if got[""].GetKind() != "ClusterReport" {
		t.Errorf("scope report kind %s", got[""].GetKind())
	}

	// The next cycle, as degraded, plans the same reports from what this one wrote: results
	// carried over once are carried again, coverage results are not piled up.
	again := planReports(r, OpenReports, stored(t, got), "")
	for ns := range want {
		if jsonOf(t, again[ns].Object) != jsonOf(t, got[ns].Object) {
			t.Errorf("%q changed on the second degraded cycle:\n%s\n%s", ns, resultLines(again[ns]), resultLines(got[ns]))
		}
	}
	// Coverage back: what was only carried goes, with the coverage results.
	back := planReports(newReport(report.Coverage{Checks: []string{"stuck-terminating", rollout}}), OpenReports, stored(t, again), "")
	if len(back) != 0 {
		t.Errorf("complete scan without findings plans %v", slices.Sorted(maps.Keys(back)))
	}
}

// A check found again by a degraded scan is not carried twice; a degraded check that lacked only
// evidence (Events) carries nothing: its findings are all in the scan.
func TestPlanDegradedByEvidenceOrInput(t *testing.T) {
	existing := lastGood(t)
	web := finding("shop", "CloneSet", "web", rollout, "new-pods-image-pull", report.SeverityError, time.Hour, nil)
	byObjects := report.Coverage{Checks: []string{"stuck-terminating", rollout},
		Degraded: []report.Note{{Check: rollout, Reason: "forbidden: list apps.kruise.io/sidecarsets", Inputs: []string{string(snapshot.InputSidecarSets)}}}}
	got := planReports(newReport(byObjects, web), OpenReports, existing, "")
	if g := resultLines(got["shop"]); g != "rollout-stalled new-pods-image-pull fail web; rollout-stalled partly-evaluated error | fail=1 warn=0 error=1" {
		t.Errorf("shop: %s", g)
	}
	if g := resultLines(got["db"]); g != "rollout-stalled new-pods-crash fail pg; rollout-stalled partly-evaluated error | fail=1 warn=0 error=1" {
		t.Errorf("db: %s", g)
	}

	byEvents := report.Coverage{Checks: []string{"stuck-terminating", rollout},
		Degraded: []report.Note{{Check: rollout, Reason: "forbidden: list events", Inputs: []string{string(snapshot.InputEvents)}}}}
	got = planReports(newReport(byEvents, web), OpenReports, existing, "")
	if keys := slices.Sorted(maps.Keys(got)); strings.Join(keys, ",") != ",shop" {
		t.Fatalf("evidence only: reports for %q, want the cluster and shop (db's finding is resolved)", keys)
	}
	msg := resultsOf(got[""])[0].(map[string]any)["message"].(string)
	if !strings.Contains(msg, "findings are all here") {
		t.Errorf("evidence-only message: %s", msg)
	}
}

// Scoped to one namespace (-n), that namespace's report carries the gaps; no cluster report.
func TestPlanNamespaceScope(t *testing.T) {
	cov := report.Coverage{Checks: []string{rollout},
		Skipped: []report.Note{{Check: "stuck-terminating", Reason: "forbidden: list pods", Inputs: []string{string(snapshot.InputPods)}}}}
	got := planReports(newReport(cov), PolicyReports, nil, "shop")
	if keys := slices.Sorted(maps.Keys(got)); len(keys) != 1 || keys[0] != "shop" {
		t.Fatalf("reports for %q, want shop", keys)
	}
	if g := resultLines(got["shop"]); got["shop"].GetKind() != "PolicyReport" || g != "stuck-terminating not-evaluated error | fail=0 warn=0 error=1" {
		t.Errorf("shop %s: %s", got["shop"].GetKind(), g)
	}
}
