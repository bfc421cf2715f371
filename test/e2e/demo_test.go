package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/scenario"
	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/testcluster"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/fix"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// TestDemoScenarios builds the demo's "shop" (internal/scenario) once on one cluster and checks
// what `make demo` promises: the scan names each broken object with its check and root cause and
// nothing else, the healthy workloads have no finding, the table shows every check, and after
// `fix --yes` only the findings that need a person remain, each saying why.
func TestDemoScenarios(t *testing.T) {
	t.Parallel()
	pluginBinary(t)
	c, files := scenarioCluster(t)

	// Every wait of Build is bounded; the kruise-manager stand-in runs in this process until the
	// test's context ends.
	shop, err := scenario.Build(t.Context(), scenario.Env{Kube: c.Clientset(), Dynamic: c.Dynamic(), Files: files, Logf: t.Logf})
	if err != nil {
		t.Fatalf("build the scenario: %v", err)
	}

	var rep *report.Report
	t.Run("scan names every broken object with its check and root cause, and nothing else", func(t *testing.T) {
		rep = demoRun(t, c.Kubeconfig, 2).whyAgreed()
		demoAssertFindings(t, rep, shop.Expected)
		demoAssertHealthy(t, rep, shop.Healthy)
		for _, f := range rep.Findings {
			if f.RootCause.Message == "" || len(f.RootCause.Evidence) == 0 {
				t.Errorf("%s %s on %s has no message or evidence", f.Check, f.RootCause.ID, f.Object)
			}
		}
	})

	// Issue 27: the policy engine left its webhook behind; the ledger's deletion names it as the
	// root, with what it rejects and what it holds, and offers nothing to apply.
	t.Run("the webhook left by the uninstalled policy engine is the root of the ledger's deletion", func(t *testing.T) {
		if rep == nil {
			t.Skip("no scan")
		}
		f := demoFinding(t, rep, "StatefulSet", scenario.Ledger)
		assertFinding(t, f, "admission-webhook-unavailable", report.SeverityError, []string{
			"the update that removes finalizer foregroundDeletion is sent to ValidatingWebhookConfiguration " + scenario.PolicyWebhookConfig +
				", webhook " + scenario.PolicyWebhook + " (failurePolicy Fail): rule CREATE,UPDATE apps/v1 statefulsets (Namespaced)",
			"Service kyverno/kyverno-svc: not found",
			"while its backend cannot answer it rejects every request it is called for: CREATE,UPDATE apps/v1 statefulsets (Namespaced), " +
				"where namespaceSelector kubernetes.io/metadata.name notin (kyverno)",
			"1 object(s) being deleted are held behind this webhook: StatefulSet shop/" + scenario.Ledger,
			"delete the ValidatingWebhookConfiguration " + scenario.PolicyWebhookConfig}, nil)
		if len(f.BlockedBy) != 1 || f.BlockedBy[0].Kind != "ValidatingWebhookConfiguration" || f.BlockedBy[0].Name != scenario.PolicyWebhookConfig {
			t.Errorf("blockedBy %+v, want the webhook configuration", f.BlockedBy)
		}
		t.Logf("%s: %s\n  %s", f.Object, f.Summary, strings.Join(f.RootCause.Evidence, "\n  "))
	})

	// Issue 15, class 1: with -l no workload is judged on a pod list the selector cut, and no
	// finding names an object outside the selector. wishlist (class 2) waits in PreparingDelete
	// by design: its only finding is the pod's pending hook.
	t.Run("scan -l app=<app> reports that app's findings and nothing else", func(t *testing.T) {
		// The pending hook is a warning: --fail-on error exits 0 on wishlist.
		for app, exit := range map[string]int{"checkout": 2, "cart": 2, "wishlist": 0} {
			scoped := demoScopedScan(t, c.Kubeconfig, "app="+app, exit)
			want := demoAppExpectations(t, c, shop.Expected, app)
			if len(want) == 0 {
				t.Fatalf("the demo expects no finding of app %s", app)
			}
			demoAssertFindings(t, scoped, want)
			t.Logf("scan -A -l app=%s --min-age 0s:\n%s", app, demoSummaries(scoped))
		}
		// checkout also carries tier=backend, which its selector (app=checkout) does not fix: its
		// pods lack the label, so the selector cuts them all. Before issue 15 the CloneSet looked
		// frozen on that empty pod list; now it is not judged and coverage says why.
		_, _, code := runKubectl(t, c.Kubeconfig, "label", "clonesets.apps.kruise.io", "-n", scenario.Namespace, "checkout", "tier=backend")
		if code != 0 {
			t.Fatalf("label CloneSet checkout: exit %d", code)
		}
		cut := demoScopedScan(t, c.Kubeconfig, "tier=backend", 0)
		if len(cut.Findings) != 0 {
			t.Errorf("scan -l tier=backend judged a workload whose pods it cut:\n%s", demoSummaries(cut))
		}
		noted := false
		for _, n := range cut.Coverage.Notes {
			noted = noted || (n.Check == "expectations-unsatisfied" && strings.Contains(n.Reason, "CloneSet shop/checkout") && strings.Contains(n.Reason, "not judged"))
		}
		if !noted {
			t.Errorf("coverage does not say CloneSet shop/checkout was not judged: %+v", cut.Coverage.Notes)
		}
		t.Logf("scan -A -l tier=backend: %d findings, notes %+v", len(cut.Findings), cut.Coverage.Notes)
	})

	t.Run("the table shows every check", func(t *testing.T) {
		out, stderr, code := runKubectl(t, c.Kubeconfig, "workloaddoctor", "scan", "-A", "--min-age", "0s")
		if code != 2 {
			t.Fatalf("kubectl workloaddoctor scan -A: exit %d, want 2\n%s\n%s", code, out, stderr)
		}
		// What README's scan output excerpts.
		t.Logf("kubectl workloaddoctor scan -A --min-age 0s:\n%s", out)
		for _, check := range []string{"stuck-preparing-normal", "expectations-unsatisfied", "stuck-terminating", "resize-policy-drift", "rollout-stalled"} {
			if !strings.Contains(out, check) {
				t.Errorf("the table has no %s line:\n%s", check, out)
			}
		}
	})

	t.Run("fix --yes resolves the fixable findings; what is left needs a person", func(t *testing.T) {
		if rep == nil {
			t.Skip("no scan")
		}
		stdout, stderr, code := pluginOn(c.Kubeconfig).fix(t, "-A", "--min-age", "0s", "--yes", "-o", "json").out()
		if code != 0 {
			t.Fatalf("fix -A --yes: exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		var doc fix.Document
		if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
			t.Fatalf("fix -o json: %v\n%s", err, stdout)
		}
		if len(doc.Results) == 0 {
			t.Fatalf("fix applied nothing:\n%s\n%s", stdout, stderr)
		}
		for _, r := range doc.Results {
			if r.Status != fix.StatusApplied && r.Status != fix.StatusAlreadyResolved {
				t.Errorf("fix %s: %s (%s)", r.Action, r.Status, r.Reason)
			}
		}

		var person []scenario.Expectation
		for _, e := range shop.Expected {
			if !e.Fixable {
				person = append(person, e)
			}
		}
		// The controllers catch up: the kruise-manager standby takes the Lease over once the old
		// leader's expires (15s) and reconciles, evicted pods are recreated.
		var last *report.Report
		eventually(t, 2*time.Minute, "the second scan to keep only the findings that need a person", func(context.Context) (bool, error) {
			last = demoScan(t, c.Kubeconfig, -1)
			return demoFindingKeys(last) == demoExpectedKeys(person), nil
		})
		demoAssertFindings(t, last, person)
		for _, f := range last.Findings {
			if len(f.Fixes) != 0 {
				t.Errorf("%s %s on %s still offers fixes %+v", f.Check, f.RootCause.ID, f.Object, f.Fixes)
			}
			if f.RootCause.Message == "" {
				t.Errorf("%s %s on %s does not say why it needs a person", f.Check, f.RootCause.ID, f.Object)
			}
		}
	})
}

// scenarioCluster starts the scenario's cluster (scenario.ClusterOptions) with the OpenKruise CRDs.
func scenarioCluster(t *testing.T) (*testcluster.Cluster, scenario.Files) {
	t.Helper()
	opts, files, err := scenario.ClusterOptions(filepath.Join(t.TempDir(), "scenario"))
	if err != nil {
		t.Fatal(err)
	}
	c := testcluster.Start(t, opts)
	crds, err := testcluster.KruiseCRDFiles()
	if err != nil {
		t.Fatal(err)
	}
	c.InstallCRDs(t, crds...)
	return c, files
}

// demoFinding is the one finding whose object is the shop's kind/name.
func demoFinding(t *testing.T, rep *report.Report, kind, name string) report.Finding {
	t.Helper()
	for _, f := range rep.Findings {
		if f.Object.Kind == kind && f.Object.Namespace == scenario.Namespace && f.Object.Name == name {
			return f
		}
	}
	t.Fatalf("no finding for %s %s/%s:\n%s", kind, scenario.Namespace, name, demoSummaries(rep))
	return report.Finding{}
}

// demoScan runs `scan -A -o json --min-age 0s`; wantExit -1 accepts 0 or 2.
func demoScan(t *testing.T, kubeconfig string, wantExit int) *report.Report {
	t.Helper()
	return demoRun(t, kubeconfig, wantExit).report()
}

// demoRun is demoScan's run.
func demoRun(t *testing.T, kubeconfig string, wantExit int) *pluginRun {
	t.Helper()
	return pluginOn(kubeconfig).scan(t, "-A", "-o", "json", "--min-age", "0s").wantScanExit(wantExit)
}

func demoKey(check, rootCause, kind, namespace, name string) string {
	return fmt.Sprintf("%s %s %s %s/%s", check, rootCause, kind, namespace, name)
}

func demoFindingKeys(rep *report.Report) string {
	var keys []string
	for _, f := range rep.Findings {
		keys = append(keys, demoKey(f.Check, f.RootCause.ID, f.Object.Kind, f.Object.Namespace, f.Object.Name))
	}
	sort.Strings(keys)
	return strings.Join(keys, "\n")
}

func demoExpectedKeys(exp []scenario.Expectation) string {
	var keys []string
	for _, e := range exp {
		keys = append(keys, demoKey(e.Check, e.RootCause, e.Object.Kind, e.Object.Namespace, e.Object.Name))
	}
	sort.Strings(keys)
	return strings.Join(keys, "\n")
}

// demoAssertFindings checks that the report has exactly the expected (check, root cause, object)
// findings.
func demoAssertFindings(t *testing.T, rep *report.Report, exp []scenario.Expectation) {
	t.Helper()
	if got, want := demoFindingKeys(rep), demoExpectedKeys(exp); got != want {
		t.Errorf("findings (check, root cause, object):\n%s\nwant:\n%s\nsummaries:\n%s", got, want, demoSummaries(rep))
	}
}

// demoAssertHealthy checks that no finding names a healthy object as its object or owner.
func demoAssertHealthy(t *testing.T, rep *report.Report, healthy []scenario.Object) {
	t.Helper()
	if len(healthy) == 0 {
		t.Fatal("the scenario lists no healthy object")
	}
	is := map[string]bool{}
	for _, o := range healthy {
		is[o.Kind+" "+o.Namespace+"/"+o.Name] = true
	}
	for _, f := range rep.Findings {
		refs := []report.ObjectRef{f.Object}
		if f.Owner != nil {
			refs = append(refs, *f.Owner)
		}
		for _, r := range refs {
			if is[r.Kind+" "+r.Namespace+"/"+r.Name] {
				t.Errorf("finding %s %s names healthy %s %s/%s: %s", f.Check, f.RootCause.ID, r.Kind, r.Namespace, r.Name, f.Summary)
			}
		}
	}
}

func demoSummaries(rep *report.Report) string {
	var b strings.Builder
	for _, f := range rep.Findings {
		fmt.Fprintf(&b, "  %s %s %s: %s\n", f.Check, f.RootCause.ID, f.Object, f.Summary)
	}
	return b.String()
}

// demoScopedScan runs `scan -A -l SELECTOR -o json --min-age 0s`.
func demoScopedScan(t *testing.T, kubeconfig, selector string, wantExit int) *report.Report {
	t.Helper()
	return pluginOn(kubeconfig).scan(t, "-A", "-l", selector, "-o", "json", "--min-age", "0s").wantExit(wantExit).report()
}

// demoAppExpectations are the expected findings whose object carries app=<app>: the app's
// workloads and its pods, read from the cluster.
func demoAppExpectations(t *testing.T, c *testcluster.Cluster, exp []scenario.Expectation, app string) []scenario.Expectation {
	t.Helper()
	pods, err := c.Clientset().CoreV1().Pods(scenario.Namespace).List(t.Context(), metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		t.Fatal(err)
	}
	ofApp := map[string]bool{}
	for _, p := range pods.Items {
		ofApp["Pod/"+p.Name] = true
	}
	var out []scenario.Expectation
	for _, e := range exp {
		if ofApp[e.Object.Kind+"/"+e.Object.Name] || (e.Object.Kind != "Pod" && e.Object.Namespace == scenario.Namespace && e.Object.Name == app) {
			out = append(out, e)
		}
	}
	return out
}
