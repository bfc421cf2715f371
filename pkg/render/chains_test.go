package render

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// A Deployment and its ReplicaSet waiting on one pod on a dead node read as one problem: the
// pod's row, which says what it holds; -o wide keeps every row with its chain.
func TestTableFoldsChainsUnderTheirRoot(t *testing.T) {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	root := report.Finding{ID: "wd-pod", Check: "stuck-terminating", Severity: report.SeverityError, Since: now.Add(-20 * time.Minute),
		Object:    report.ObjectRef{APIVersion: "v1", Kind: "Pod", Namespace: "shop", Name: "web-0"},
		Summary:   "Terminating for 20m on node kw-2 (Ready=Unknown, no heartbeat)",
		RootCause: report.RootCause{ID: "node-not-ready"}, Fixes: []report.Fix{{Action: "force-delete"}}}
	above := func(id, kind, name string, chain ...report.BlockRef) report.Finding {
		return report.Finding{ID: id, Check: "stuck-terminating", Severity: report.SeverityWarning, Since: now.Add(-20 * time.Minute),
			Object:  report.ObjectRef{APIVersion: "apps/v1", Kind: kind, Namespace: "shop", Name: name},
			Summary: kind + " waits; root: pod shop/web-0", RootCause: report.RootCause{ID: "dependents-remaining"}, BlockedBy: chain}
	}
	podRef := report.BlockRef{Kind: "Pod", Namespace: "shop", Name: "web-0", FindingID: "wd-pod"}
	rsRef := report.BlockRef{Kind: "ReplicaSet", Namespace: "shop", Name: "web-6d4", FindingID: "wd-rs"}
	orphanRoot := above("wd-x", "Deployment", "lost", report.BlockRef{Kind: "Pod", Namespace: "shop", Name: "gone", FindingID: "wd-gone"})
	r := &report.Report{Metadata: report.Metadata{GeneratedAt: now}, Findings: []report.Finding{
		above("wd-dep", "Deployment", "web", rsRef, podRef), above("wd-rs", "ReplicaSet", "web-6d4", podRef), root, orphanRoot}}
	var buf bytes.Buffer
	if err := Report(&buf, r, FormatTable, false); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	if strings.Count(out, "dependents-remaining") != 1 ||
		!strings.Contains(out, "also holds shop/deployment/web, shop/replicaset/web-6d4") {
		t.Errorf("the chain is not folded under its root:\n%s", out)
	}
	if !strings.Contains(out, "lost") {
		t.Errorf("a finding whose root is not in the report lost its row:\n%s", out)
	}
	buf.Reset()
	if err := Report(&buf, r, FormatWide, false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "blocked by: shop/replicaset/web-6d4 -> shop/pod/web-0 (root finding wd-pod)") {
		t.Errorf("wide output does not list the chain:\n%s", buf.String())
	}
}
