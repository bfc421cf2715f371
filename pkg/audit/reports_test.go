package audit

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

func TestBuildReportsMapsFindingsToResults(t *testing.T) {
	owner := &report.ObjectRef{APIVersion: "apps/v1", Kind: "ReplicaSet", Namespace: "shop", Name: "web-5d8"}
	pod := finding("shop", "Pod", "web-1", "stuck-terminating", "finalizer-owner-missing", report.SeverityError, time.Minute, owner)
	pod.Summary = "pod web-1 has been terminating for 1m"
	pod.Fixes = []report.Fix{{Action: "remove-finalizer", Params: map[string]string{"finalizer": "a"}}, {Action: "remove-finalizer", Params: map[string]string{"finalizer": "b"}}, {Action: "force-delete"}}
	pod.BlockedBy = []report.BlockRef{{Kind: "PersistentVolumeClaim", Namespace: "shop", Name: "data"}}
	warn := finding("shop", "ConfigMap", "cfg", "stuck-terminating", "finalizer-owner-not-acting", report.SeverityWarning, time.Hour, nil)
	info := finding("shop", "Pod", "web-2", "resize-policy-drift", "benign-defaulting", report.SeverityInfo, time.Hour, nil)
	ns := finding("", "Namespace", "old", "stuck-terminating", "namespace-content-remaining", report.SeverityError, time.Hour, nil)
	r := newReport(looked, pod, warn, info, ns)

	for _, api := range ReportAPIs {
		got := BuildReports(r, api)
		if len(got) != 2 || got["shop"] == nil || got[""] == nil {
			t.Fatalf("%s: reports for %v, want shop and the cluster", api.Name, slices.Sorted(maps.Keys(got)))
		}
		shop, cluster := got["shop"], got[""]
		if shop.GetKind() != api.Kind || cluster.GetKind() != api.ClusterKind || shop.GetAPIVersion() != api.GroupVersion.String() ||
			shop.GetName() != "workloaddoctor" || shop.GetNamespace() != "shop" || cluster.GetNamespace() != "" ||
			shop.GetLabels()[ManagedByLabel] != "workloaddoctor" {
			t.Errorf("%s: report identity: %v / %v", api.Name, shop.Object["metadata"], cluster.Object["metadata"])
		}
		if _, has := shop.Object["source"]; has != api.ReportSource {
			t.Errorf("%s: report-level source present=%v", api.Name, has)
		}
		var doc struct {
			Summary map[string]int `json:"summary"`
			Results []struct {
				Source, Policy, Rule, Category, Result, Severity, Message string
				Timestamp                                                 struct{ Seconds, Nanos int64 }
				Resources                                                 []map[string]string
				Properties                                                map[string]string
			} `json:"results"`
		}
		raw, _ := json.Marshal(shop.Object)
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatal(err)
		}
		if doc.Summary["fail"] != 1 || doc.Summary["warn"] != 2 || len(doc.Results) != 3 {
			t.Fatalf("%s: summary %v, %d results", api.Name, doc.Summary, len(doc.Results))
		}
		want := map[string][2]string{"web-1": {"fail", "high"}, "cfg": {"warn", "medium"}, "web-2": {"warn", "low"}}
		for _, res := range doc.Results {
			name := res.Resources[0]["name"]
			if w := want[name]; res.Result != w[0] || res.Severity != w[1] {
				t.Errorf("%s: %s mapped to %s/%s, want %v", api.Name, name, res.Result, res.Severity, w)
			}
			if res.Source != "workloaddoctor" || res.Category != "stuck-workloads" || res.Properties["findingId"] == "" {
				t.Errorf("%s: result %+v", api.Name, res)
			}
			if name != "web-1" {
				continue
			}
			if res.Policy != "stuck-terminating" || res.Rule != "finalizer-owner-missing" || res.Message != pod.Summary ||
				res.Timestamp.Seconds != pod.Since.Unix() || res.Resources[0]["uid"] != "shop/web-1" || res.Resources[0]["kind"] != "Pod" {
				t.Errorf("%s: web-1 result %+v", api.Name, res)
			}
			p := res.Properties
			if p["fixes"] != "remove-finalizer,force-delete" || p["blockedBy"] != "shop/persistentvolumeclaim/data" ||
				p["since"] != pod.Since.UTC().Format(time.RFC3339) || p["findingId"] != report.FindingID(pod.Object, pod.Check, pod.RootCause.ID) {
				t.Errorf("%s: web-1 properties %v", api.Name, p)
			}
		}
	}
}

// No findings, no reports: the writer deletes what it wrote before.
func TestBuildReportsEmpty(t *testing.T) {
	if got := BuildReports(newReport(looked), OpenReports); len(got) != 0 {
		t.Errorf("reports for a clean scan: %v", slices.Sorted(maps.Keys(got)))
	}
}

