package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/testcluster"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// fleetContext is one context of a test kubeconfig: the cluster whose server and CA it uses, and
// the cluster whose admin credentials it presents.
type fleetContext struct {
	server, user *testcluster.Cluster
}

// fleetKubeconfig writes one kubeconfig holding the contexts, as a platform team's does.
func fleetKubeconfig(t *testing.T, contexts map[string]fleetContext) string {
	t.Helper()
	out := clientcmdapi.NewConfig()
	for name, fc := range contexts {
		srv, err := clientcmd.LoadFromFile(fc.server.Kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		usr, err := clientcmd.LoadFromFile(fc.user.Kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		out.Clusters[name] = srv.Clusters[srv.Contexts[srv.CurrentContext].Cluster]
		out.AuthInfos[name] = usr.AuthInfos[usr.Contexts[usr.CurrentContext].AuthInfo]
		out.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name, Namespace: "fleet"}
	}
	path := filepath.Join(t.TempDir(), "fleet.kubeconfig")
	if err := clientcmd.WriteToFile(*out, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// fleetDoc decodes a FleetReport from a run's stdout.
func fleetDoc(t *testing.T, r *pluginRun) *report.FleetReport {
	t.Helper()
	var f report.FleetReport
	if err := json.Unmarshal([]byte(r.stdout), &f); err != nil || f.Kind != report.FleetKind {
		t.Fatalf("%s: stdout is not a FleetReport (%v)\nstdout:\n%s\nstderr:\n%s", strings.Join(r.args, " "), err, r.stdout, r.stderr)
	}
	return &f
}

// fleetRow returns a context's row, failing when it is absent or its status is not want.
func fleetRow(t *testing.T, f *report.FleetReport, context, want string) report.ClusterResult {
	t.Helper()
	c, ok := f.Cluster(context)
	if !ok || c.Status != want {
		t.Fatalf("context %s: row %+v, want status %s (rows %+v)", context, c, want, f.Clusters)
	}
	return c
}

// clusterUID is the cluster's identity as the plugin defines it: kube-system's UID. The
// apiserver creates kube-system itself shortly after it starts (kubernetes v1.37.1,
// pkg/controlplane/controller/systemnamespaces/system_namespaces_controller.go, Controller.sync).
func clusterUID(t *testing.T, cs kubernetes.Interface) string {
	t.Helper()
	var uid string
	eventually(t, 30*time.Second, "namespace kube-system", func(ctx context.Context) (bool, error) {
		ns, err := cs.CoreV1().Namespaces().Get(ctx, "kube-system", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		uid = string(ns.UID)
		return true, nil
	})
	return uid
}

// TestFleetScan scans two real control planes at once through one kubeconfig, plus a context
// whose credentials the server refuses, and checks that every finding is attributed to the
// cluster it came from, that fix never applies one cluster's report to the other, and that a
// stopped apiserver is reported unreachable without hiding the other cluster's results.
//
// The stuck objects are pods held by a finalizer nobody removes: the apiserver itself sets
// deletionTimestamp and keeps the pod while finalizers remain (kubernetes v1.37.1,
// staging/src/k8s.io/apiserver/pkg/registry/generic/registry/store.go,
// Store.Delete and updateForGracefulDeletionAndFinalizers), so no controller is needed.
func TestFleetScan(t *testing.T) {
	t.Parallel()
	pluginBinary(t)
	a := testcluster.Start(t, testcluster.Options{})
	b := testcluster.Start(t, testcluster.Options{})
	csA, csB := a.Clientset(), b.Clientset()
	idA, idB := clusterUID(t, csA), clusterUID(t, csB)
	if idA == idB {
		t.Fatalf("two clusters share kube-system UID %s", idA)
	}
	const orphan = "resources-finalizer.argocd.argoproj.io/background"
	fixNamespace(t, csA, "fleet")
	fixNamespace(t, csB, "fleet")
	// The same namespace and name in both clusters: only the cluster tells the two apart.
	webA := fixTerminatingPod(t, csA, "fleet", "web-0", orphan)
	webB := fixTerminatingPod(t, csB, "fleet", "web-0", orphan)
	apiB := fixTerminatingPod(t, csB, "fleet", "api-0", orphan)

	kc := fleetKubeconfig(t, map[string]fleetContext{
		"prod-a": {server: a, user: a},
		"prod-b": {server: b, user: b},
		// B's client certificate presented to A: A's CA did not sign it, so A answers 401.
		"prod-refused": {server: a, user: b},
		"dev-a":        {server: a, user: a},
	})
	wd := pluginOn(kc)
	scanArgs := []string{"--checks", "stuck-terminating", "--min-age", "0s"}

	// Exit 1: a context was not scanned, whatever the others found.
	run := wd.scan(t, append(scanArgs, "--contexts", "prod-*", "-o", "json")...).wantExit(1)
	fleet := fleetDoc(t, run)
	if len(fleet.Clusters) != 3 {
		t.Fatalf("rows %+v, want prod-a, prod-b and prod-refused only (dev-a is not prod-*)", fleet.Clusters)
	}
	rowA := fleetRow(t, fleet, "prod-a", report.ClusterScanned)
	rowB := fleetRow(t, fleet, "prod-b", report.ClusterScanned)
	refused := fleetRow(t, fleet, "prod-refused", report.ClusterForbidden)
	if rowA.ClusterID != idA || rowB.ClusterID != idB || rowA.Server != a.APIServerURL || rowB.Server != b.APIServerURL {
		t.Errorf("rows name the wrong clusters: a %+v (want %s at %s), b %+v (want %s at %s)", rowA, idA, a.APIServerURL, rowB, idB, b.APIServerURL)
	}
	if rowA.ExitCode != 2 || rowB.ExitCode != 2 || rowA.Summary.Total != 1 || rowB.Summary.Total != 2 || rowA.ServerVersion == "" {
		t.Errorf("rows: a %+v, b %+v; want exit 2 with 1 and 2 findings", rowA, rowB)
	}
	if refused.ClusterID != "" || refused.ExitCode != 1 || !strings.Contains(refused.Error, "Unauthorized") {
		t.Errorf("refused row %+v, want no identity, exit 1 and the server's Unauthorized", refused)
	}
	want := map[string][]string{"prod-a": {string(webA.UID)}, "prod-b": {string(apiB.UID), string(webB.UID)}}
	got := map[string][]string{}
	for _, f := range fleet.Findings {
		if f.RootCause.ID != "finalizer-owner-missing" || f.Object.Namespace != "fleet" {
			t.Errorf("unexpected finding %+v", f)
		}
		got[f.Context] = append(got[f.Context], f.Object.UID)
	}
	for ctx := range got {
		slices.Sort(got[ctx])
	}
	slices.Sort(want["prod-b"])
	if len(got) != 2 || !slices.Equal(got["prod-a"], want["prod-a"]) || !slices.Equal(got["prod-b"], want["prod-b"]) {
		t.Fatalf("findings by context (object UIDs) %v, want %v", got, want)
	}

	// The table groups by context and ends with a row per context.
	table := wd.scan(t, append(scanArgs, "--contexts", "prod-*,!prod-refused")...).wantExit(2)
	for _, s := range []string{"=== context prod-a (" + a.APIServerURL, "=== context prod-b (" + b.APIServerURL, "cluster " + idB, "CONTEXT"} {
		if !strings.Contains(table.stdout, s) {
			t.Errorf("table lacks %q:\n%s", s, table.stdout)
		}
	}
	if strings.Contains(table.stdout, "prod-refused") || strings.Contains(table.stdout, "dev-a") {
		t.Errorf("table shows an excluded context:\n%s", table.stdout)
	}

	fleetFile := filepath.Join(t.TempDir(), "fleet.json")
	if err := os.WriteFile(fleetFile, []byte(run.stdout), 0o600); err != nil {
		t.Fatal(err)
	}

	t.Run("fix refuses cluster A's report on cluster B and writes nothing", func(t *testing.T) {
		single := wd.scan(t, append(scanArgs, "--context", "prod-a", "-o", "json")...).wantExit(2)
		if rep := single.report(); rep.Metadata.ClusterID != idA || len(rep.Findings) != 1 {
			t.Fatalf("prod-a report: clusterID %q (want %s), findings:\n%s", rep.Metadata.ClusterID, idA, summaries(rep))
		}
		reportA := filepath.Join(t.TempDir(), "a.json")
		if err := os.WriteFile(reportA, []byte(single.stdout), 0o600); err != nil {
			t.Fatal(err)
		}
		beforeB := fixGetPod(t, csB, "fleet", "web-0")
		res := fixOne(t, kc, 3, "refused", "--context", "prod-b", "--from-report", reportA, "--yes")
		if !strings.Contains(res.Reason, idA) || !strings.Contains(res.Reason, idB) {
			t.Errorf("reason %q should name both clusters", res.Reason)
		}
		fixUntouched(t, csB, beforeB)
		// A report without an identity (its scan could not read kube-system) proves nothing.
		anon := single.report()
		anon.Metadata.ClusterID = ""
		raw, err := json.Marshal(anon)
		if err != nil {
			t.Fatal(err)
		}
		anonFile := filepath.Join(t.TempDir(), "anon.json")
		if err := os.WriteFile(anonFile, raw, 0o600); err != nil {
			t.Fatal(err)
		}
		beforeA := fixGetPod(t, csA, "fleet", "web-0")
		if res := fixOne(t, kc, 3, "refused", "--context", "prod-a", "--from-report", anonFile, "--yes"); !strings.Contains(res.Reason, "no clusterID") {
			t.Errorf("reason %q should say the report has no clusterID", res.Reason)
		}
		fixUntouched(t, csA, beforeA)
		// The same file on the cluster it was made on is not refused (dry run: A stays broken for
		// the next step).
		fixOne(t, kc, 0, "dry-run", "--context", "prod-a", "--from-report", reportA, "--dry-run=server", "--yes")
	})

	t.Run("fix on a fleet report takes --context and only that context's findings", func(t *testing.T) {
		noCtx := wd.fix(t, "--from-report", fleetFile, "--yes").wantExit(1)
		if !strings.Contains(noCtx.stderr, "--context") {
			t.Errorf("stderr should ask for --context:\n%s", noCtx.stderr)
		}
		wd.fix(t, "--from-report", fleetFile, "--context", "prod-refused", "--yes").wantExit(1)
		beforeWeb, beforeAPI := fixGetPod(t, csB, "fleet", "web-0"), fixGetPod(t, csB, "fleet", "api-0")
		res := fixOne(t, kc, 0, "applied", "--from-report", fleetFile, "--context", "prod-a", "--yes")
		if res.Object.UID != string(webA.UID) {
			t.Errorf("fixed %+v, want cluster A's web-0 (%s)", res.Object, webA.UID)
		}
		eventually(t, 30*time.Second, "cluster A's web-0 gone", func(ctx context.Context) (bool, error) {
			_, err := csA.CoreV1().Pods("fleet").Get(ctx, "web-0", metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		fixUntouched(t, csB, beforeWeb)
		fixUntouched(t, csB, beforeAPI)
	})

	t.Run("a stopped apiserver is unreachable and the other cluster still scanned", func(t *testing.T) {
		b.StopAPIServer(t)
		run := wd.scan(t, append(scanArgs, "--contexts", "prod-*,!prod-refused", "-o", "json")...).wantExit(1)
		f := fleetDoc(t, run)
		a := fleetRow(t, f, "prod-a", report.ClusterScanned)
		down := fleetRow(t, f, "prod-b", report.ClusterUnreachable)
		// Cluster A is healthy now: its row exits 0 and no finding is B's.
		if a.ExitCode != 0 || a.ClusterID != idA || len(f.Findings) != 0 {
			t.Errorf("prod-a row %+v, findings %+v; want a clean scan of cluster %s", a, f.Findings, idA)
		}
		if down.ClusterID != "" || !strings.Contains(down.Error, "connection refused") {
			t.Errorf("prod-b row %+v, want no identity and the refused connection", down)
		}
		if !strings.Contains(run.stderr, "[prod-b] unreachable") {
			t.Errorf("stderr should say prod-b is unreachable:\n%s", run.stderr)
		}
	})
}
