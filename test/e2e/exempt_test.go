package e2e

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/testcluster"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/audit"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/exempt"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// ignore returns the annotations that exempt findings of ids, with reason ("" leaves it out).
func ignore(ids, reason string) map[string]string {
	a := map[string]string{exempt.AnnotationIgnore: ids}
	if reason != "" {
		a[exempt.AnnotationReason] = reason
	}
	return a
}

// suppressedIn is the suppressed finding on an object of kind in ns, failing the test without one.
func suppressedIn(t *testing.T, rep *report.Report, kind, ns string) report.Suppressed {
	t.Helper()
	for _, s := range rep.Suppressed {
		if s.Object.Kind == kind && s.Object.Namespace == ns {
			return s
		}
	}
	t.Fatalf("no suppressed %s in %s; suppressed %+v\nfindings:\n%s", kind, ns, rep.Suppressed, summaries(rep))
	return report.Suppressed{}
}

func findingIn(rep *report.Report, kind, ns string) (report.Finding, bool) {
	for _, f := range rep.Findings {
		if f.Object.Kind == kind && f.Object.Namespace == ns {
			return f, true
		}
	}
	return report.Finding{}, false
}

// TestExemptions (issue 31) exempts stuck objects on the real apiserver and controller manager
// the ways a team does: an annotation on the object, on its controlling owner, on its namespace,
// a rule of an --exemptions file; and the ways it goes wrong: an annotation without a reason, an
// invalid file. Suppressed findings leave the summary and the exit code and say who and why.
func TestExemptions(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, testcluster.Options{ControllerManager: true})
	cs := c.Clientset()
	ctx := t.Context()
	for _, ns := range []string{"ex-obj", "ex-owner", "ex-deploy", "ex-rule", "ex-noreason", "ex-open"} {
		createNamespace(t, c, ns)
	}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ex-ns",
		Annotations: ignore("stuck-terminating", "legacy namespace, finalizers cleared by the vendor")}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	heldAnnotatedConfigMap(t, cs, "ex-obj", ignore("finalizer-owner-not-acting", "widget-operator is retired; ticket OPS-7"))
	heldAnnotatedConfigMap(t, cs, "ex-ns", nil)
	heldAnnotatedConfigMap(t, cs, "ex-rule", nil)
	heldAnnotatedConfigMap(t, cs, "ex-noreason", ignore("*", ""))
	// Built by kustomize with buildMetadata: [originAnnotations]: SARIF locates it in its file.
	heldAnnotatedConfigMap(t, cs, "ex-open", map[string]string{report.OriginAnnotation: "path: apps/legacy/configmap.yaml\nrepo: https://example.com/apps.git\n"})
	heldStatefulSetPod(t, cs, "ex-owner")
	heldDeploymentPod(t, cs, "ex-deploy")

	rules := filepath.Join(t.TempDir(), "exemptions.yaml")
	if err := os.WriteFile(rules, []byte(`apiVersion: workloaddoctor.io/v1alpha1
kind: Exemptions
rules:
- namespaces: ["ex-r*"]
  kinds: [ConfigMap]
  checks: [stuck-terminating]
  reason: migration leftovers, owned by team data
  until: "2099-01-01T00:00:00Z"
`), 0o600); err != nil {
		t.Fatal(err)
	}
	p := pluginOn(c.Kubeconfig)
	run := p.scan(t, "-A", "--checks", teCheck, "--min-age", "0s", "--fail-on", "warning", "-o", "json", "--exemptions", rules).wantExit(2)
	rep := run.report()

	t.Run("annotation on the object", func(t *testing.T) {
		s := suppressedIn(t, rep, "ConfigMap", "ex-obj")
		if s.SuppressedBy.Source != report.SuppressedByAnnotation || s.SuppressedBy.Object.String() != "ex-obj/configmap/held" ||
			s.Reason != "widget-operator is retired; ticket OPS-7" || s.RootCause.ID != "finalizer-owner-not-acting" || s.ID == "" {
			t.Errorf("suppressed %+v by %+v", s, s.SuppressedBy)
		}
	})
	t.Run("annotation on the controlling owner", func(t *testing.T) {
		s := suppressedIn(t, rep, "Pod", "ex-owner")
		if s.SuppressedBy.Source != report.SuppressedByAnnotation || s.SuppressedBy.Object.String() != "ex-owner/statefulset/db" ||
			s.Reason != "db is being migrated" || s.Owner == nil || s.Owner.Name != "db" {
			t.Errorf("suppressed %+v by %+v", s, s.SuppressedBy)
		}
	})
	t.Run("annotation on a Deployment, on its pod's ReplicaSet", func(t *testing.T) {
		s := suppressedIn(t, rep, "Pod", "ex-deploy")
		if by := s.SuppressedBy; by.Source != report.SuppressedByAnnotation || by.Object == nil || by.Object.Kind != "ReplicaSet" ||
			s.Owner == nil || by.Object.Name != s.Owner.Name ||
			s.Reason != "web is retired next sprint" {
			t.Errorf("suppressed %+v by %+v", s, s.SuppressedBy)
		}
	})
	t.Run("annotation on the namespace", func(t *testing.T) {
		s := suppressedIn(t, rep, "ConfigMap", "ex-ns")
		if by := s.SuppressedBy; by.Source != report.SuppressedByAnnotation || by.Object.Kind != "Namespace" || by.Object.Name != "ex-ns" {
			t.Errorf("suppressed by %+v", by)
		}
	})
	t.Run("rule", func(t *testing.T) {
		s := suppressedIn(t, rep, "ConfigMap", "ex-rule")
		by := s.SuppressedBy
		if by.Source != report.SuppressedByRule || by.Rule == nil || *by.Rule != 0 || by.File != rules || by.Until == nil ||
			s.Reason != "migration leftovers, owned by team data" {
			t.Errorf("suppressed by %+v, reason %q", by, s.Reason)
		}
	})
	t.Run("a missing reason is not honoured and says so", func(t *testing.T) {
		if _, ok := findingIn(rep, "ConfigMap", "ex-noreason"); !ok {
			t.Fatalf("the finding under an annotation without a reason is not reported:\n%s", summaries(rep))
		}
		i := slices.IndexFunc(rep.Warnings, func(w report.Warning) bool { return w.Reason == exempt.WarnInvalid })
		if i < 0 || rep.Warnings[i].Object == nil || rep.Warnings[i].Object.Name != "held" || !strings.Contains(rep.Warnings[i].Message, exempt.AnnotationReason) {
			t.Errorf("warnings %+v", rep.Warnings)
		}
		if !strings.Contains(run.stderr, "warning: "+exempt.WarnInvalid+": ex-noreason/configmap/held") {
			t.Errorf("stderr does not warn of the invalid annotation:\n%s", run.stderr)
		}
	})
	t.Run("the rest is reported and counted", func(t *testing.T) {
		if _, ok := findingIn(rep, "ConfigMap", "ex-open"); !ok {
			t.Errorf("the unexempted ConfigMap is not reported:\n%s", summaries(rep))
		}
		if len(rep.Findings) != 2 || rep.Summary.Total != 2 || len(rep.Suppressed) != 5 {
			t.Errorf("%d findings (summary %d), %d suppressed; want 2 and 5:\n%s", len(rep.Findings), rep.Summary.Total, len(rep.Suppressed), summaries(rep))
		}
	})

	// Suppressed findings do not make the exit code: a namespace whose only finding is exempted
	// exits 0, and the table says how many were held back.
	table := p.scan(t, "-n", "ex-ns", "--checks", teCheck, "--min-age", "0s", "--fail-on", "warning").wantExit(0)
	if !strings.Contains(table.stdout, "No stuck workloads found.") || !strings.Contains(table.stdout, "1 suppressed by exemptions") {
		t.Errorf("table of an exempted namespace:\n%s", table.stdout)
	}

	// why goes through the same exemptions: nothing holds the object that is reported, and the
	// answer names what was held back and why.
	why := p.run(t, []string{"why", "configmap/held", "-n", "ex-obj", "--min-age", "0s", "--fail-on", "warning"}).wantExit(0)
	if !strings.Contains(why.stdout, "suppressed: stuck-terminating finalizer-owner-not-acting on ex-obj/configmap/held, by annotation on ex-obj/configmap/held: widget-operator is retired") {
		t.Errorf("why of an exempted object:\n%s", why.stdout)
	}

	// --disallow-annotation-exemptions: the file alone decides.
	strict := p.scan(t, "-A", "--checks", teCheck, "--min-age", "0s", "--fail-on", "warning", "-o", "json", "--exemptions", rules, "--disallow-annotation-exemptions").wantExit(2).report()
	if len(strict.Suppressed) != 1 || strict.Suppressed[0].Object.Namespace != "ex-rule" || len(strict.Findings) != 6 || len(strict.Warnings) != 0 {
		t.Errorf("annotations disallowed: %d findings, suppressed %+v, warnings %+v", len(strict.Findings), strict.Suppressed, strict.Warnings)
	}

	// JUnit: the exempted objects are skipped cases, the others failures.
	junit := p.scan(t, "-A", "--checks", teCheck, "--min-age", "0s", "--fail-on", "warning", "-o", "junit", "--exemptions", rules).wantExit(2)
	var suites struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Skipped  int `xml:"skipped,attr"`
	}
	if err := xml.Unmarshal([]byte(junit.stdout), &suites); err != nil || suites.Tests != 7 || suites.Failures != 2 || suites.Skipped != 5 {
		t.Errorf("junit totals %+v (%v):\n%s", suites, err, junit.stdout)
	}

	// SARIF: the reported findings only, the finding ID as fingerprint, the kustomize file as
	// location where the object has one.
	sarif := p.scan(t, "-A", "--checks", teCheck, "--min-age", "0s", "--fail-on", "warning", "-o", "sarif", "--exemptions", rules).wantExit(2)
	var log struct {
		Version string `json:"version"`
		Runs    []struct {
			Results []struct {
				RuleID       string            `json:"ruleId"`
				Fingerprints map[string]string `json:"fingerprints"`
				Locations    []struct {
					Physical *struct {
						Artifact struct{ URI string } `json:"artifactLocation"`
					} `json:"physicalLocation"`
					Logical []struct{ FullyQualifiedName string } `json:"logicalLocations"`
				} `json:"locations"`
			} `json:"results"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(sarif.stdout), &log); err != nil || log.Version != "2.1.0" || len(log.Runs) != 1 || len(log.Runs[0].Results) != 2 {
		t.Fatalf("sarif (%v):\n%s", err, sarif.stdout)
	}
	for _, res := range log.Runs[0].Results {
		loc := res.Locations[0]
		f, _ := findingIn(rep, "ConfigMap", strings.Split(loc.Logical[0].FullyQualifiedName, "/")[0])
		if res.Fingerprints["workloaddoctor/findingId/v1"] != f.ID || f.ID == "" {
			t.Errorf("result %s: fingerprints %v, finding %s", loc.Logical[0].FullyQualifiedName, res.Fingerprints, f.ID)
		}
		wantFile := f.Object.Namespace == "ex-open"
		if (loc.Physical != nil) != wantFile || wantFile && loc.Physical.Artifact.URI != "apps/legacy/configmap.yaml" {
			t.Errorf("result %s: physical location %+v", loc.Logical[0].FullyQualifiedName, loc.Physical)
		}
	}
	if f, _ := findingIn(rep, "ConfigMap", "ex-open"); f.Origin == nil || f.Origin.Repo != "https://example.com/apps.git" {
		t.Errorf("origin of the kustomize-built ConfigMap: %+v", f.Origin)
	}

	// An invalid file is exit 1 naming the line at fault, before anything is read.
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("apiVersion: workloaddoctor.io/v1alpha1\nkind: Exemptions\nrules:\n- checks: [stuck-terminating]\n  reason: r\n  until: next week\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	invalid := p.scan(t, "-A", "--exemptions", bad).wantExit(1)
	if !strings.Contains(invalid.stderr, bad+":6: bad until") || invalid.stdout != "" {
		t.Errorf("invalid file: stdout %q, stderr %q", invalid.stdout, invalid.stderr)
	}
}

// heldStatefulSetPod has the real StatefulSet controller create pod db-0 (its controller
// reference names the StatefulSet: pkg/controller/statefulset/stateful_set_utils.go,
// newStatefulSetPod), then holds it with a finalizer nobody removes and deletes it; the
// StatefulSet, annotated to exempt its pods, keeps its own annotations off the pods (only the
// template's reach them), so only the owner's annotation can exempt the pod's finding.
func heldStatefulSetPod(t *testing.T, cs kubernetes.Interface, ns string) {
	t.Helper()
	ctx := t.Context()
	labels := map[string]string{"app": "db"}
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns, Annotations: ignore("*", "db is being migrated")},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "db", Image: "registry.example/db:1"}}}}},
	}
	if _, err := cs.AppsV1().StatefulSets(ns).Create(ctx, sts, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	holdAndDelete(t, cs, ns, "app=db")
}

// heldDeploymentPod does the same with a Deployment's pod, whose controller is a ReplicaSet the
// Deployment controller made with the Deployment's annotations (pkg/controller/deployment/util/
// deployment_util.go, copyDeploymentAnnotationsToReplicaSet, called from SetNewReplicaSetAnnotations).
// The scan reads no ReplicaSet of a healthy Deployment, so the exemption is found only because the
// ReplicaSets owning findings' objects are read for it (pkg/scan readOwnerReplicaSets).
func heldDeploymentPod(t *testing.T, cs kubernetes.Interface, ns string) {
	t.Helper()
	labels := map[string]string{"app": "web"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns, Annotations: ignore("stuck-terminating", "web is retired next sprint")},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "registry.example/web:1"}}}}},
	}
	if _, err := cs.AppsV1().Deployments(ns).Create(t.Context(), d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	holdAndDelete(t, cs, ns, "app=web")
}

// holdAndDelete waits for the controller's pod selected by selector, holds it with a finalizer
// nobody removes and deletes it.
func holdAndDelete(t *testing.T, cs kubernetes.Interface, ns, selector string) {
	t.Helper()
	ctx := t.Context()
	var name string
	eventually(t, commandTimeout, "the controller to create the pod "+selector, func(ctx context.Context) (bool, error) {
		l, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil || len(l.Items) == 0 {
			return false, nil
		}
		name = l.Items[0].Name
		return true, nil
	})
	patch := []byte(`{"metadata":{"finalizers":["example.com/hold"]}}`)
	if _, err := cs.CoreV1().Pods(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestAuditExemptionExpires (issue 31) runs the auditor while an exemption expires: the
// suppressed finding is a skip result and a suppressed-findings series, never a finding; once
// its until passes, the next cycle reports it again (finding series, warn result) and logs why.
func TestAuditExemptionExpires(t *testing.T) {
	t.Parallel()
	const ns = "ax"
	c := testcluster.Start(t, testcluster.Options{})
	installReportCRDs(t, c)
	createNamespace(t, c, ns)
	cs := c.Clientset()
	ann := ignore("stuck-terminating", "vendor holds it during the migration")
	ann[exempt.AnnotationUntil] = time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	heldAnnotatedConfigMap(t, cs, ns, ann)

	p := startAudit(t, c.Kubeconfig, "-A", "--checks", teCheck, "--min-age", "0s", "--interval", "2s")
	labels := []string{`check="stuck-terminating"`, `namespace="ax"`}
	p.withinCycles(t, 3, "success", "the exempted ConfigMap counted as suppressed, not as a finding", func(s scrape) bool {
		return len(s.series("workloaddoctor_suppressed_findings", labels...)) == 1 && len(s.series("workloaddoctor_findings")) == 0
	})
	rep := auditReport(t, c, audit.OpenReports, ns)
	if rep == nil || strings.Join(reportResults(rep), ";") != "stuck-terminating finalizer-owner-not-acting skip held" {
		t.Fatalf("report while exempted: %v", rep)
	}

	// The team shortens the exemption to a moment from now; it passes while the auditor runs.
	until := time.Now().Add(3 * time.Second).UTC().Format(time.RFC3339)
	patch := []byte(`{"metadata":{"annotations":{"` + exempt.AnnotationUntil + `":"` + until + `"}}}`)
	if _, err := cs.CoreV1().ConfigMaps(ns).Patch(t.Context(), "held", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 3*time.Minute, "the expired exemption's finding back in the metrics", func(context.Context) (bool, error) {
		s := p.scrape(t)
		return len(s.series("workloaddoctor_findings", labels...)) == 1 && len(s.series("workloaddoctor_suppressed_findings")) == 0, nil
	})
	rep = auditReport(t, c, audit.OpenReports, ns)
	if rep == nil || strings.Join(reportResults(rep), ";") != "stuck-terminating finalizer-owner-not-acting warn held" {
		t.Errorf("report after the exemption expired: %v", rep)
	}
	if !slices.ContainsFunc(p.log(), func(l string) bool {
		return strings.Contains(l, exempt.WarnExpired) && strings.Contains(l, "ax/configmap/held") && strings.Contains(l, until)
	}) {
		t.Errorf("the log does not say the exemption expired:\n%s", strings.Join(p.log(), "\n"))
	}
}
