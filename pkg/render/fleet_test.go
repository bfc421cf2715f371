package render

import (
	"bytes"
	"strings"
	"testing"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

func TestFleetTable(t *testing.T) {
	r := &report.Report{Metadata: report.Metadata{Context: "prod-a", ClusterID: "uid-a", ServerVersion: "v1.37.1"},
		Coverage: report.Coverage{Checks: []string{"stuck-terminating"}},
		Findings: []report.Finding{{Check: "stuck-terminating", Severity: report.SeverityError, RootCause: report.RootCause{ID: "finalizer-owner-missing"},
			Object: report.ObjectRef{APIVersion: "v1", Kind: "Pod", Namespace: "shop", Name: "web-0", UID: "pod-a"}}}}
	r.Normalize()
	var f report.FleetReport
	f.Add(report.ClusterResult{Context: "prod-a", Server: "https://a:6443", Status: report.ClusterScanned, Duration: "1.2s", ExitCode: 2}, r)
	f.Add(report.ClusterResult{Context: "prod-b", Server: "https://b:6443", Status: report.ClusterUnreachable, Error: "dial tcp: connection refused", Duration: "3ms", ExitCode: 1}, nil)
	f.Normalize()
	var b bytes.Buffer
	if err := FleetReport(&b, &f, FormatTable, false); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	a, bIdx := strings.Index(out, "=== context prod-a (https://a:6443, cluster uid-a, v1.37.1)"), strings.Index(out, "=== context prod-b (https://b:6443)")
	web := strings.Index(out, "shop/pod/web-0")
	if a < 0 || bIdx < 0 || web < a || web > bIdx {
		t.Errorf("the finding should sit under prod-a, before prod-b:\n%s", out)
	}
	for _, s := range []string{"Not scanned: unreachable: dial tcp: connection refused", "CONTEXT", "prod-b    unreachable",
		"1 finding in 2 contexts: 1 error, 0 warning, 0 info; 1 context not scanned."} {
		if !strings.Contains(out, s) {
			t.Errorf("table lacks %q:\n%s", s, out)
		}
	}
}
