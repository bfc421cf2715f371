package e2e

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/testcluster"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/audit"
)

var widgets = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}

// TestAuditDegradedCoverage runs `audit` as the ServiceAccount of the shipped kustomize base on a
// cluster with another operator's CRD (Widget). While an extra role lets it list widgets the scan
// is complete; without it (the shipped grants: other operators' resources are forbidden) the
// scan is degraded: the cycle still counts as a success with coverage 0, the reports keep the
// stuck Widget the auditor can no longer see (its namespace's report is not deleted), and every
// report, the cluster-scoped one included, says what was not covered. Given the role back, a
// complete cycle drops what was resolved and the coverage results.
func TestAuditDegradedCoverage(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, testcluster.Options{})
	installReportCRDs(t, c)
	installLooseCRD(t, c, "example.com", "Widget", "widgets")
	createNamespace(t, c, "workloaddoctor")
	applyYAML(t, c, kustomize(t, c, filepath.Join(repoRoot(t), "deploy", "auditor")), false)
	const saUser = "system:serviceaccount:workloaddoctor:workloaddoctor-auditor"
	cs, ctx := c.Clientset(), t.Context()
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets-read"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{"example.com"}, Resources: []string{"widgets"}, Verbs: []string{"get", "list", "watch"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets-read"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "widgets-read"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "workloaddoctor", Name: "workloaddoctor-auditor"}},
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createNamespace(t, c, "rd-cm")
	createNamespace(t, c, "rd-widget")
	heldConfigMap(t, cs, "rd-cm")
	heldWidget(t, c, "rd-widget")

	p := startAudit(t, c.UserKubeconfigInNamespace(t, "workloaddoctor", saUser), "-A", "--checks", teCheck, "--min-age", "0s", "--interval", "2s")
	p.withinCycles(t, 1000, "success", "a complete cycle with both findings reported", func(s scrape) bool {
		return strings.Contains(string(s), "workloaddoctor_coverage_complete 1") && len(s.series("workloaddoctor_findings")) == 2 &&
			auditReport(t, c, audit.OpenReports, "rd-cm") != nil && auditReport(t, c, audit.OpenReports, "rd-widget") != nil
	})
	if cr := auditReport(t, c, audit.OpenReports, ""); cr != nil {
		t.Errorf("a complete scan without cluster-scoped findings wrote a ClusterReport: %v", reportResults(cr))
	}
	widgetBefore := auditReport(t, c, audit.OpenReports, "rd-widget")
	cmBefore := auditReport(t, c, audit.OpenReports, "rd-cm")

	// Narrowed to the shipped grants: widgets are forbidden, stuck-terminating runs degraded.
	if err := cs.RbacV1().ClusterRoleBindings().Delete(ctx, "widgets-read", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	errs := p.scrape(t).scans("error")
	s := p.withinCycles(t, 1000, "success", "a degraded cycle published", func(s scrape) bool {
		return strings.Contains(string(s), "workloaddoctor_coverage_complete 0") && auditReport(t, c, audit.OpenReports, "") != nil
	})
	if s.scans("error") != errs {
		t.Errorf("a degraded cycle counted as an error: %d -> %d", errs, s.scans("error"))
	}
	// The metrics keep the Widget's finding too: an alert on it does not resolve.
	if got := s.series("workloaddoctor_findings"); len(got) != 2 || len(s.series("workloaddoctor_findings", `kind="Widget"`)) != 1 {
		t.Errorf("findings series in the degraded cycle = %v, want the ConfigMap's and the Widget's", got)
	}
	gap := "stuck-terminating partly-evaluated error "
	wr := auditReport(t, c, audit.OpenReports, "rd-widget")
	if wr == nil || wr.GetUID() != widgetBefore.GetUID() {
		t.Fatalf("the report of the namespace whose Widget the auditor can no longer read was deleted or replaced: %v", wr)
	}
	wantWidget := append(reportResults(widgetBefore), gap)
	if got := reportResults(wr); strings.Join(got, ";") != strings.Join(wantWidget, ";") {
		t.Errorf("rd-widget results = %q, want %q", got, wantWidget)
	}
	if b, a := resultJSON(t, widgetBefore, 0), resultJSON(t, wr, 0); a != b {
		t.Errorf("the kept Widget result changed:\n got %s\nwant %s", a, b)
	}
	gapResult := resultJSON(t, wr, 1)
	if !strings.Contains(gapResult, "forbidden: list example.com/widgets") || !strings.Contains(gapResult, `"coverage":"degraded"`) {
		t.Errorf("the coverage result does not say what was not read: %s", gapResult)
	}
	if errs, _, _ := unstructured.NestedInt64(wr.Object, "summary", "error"); errs != 1 {
		t.Errorf("rd-widget summary.error = %d, want 1", errs)
	}
	if got := reportResults(auditReport(t, c, audit.OpenReports, "rd-cm")); len(got) != 2 || got[1] != gap || got[0] != reportResults(cmBefore)[0] {
		t.Errorf("rd-cm results = %q, want the ConfigMap and the coverage result", got)
	}
	if got := reportResults(auditReport(t, c, audit.OpenReports, "")); strings.Join(got, ";") != gap {
		t.Errorf("ClusterReport results = %q, want only the coverage result", got)
	}

	// The role back, the Widget released: a complete cycle drops it and the coverage results.
	binding.ResourceVersion = ""
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	releaseWidget(t, c, "rd-widget")
	p.withinCycles(t, 1000, "success", "a complete cycle after the role is back", func(s scrape) bool {
		return strings.Contains(string(s), "workloaddoctor_coverage_complete 1") && auditReport(t, c, audit.OpenReports, "rd-widget") == nil &&
			auditReport(t, c, audit.OpenReports, "") == nil
	})
	if got := reportResults(auditReport(t, c, audit.OpenReports, "rd-cm")); strings.Join(got, ";") != strings.Join(reportResults(cmBefore), ";") {
		t.Errorf("rd-cm results after coverage came back = %q, want %q", got, reportResults(cmBefore))
	}
}

// heldWidget leaves Widget ns/held Terminating behind a finalizer nobody removes.
func heldWidget(t *testing.T, c *testcluster.Cluster, ns string) {
	t.Helper()
	w := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "held", "finalizers": []any{"example.com/protect"}}}}
	res := c.Dynamic().Resource(widgets).Namespace(ns)
	if _, err := res.Create(t.Context(), w, metav1.CreateOptions{FieldManager: "widget-operator"}); err != nil {
		t.Fatal(err)
	}
	if err := res.Delete(t.Context(), "held", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

func releaseWidget(t *testing.T, c *testcluster.Cluster, ns string) {
	t.Helper()
	patch := []byte(`{"metadata":{"finalizers":null}}`)
	if _, err := c.Dynamic().Resource(widgets).Namespace(ns).Patch(t.Context(), "held", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the Widget gone", func(ctx context.Context) (bool, error) {
		_, err := c.Dynamic().Resource(widgets).Namespace(ns).Get(ctx, "held", metav1.GetOptions{})
		return err != nil, nil
	})
}

// resultJSON is the i-th result of a report as JSON.
func resultJSON(t *testing.T, u *unstructured.Unstructured, i int) string {
	t.Helper()
	items, _, _ := unstructured.NestedSlice(u.Object, "results")
	if i >= len(items) {
		t.Fatalf("report %s has %d results, want at least %d", u.GetNamespace(), len(items), i+1)
	}
	raw, err := json.Marshal(items[i])
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}
