package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/testcluster"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/audit"
)

// TestAuditMetricsAndReports runs `audit` as a process against the real apiserver, behind the
// fault proxy so that an outage can be played: a stuck object shows in the metrics and in an
// openreports.io report within one cycle, survives cycles that cannot reach the apiserver, and
// goes away from both in the cycle after it was resolved.
func TestAuditMetricsAndReports(t *testing.T) {
	t.Parallel()
	const ns = "au"
	c := testcluster.Start(t, testcluster.Options{})
	installReportCRDs(t, c)
	createNamespace(t, c, ns)
	createNamespace(t, c, "au-healthy")
	// Someone else's report in the namespace: the auditor never touches it.
	other := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "openreports.io/v1alpha1", "kind": "Report",
		"metadata": map[string]any{"name": "other-tool", "namespace": ns, "labels": map[string]any{"app.kubernetes.io/managed-by": "other-tool"}},
		"results":  []any{map[string]any{"policy": "p", "result": "pass"}},
	}}
	if _, err := c.Dynamic().Resource(audit.OpenReports.GVR(false)).Namespace(ns).Create(t.Context(), other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	proxy := c.StartFaultProxy(t, ns)
	cs := c.Clientset()
	ctx := t.Context()

	p := startAudit(t, proxy.Kubeconfig, "-A", "--checks", teCheck, "--min-age", "0s", "--interval", "2s")
	eventually(t, commandTimeout, "/readyz", func(ctx context.Context) (bool, error) {
		code, _, err := httpGet(ctx, p.probes+"/readyz")
		return err == nil && code == http.StatusOK, nil
	})
	if code, _, err := httpGet(ctx, p.probes+"/healthz"); err != nil || code != http.StatusOK {
		t.Fatalf("/healthz: %d %v", code, err)
	}
	s := p.scrape(t)
	if got := s.series("workloaddoctor_findings"); len(got) != 0 || !strings.Contains(string(s), "workloaddoctor_coverage_complete 1") {
		t.Fatalf("healthy cluster: findings %v, metrics:\n%s", got, s)
	}
	if r := auditReport(t, c, audit.OpenReports, ns); r != nil {
		t.Fatalf("healthy namespace has a report: %v", r.Object)
	}

	// An object held by a finalizer whose owner never acts, the way an operator that is gone leaves it.
	heldConfigMap(t, cs, ns)
	labels := []string{`check="stuck-terminating"`, `namespace="au"`, `kind="ConfigMap"`}
	s = p.withinCycles(t, 2, "success", "the stuck ConfigMap in the metrics", func(s scrape) bool {
		return len(s.series("workloaddoctor_findings", labels...)) == 1
	})
	age := s.series("workloaddoctor_finding_age_seconds", append(labels, `name="held"`, `pod=""`)...)
	if len(age) != 1 || len(s.series("workloaddoctor_findings", `namespace="au-healthy"`)) != 0 {
		t.Fatalf("finding series: %v\n%s", age, s)
	}
	if !regexp.MustCompile(`(?m)^workloaddoctor_last_success_timestamp_seconds \d\.\d+e\+09$`).MatchString(string(s)) {
		t.Errorf("last success timestamp missing:\n%s", s)
	}
	// The report is written in the same cycle, before the cycle is counted.
	rep := auditReport(t, c, audit.OpenReports, ns)
	if rep == nil {
		t.Fatalf("no report in %s after the cycle that found the ConfigMap; log:\n%s", ns, strings.Join(p.log(), "\n"))
	}
	if got := reportResults(rep); strings.Join(got, ";") != "stuck-terminating finalizer-owner-not-acting warn held" {
		t.Errorf("report results = %v", got)
	}
	if fail, _, _ := unstructured.NestedInt64(rep.Object, "summary", "fail"); fail != 0 {
		t.Errorf("summary.fail = %d, want 0 (a warning is warn)", fail)
	}
	if warn, _, _ := unstructured.NestedInt64(rep.Object, "summary", "warn"); warn != 1 {
		t.Errorf("summary.warn = %d, want 1", warn)
	}
	if mf := rep.GetManagedFields(); len(mf) != 1 || mf[0].Manager != "workloaddoctor" || mf[0].Operation != metav1.ManagedFieldsOperationApply {
		t.Errorf("report managed fields = %+v, want one Apply entry of workloaddoctor", mf)
	}
	if r := auditReport(t, c, audit.OpenReports, "au-healthy"); r != nil {
		t.Errorf("a namespace without findings got a report")
	}
	// Another manager's label on the auditor's report survives the next apply.
	labelPatch := []byte(`{"metadata":{"labels":{"team":"platform"}}}`)
	if _, err := c.Dynamic().Resource(audit.OpenReports.GVR(false)).Namespace(ns).Patch(ctx, audit.ReportName, types.MergePatchType, labelPatch, metav1.PatchOptions{FieldManager: "kubectl-label"}); err != nil {
		t.Fatal(err)
	}
	s = p.withinCycles(t, 1000, "success", "one more good cycle", func(s2 scrape) bool { return s2.scans("success") >= s.scans("success")+1 })
	labelled := auditReport(t, c, audit.OpenReports, ns)
	if labelled == nil || labelled.GetLabels()["team"] != "platform" || labelled.GetLabels()["app.kubernetes.io/managed-by"] != "workloaddoctor" {
		t.Fatalf("after re-apply: %v", labelled)
	}
	// The finding stays as it was: the next cycles apply the same report, which the apiserver
	// does not write again (its age is given as the time it counts from, not as a duration).
	s = p.withinCycles(t, 1000, "success", "two more good cycles", func(s2 scrape) bool { return s2.scans("success") >= s.scans("success")+2 })
	if rep := auditReport(t, c, audit.OpenReports, ns); rep == nil || rep.GetResourceVersion() != labelled.GetResourceVersion() {
		t.Errorf("an unchanged finding rewrote its report: resourceVersion %s -> %v\n%v", labelled.GetResourceVersion(), rep.GetResourceVersion(), rep.Object["results"])
	}

	// Every read reset: cycles fail, are counted, and the finding stays published. Writes go
	// through, so an auditor that deleted or rewrote its report after a failed cycle would show.
	proxy.Set(&testcluster.FaultRule{Method: http.MethodGet, Path: regexp.MustCompile(`.`), Fault: testcluster.Reset})
	errorsBefore := s.scans("error")
	s = p.withinCycles(t, 1000, "error", "two failed cycles", func(s scrape) bool { return s.scans("error") >= errorsBefore+2 })
	if len(s.series("workloaddoctor_findings", labels...)) != 1 || !strings.Contains(string(s), "workloaddoctor_coverage_complete 0") {
		t.Errorf("after failed cycles the finding must stay and coverage be 0:\n%s", s)
	}
	code, _, err := httpGet(ctx, p.probes+"/readyz")
	if err != nil || code != http.StatusOK {
		t.Errorf("/readyz during the outage: %d %v (the last good metrics are still served)", code, err)
	}
	if rep := auditReport(t, c, audit.OpenReports, ns); rep == nil || len(reportResults(rep)) != 1 {
		t.Errorf("the report must survive cycles that could not look: %v", rep)
	}
	proxy.Set()

	// Resolved: the owner removes its finalizer; the next cycle after that drops the series.
	releaseConfigMap(t, cs, ns)
	p.withinCycles(t, 2, "success", "the resolved finding gone from the metrics and the reports", func(s scrape) bool {
		return len(s.series("workloaddoctor_findings")) == 0 && len(s.series("workloaddoctor_finding_age_seconds")) == 0 &&
			auditReport(t, c, audit.OpenReports, ns) == nil
	})
	if _, err := c.Dynamic().Resource(audit.OpenReports.GVR(false)).Namespace(ns).Get(ctx, "other-tool", metav1.GetOptions{}); err != nil {
		t.Errorf("another tool's report: %v", err)
	}

	// One JSON line per cycle, with what it found, cost and covered; failed cycles say so.
	var ok, failed int
	for _, l := range p.log() {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line is not JSON: %q", l)
		}
		switch m["msg"] {
		case "scan":
			ok++
			if m["requests"].(float64) < 1 || m["coverage"] == nil || m["findings"] == nil || m["duration"] == nil {
				t.Errorf("cycle line lacks a field: %s", l)
			}
		case "scan failed; keeping the last good outputs", "scan incomplete; keeping the last good outputs":
			failed++
		}
	}
	if ok < 3 || failed < 2 {
		t.Errorf("%d good and %d failed cycle lines, want >= 3 and >= 2", ok, failed)
	}
}