// A finding that stays the same writes the same result in the next cycle: its age is given as
// the time it counts from, so a report is not rewritten only because time passed.
func TestReportMessageIsStableAcrossCycles(t *testing.T) {
	since := t0.Add(-5*time.Minute - 30*time.Second)
	msg := func(now time.Time, format string) string {
		f := finding("shop", "Pod", "web-1", "stuck-terminating", "finalizer-owner-missing", report.SeverityError, 0, nil)
		f.Since = since
		f.Summary = fmt.Sprintf(format, checks.Age(now, since))
		r := newReport(looked, f)
		r.Metadata.GeneratedAt = now.Truncate(time.Second)
		return resultsOf(BuildReports(r, ReportAPIs[0])["shop"])[0].(map[string]any)["message"].(string)
	}
	for _, format := range []string{"Terminating for %s: finalizer example.com/x not removed", "pod shop/web-1 of CloneSet web has been PreparingNormal for %s"} {
		first, later := msg(t0, format), msg(t0.Add(7*time.Minute+400*time.Millisecond), format)
		if first != later {
			t.Errorf("message changed between cycles:\n%s\n%s", first, later)
		}
		if !strings.Contains(first, " since "+since.UTC().Format(time.RFC3339)) || strings.Contains(first, " for ") {
			t.Errorf("message %q does not give the time the age counts from", first)
		}
	}
	// An age that counts from another time stays as the check wrote it.
	other := finding("shop", "Pod", "web-2", "stuck-terminating", "finalizer-owner-missing", report.SeverityError, time.Hour, nil)
	other.Summary = "Terminating for 3d: volume still attached"
	if got := stableMessage(other.Summary, other.Since, t0); got != other.Summary {
		t.Errorf("message %q, want the summary unchanged", got)
	}
	// A shorter age within a longer one is not taken for it.
	if got := stableMessage("Terminating for 5m10s: x", t0.Add(-5*time.Minute), t0); got != "Terminating for 5m10s: x" {
		t.Errorf("message %q, want the summary unchanged", got)
	}
}

// With -n the namespace's own finding (the Namespace is cluster-scoped) goes in its report, and
// no cluster-scoped report is written.
func TestFoldClusterReportUnderNamespaceScope(t *testing.T) {
	pod := finding("shop", "Pod", "web-1", "stuck-terminating", "finalizer-owner-missing", report.SeverityError, time.Hour, nil)
	ns := finding("", "Namespace", "shop", "stuck-terminating", "namespace-content-remaining", report.SeverityError, time.Hour, nil)
	cov := looked
	cov.Degraded = []report.Note{{Check: "stuck-terminating", Reason: "forbidden: list example.com/widgets", Inputs: []string{"objects"}}}
	want := planReports(newReport(cov, pod, ns), ReportAPIs[0], nil, "shop")
	foldClusterReport(ReportAPIs[0], want, "shop")
	if _, has := want[""]; has || len(want) != 1 {
		t.Fatalf("reports for %v, want shop only", slices.Sorted(maps.Keys(want)))
	}
	var got []string
	for _, r := range resultsOf(want["shop"]) {
		m := r.(map[string]any)
		got = append(got, fmt.Sprint(m["rule"]))
	}
	if strings.Join(got, ",") != "finalizer-owner-missing,partly-evaluated,namespace-content-remaining" {
		t.Errorf("shop's results = %v, want the pod's, the coverage result once, and the namespace's", got)
	}
}

// A suppressed finding is a skip result with who suppressed it and why, counted apart from
// fail and warn; a namespace with only suppressed findings still has its report.
func TestBuildReportsSkipsSuppressed(t *testing.T) {
	kept := finding("shop", "Pod", "web-1", "stuck-terminating", "finalizer-owner-missing", report.SeverityError, time.Minute, nil)
	accepted := finding("legacy", "Pod", "old-1", "stuck-terminating", "finalizer-owner-missing", report.SeverityError, time.Hour, nil)
	r := newReport(looked, kept)
	r.Suppressed = []report.Suppressed{{Finding: accepted, Reason: "vendor finalizer, ticket 7",
		SuppressedBy: report.Suppressor{Source: report.SuppressedByAnnotation, Object: &report.ObjectRef{APIVersion: "v1", Kind: "Namespace", Name: "legacy"}}}}
	r.Normalize()
	got := BuildReports(r, PolicyReports)
	if got["legacy"] == nil || got["shop"] == nil {
		t.Fatalf("reports for %v", slices.Sorted(maps.Keys(got)))
	}
	var doc struct {
		Summary map[string]int `json:"summary"`
		Results []struct {
			Result     string
			Properties map[string]string
		} `json:"results"`
	}
	raw, _ := json.Marshal(got["legacy"].Object)
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Summary["skip"] != 1 || doc.Summary["fail"] != 0 || len(doc.Results) != 1 || doc.Results[0].Result != "skip" {
		t.Fatalf("legacy report: summary %v, results %+v", doc.Summary, doc.Results)
	}
	p := doc.Results[0].Properties
	if p["suppressedBy"] != "annotation on namespace/legacy" || p["suppressionReason"] != "vendor finalizer, ticket 7" || p["findingId"] == "" {
		t.Errorf("properties %v", p)
	}
}
