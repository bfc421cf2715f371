package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/testcluster"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/audit"
)

// TestAuditAPIServerRestart runs `audit` as a process while the real kube-apiserver is stopped in
// the middle of a cycle (held on the cycle's pod LIST) and kept down for longer than an interval,
// then started again (same etcd, address and certificates): the cut cycle and the ones after fail
// and are counted, the reports stay byte for byte what the last good cycle wrote, the metrics
// keep its findings, and the first cycle after the restart publishes what changed meanwhile. A
// quick unannounced restart after that loses nothing either. The auditor reaches the apiserver
// through the fault proxy, forwarding untouched except where a step says otherwise.
func TestAuditAPIServerRestart(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, testcluster.Options{})
	installReportCRDs(t, c)
	cs := c.Clientset()
	for _, ns := range []string{"ar-resolved", "ar-stuck"} {
		createNamespace(t, c, ns)
		heldConfigMap(t, cs, ns)
	}
	proxy := c.StartFaultProxy(t, "ar-stuck")
	p := startAudit(t, proxy.Kubeconfig, "-A", "--checks", teCheck, "--min-age", "0s", "--interval", "2s")
	p.withinCycles(t, 2, "success", "both findings in the metrics and the reports", func(s scrape) bool {
		return len(s.series("workloaddoctor_findings")) == 2 &&
			auditReport(t, c, audit.OpenReports, "ar-resolved") != nil && auditReport(t, c, audit.OpenReports, "ar-stuck") != nil
	})
	// Stopped mid-cycle: the next cycle's pod LIST waits while the test reads the reports the
	// last good cycle wrote (no cycle writes in between: cycles run one after the other) and
	// stops the apiserver; then the LIST goes on to find it gone.
	hit, resume, done := make(chan struct{}), make(chan struct{}), t.Context().Done()
	proxy.Set(&testcluster.FaultRule{Method: http.MethodGet, Path: regexp.MustCompile(`^/api/v1/pods$`), Fault: testcluster.Before, Times: 1,
		Hook: func() {
			select {
			case hit <- struct{}{}:
				<-resume
			case <-done: // the test ended first
			}
		}})
	eventually(t, commandTimeout, "a cycle to LIST pods", func(ctx context.Context) (bool, error) {
		select {
		case <-hit:
			return true, nil
		case <-ctx.Done():
			return false, ctx.Err()
		}
	})
	before := map[string]*unstructured.Unstructured{}
	for _, ns := range []string{"ar-resolved", "ar-stuck"} {
		before[ns] = auditReport(t, c, audit.OpenReports, ns)
	}
	errs := p.scrape(t).scans("error")
	c.StopAPIServer(t)
	close(resume)
	proxy.Set()

	// Down for longer than an interval: the cut cycle and at least one more fail, each counted.
	s := p.withinCycles(t, 1000, "error", "two failed cycles while the apiserver is down", func(s scrape) bool { return s.scans("error") >= errs+2 })
	if len(s.series("workloaddoctor_findings")) != 2 || !strings.Contains(string(s), "workloaddoctor_coverage_complete 0") {
		t.Errorf("while the apiserver is down the findings must stay and coverage be 0:\n%s", s)
	}
	if code, _, err := httpGet(t.Context(), p.probes+"/readyz"); err != nil || code != http.StatusOK {
		t.Errorf("/readyz while the apiserver is down: %d %v (the last good metrics are still served)", code, err)
	}
	// Back up, but the auditor's reads held off (503) while the test looks at what the outage
	// left and resolves one finding; its writes go through, so a report it deleted or rewrote
	// after the failed cycles would show. Then the auditor is let through.
	proxy.Set(&testcluster.FaultRule{Method: http.MethodGet, Path: regexp.MustCompile(`.`), Fault: testcluster.Status, Code: http.StatusServiceUnavailable})
	c.StartAPIServer(t)
	for ns, b := range before {
		assertReportKept(t, c, ns, b)
	}
	releaseConfigMap(t, cs, "ar-resolved")
	proxy.Set()
	s = p.withinCycles(t, 2, "success", "the finding resolved during the outage gone from the metrics and the reports", func(s scrape) bool {
		return len(s.series("workloaddoctor_findings", `namespace="ar-resolved"`)) == 0 && auditReport(t, c, audit.OpenReports, "ar-resolved") == nil
	})
	if len(s.series("workloaddoctor_findings", `namespace="ar-stuck"`)) != 1 || !strings.Contains(string(s), "workloaddoctor_coverage_complete 1") {
		t.Errorf("after the restart: the stuck finding must stay and coverage be 1:\n%s", s)
	}
	if r := auditReport(t, c, audit.OpenReports, "ar-stuck"); r == nil || r.GetUID() != before["ar-stuck"].GetUID() || len(reportResults(r)) != 1 {
		t.Errorf("the report of the finding still stuck after the restart: %v", r)
	}

	// A quick restart between or during cycles, unannounced: good cycles follow, nothing lost.
	c.RestartAPIServer(t)
	p.withinCycles(t, 1000, "success", "a good cycle after the second restart", func(s2 scrape) bool { return s2.scans("success") >= s.scans("success")+1 })
	if r := auditReport(t, c, audit.OpenReports, "ar-stuck"); r == nil || r.GetUID() != before["ar-stuck"].GetUID() || len(reportResults(r)) != 1 {
		t.Errorf("the report after the second restart: %v", r)
	}
	if n := countLines(p.log(), "scan failed; keeping the last good outputs") + countLines(p.log(), "scan incomplete; keeping the last good outputs"); n < 2 {
		t.Errorf("%d failed-cycle log lines, want at least 2", n)
	}
}

// assertReportKept fails unless the auditor's report in ns is the same object as want (never
// deleted and created again) with byte-for-byte the same results and summary.
func assertReportKept(t *testing.T, c *testcluster.Cluster, ns string, want *unstructured.Unstructured) {
	t.Helper()
	got := auditReport(t, c, audit.OpenReports, ns)
	if got == nil {
		t.Fatalf("the report in %s is gone", ns)
	}
	if got.GetUID() != want.GetUID() {
		t.Errorf("the report in %s was replaced: uid %s, want %s", ns, got.GetUID(), want.GetUID())
	}
	for _, field := range []string{"results", "summary"} {
		g, _ := json.Marshal(got.Object[field])
		w, _ := json.Marshal(want.Object[field])
		if string(g) != string(w) {
			t.Errorf("report %s %s changed:\n got %s\nwant %s", ns, field, g, w)
		}
	}
}

// countLines counts the JSON log lines whose msg is msg.
func countLines(lines []string, msg string) int {
	n := 0
	for _, l := range lines {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["msg"] == msg {
			n++
		}
	}
	return n
}