// TestAuditOnce: one cycle with scan's exit codes.
func TestAuditOnce(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, testcluster.Options{})
	createNamespace(t, c, "ao")
	args := []string{"audit", "-n", "ao", "--checks", teCheck, "--min-age", "0s", "--once", "--fail-on", "warning"}
	if _, stderr, code := runPlugin(t, c.Kubeconfig, args...); code != 0 || !strings.Contains(stderr, `"msg":"scan"`) ||
		!strings.Contains(stderr, "no policy report API served") {
		t.Fatalf("healthy namespace, no report CRDs: exit %d, want 0 and a note that no report is written\n%s", code, stderr)
	}
	installReportCRDs(t, c)
	cs := c.Clientset()
	heldConfigMap(t, cs, "ao")
	if _, stderr, code := runPlugin(t, c.Kubeconfig, append(args, "--reports", "policyreport")...); code != 2 || !strings.Contains(stderr, `"findings":1`) {
		t.Fatalf("stuck ConfigMap: exit %d, want 2\n%s", code, stderr)
	}
	// --reports policyreport writes the wgpolicyk8s.io kinds even though openreports.io is served.
	if rep := auditReport(t, c, audit.PolicyReports, "ao"); rep == nil || strings.Join(reportResults(rep), ";") != "stuck-terminating finalizer-owner-not-acting warn held" {
		t.Errorf("PolicyReport: %v", rep)
	}
	if rep := auditReport(t, c, audit.OpenReports, "ao"); rep != nil {
		t.Errorf("--reports policyreport wrote an openreports.io Report")
	}
	if _, stderr, code := runPlugin(t, c.Kubeconfig, append(args[:len(args)-1], "error")...); code != 0 {
		t.Fatalf("a warning with --fail-on error: exit %d, want 0\n%s", code, stderr)
	}
	// A namespace being deleted, held by its stuck content, takes no report; the others still get theirs.
	createNamespace(t, c, "ao-gone")
	heldConfigMap(t, cs, "ao-gone")
	if err := cs.CoreV1().Namespaces().Delete(t.Context(), "ao-gone", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runPlugin(t, c.Kubeconfig, "audit", "-A", "--checks", teCheck, "--min-age", "0s", "--once", "--fail-on", "never", "--reports", "openreports")
	if code != 0 || !strings.Contains(stderr, `"msg":"scan"`) || strings.Contains(stderr, "not all written") {
		t.Fatalf("-A with a Terminating namespace: exit %d\n%s", code, stderr)
	}
	if auditReport(t, c, audit.OpenReports, "ao") == nil || auditReport(t, c, audit.OpenReports, "ao-gone") != nil {
		t.Errorf("reports: want one in ao and none in the Terminating ao-gone")
	}
	if cr := auditReport(t, c, audit.OpenReports, ""); cr == nil || !strings.Contains(strings.Join(reportResults(cr), ";"), " ao-gone") {
		t.Errorf("ClusterReport for the Terminating namespace: %v\n%s", cr, stderr)
	}

	// The apiserver unreachable: the cycle fails, exit 1, whatever it found before.
	proxy := c.StartFaultProxy(t, "ao")
	proxy.Set(&testcluster.FaultRule{Path: regexp.MustCompile(`.`), Fault: testcluster.Reset})
	if _, stderr, code := runPlugin(t, proxy.Kubeconfig, args...); code != 1 || !strings.Contains(stderr, "scan failed") {
		t.Fatalf("apiserver unreachable: exit %d, want 1\n%s", code, stderr)
	}
}
