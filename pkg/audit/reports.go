package audit

import (
	"fmt"
	"strings"
	"time"
	"unicode"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/render"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// Report names and labels (docs/contract.md, "Auditor").
const (
	ReportName      = "workloaddoctor"
	FieldManager    = "workloaddoctor"
	ManagedByLabel  = "app.kubernetes.io/managed-by"
	ManagedByValue  = "workloaddoctor"
	resultSource    = "workloaddoctor"
	resultCategory  = "stuck-workloads"
	reportsAutoMode = "auto"
)

// ReportAPI is one of the policy report APIs the auditor can write.
type ReportAPI struct {
	// Name is the --reports value that picks it.
	Name                 string
	GroupVersion         schema.GroupVersion
	Kind, ClusterKind    string
	Resource, ClusterRes string
	// ReportSource: the API has a report-level source field.
	ReportSource bool
}

// The report APIs, in the order --reports auto prefers them.
var (
	OpenReports = ReportAPI{Name: "openreports", GroupVersion: schema.GroupVersion{Group: "openreports.io", Version: "v1alpha1"},
		Kind: "Report", ClusterKind: "ClusterReport", Resource: "reports", ClusterRes: "clusterreports", ReportSource: true}
	PolicyReports = ReportAPI{Name: "policyreport", GroupVersion: schema.GroupVersion{Group: "wgpolicyk8s.io", Version: "v1alpha2"},
		Kind: "PolicyReport", ClusterKind: "ClusterPolicyReport", Resource: "policyreports", ClusterRes: "clusterpolicyreports"}
	ReportAPIs = []ReportAPI{OpenReports, PolicyReports}
)

// GVR returns the resource of the namespaced (cluster false) or cluster-scoped report.
func (a ReportAPI) GVR(cluster bool) schema.GroupVersionResource {
	if cluster {
		return a.GroupVersion.WithResource(a.ClusterRes)
	}
	return a.GroupVersion.WithResource(a.Resource)
}

// BuildReports turns a scan report into the policy reports that describe it: one per namespace
// with findings, keyed by namespace, and one cluster-scoped report keyed "" when cluster-scoped
// objects have findings. Only names, IDs and the summary go in: never an object's data.
func BuildReports(r *report.Report, api ReportAPI) map[string]*unstructured.Unstructured {
	byNS := map[string][]report.Finding{}
	for _, f := range r.Findings {
		byNS[f.Object.Namespace] = append(byNS[f.Object.Namespace], f)
	}
	out := map[string]*unstructured.Unstructured{}
	for ns, fs := range byNS {
		out[ns] = buildReport(api, ns, fs, r.Metadata.GeneratedAt)
	}
	// Suppressed findings are results too, marked skip: the report says the team accepted them
	// and why, and its fail and warn counts leave them out.
	for _, sf := range r.Suppressed {
		ns := sf.Object.Namespace
		if out[ns] == nil {
			out[ns] = buildReport(api, ns, nil, r.Metadata.GeneratedAt)
		}
		setResults(out[ns], append(resultsOf(out[ns]), skipResult(sf, r.Metadata.GeneratedAt)))
	}
	return out
}

// skipResult is a suppressed finding's result: skip, with who suppressed it and why.
func skipResult(sf report.Suppressed, now time.Time) map[string]any {
	res := result(sf.Finding, now)
	res["result"] = "skip"
	props := res["properties"].(map[string]any)
	props["suppressedBy"] = render.Suppressor(sf.SuppressedBy)
	props["suppressionReason"] = sf.Reason
	return res
}

func buildReport(api ReportAPI, ns string, fs []report.Finding, now time.Time) *unstructured.Unstructured {
	kind := api.Kind
	if ns == "" {
		kind = api.ClusterKind
	}
	meta := map[string]any{"name": ReportName, "labels": map[string]any{ManagedByLabel: ManagedByValue}}
	if ns != "" {
		meta["namespace"] = ns
	}
	// Findings arrive sorted by check, severity and object (report.Normalize); sorting by ID on
	// top would reorder results from one cycle to the next for no reason, so keep that order.
	var results []any
	for _, f := range fs {
		results = append(results, result(f, now))
	}
	obj := map[string]any{"apiVersion": api.GroupVersion.String(), "kind": kind, "metadata": meta}
	if api.ReportSource {
		obj["source"] = resultSource
	}
	u := &unstructured.Unstructured{Object: obj}
	setResults(u, results)
	return u
}

// setResults sets a report's results and the summary that counts them by result.
func setResults(u *unstructured.Unstructured, results []any) {
	sum := map[string]any{"pass": int64(0), "fail": int64(0), "warn": int64(0), "error": int64(0), "skip": int64(0)}
	for _, r := range results {
		if m, ok := r.(map[string]any); ok {
			if n, ok := sum[fmt.Sprint(m["result"])].(int64); ok {
				sum[fmt.Sprint(m["result"])] = n + 1
			}
		}
	}
	u.Object["summary"] = sum
	u.Object["results"] = results
}

// result maps one finding to a report result: error -> fail/high, warning -> warn/medium,
// info -> warn/low. now is the scan's time.
func result(f report.Finding, now time.Time) map[string]any {
	res, sev := "warn", "low"
	switch f.Severity {
	case report.SeverityError:
		res, sev = "fail", "high"
	case report.SeverityWarning:
		sev = "medium"
	}
	ref := map[string]any{"apiVersion": f.Object.APIVersion, "kind": f.Object.Kind, "name": f.Object.Name}
	if f.Object.Namespace != "" {
		ref["namespace"] = f.Object.Namespace
	}
	if f.Object.UID != "" {
		ref["uid"] = f.Object.UID
	}
	props := map[string]any{"findingId": f.ID, "since": f.Since.UTC().Format(time.RFC3339)}
	var fixes []string
	seen := map[string]bool{}
	for _, fx := range f.Fixes {
		if !seen[fx.Action] {
			seen[fx.Action] = true
			fixes = append(fixes, fx.Action)
		}
	}
	if len(fixes) > 0 {
		props["fixes"] = strings.Join(fixes, ",")
	}
	var blocked []string
	for _, b := range f.BlockedBy {
		s := strings.ToLower(b.Kind) + "/" + b.Name
		if b.Namespace != "" {
			s = b.Namespace + "/" + s
		}
		blocked = append(blocked, s)
	}
	if len(blocked) > 0 {
		props["blockedBy"] = strings.Join(blocked, ",")
	}
	return map[string]any{
		"source": resultSource, "policy": f.Check, "rule": f.RootCause.ID, "category": resultCategory,
		"result": res, "severity": sev, "message": stableMessage(f.Summary, f.Since, now),
		"timestamp":  map[string]any{"seconds": f.Since.Unix(), "nanos": int64(0)},
		"resources":  []any{ref},
		"properties": props,
	}
}

// stableMessage is the summary with its age ("Terminating for 5m: ...") given as the time it
// counts from ("Terminating since 2026-11-24T10:00:00Z: ..."), so a finding that stays the same
// leaves its report unchanged from one cycle to the next: without it every cycle would rewrite
// every report, for a number a reader can work out from the timestamp. The summary's age was
// taken at the scan's time, which GeneratedAt keeps to the second, so both whole seconds are
// tried. A summary whose age counts from another time is kept as it is.
func stableMessage(summary string, since, now time.Time) string {
	if since.IsZero() {
		return summary
	}
	for _, at := range []time.Time{now, now.Add(time.Second)} {
		age := " for " + checks.Age(at, since)
		i := strings.Index(summary, age)
		if i < 0 {
			continue
		}
		rest := summary[i+len(age):]
		if rest != "" && (unicode.IsLetter(rune(rest[0])) || unicode.IsDigit(rune(rest[0]))) {
			continue // a longer age ("5m" within "5m1s")
		}
		return summary[:i] + " since " + since.UTC().Format(time.RFC3339) + rest
	}
	return summary
}
