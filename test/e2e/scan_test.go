package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/testcluster"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks/builtin"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/collect"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/scan"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// parseReport decodes a `scan -o json` document, failing the test when it is not one.
func parseReport(t testing.TB, stdout string) *report.Report {
	t.Helper()
	var r report.Report
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("stdout is not a JSON report: %v\n%s", err, stdout)
	}
	if r.APIVersion != report.APIVersion || r.Kind != report.Kind {
		t.Fatalf("report apiVersion/kind = %s/%s", r.APIVersion, r.Kind)
	}
	return &r
}

func createNamespace(t testing.TB, c *testcluster.Cluster, name string) {
	t.Helper()
	_, err := c.Clientset().CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
}

func simplePod(ns, name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/web:1.0"}}},
	}
}

func TestScanHealthyCluster(t *testing.T) {
	c := testcluster.Start(t, testcluster.Options{})
	c.InstallCRDs(t)
	createNamespace(t, c, "shop")
	if _, err := c.Clientset().CoreV1().Pods("shop").Create(t.Context(), simplePod("shop", "web-0"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	stdout, stderr, code := pluginOn(c.Kubeconfig).scan(t, "-A", "-o", "json").out()
	if code != 0 {
		t.Fatalf("scan -A -o json exit %d\nstderr: %s", code, stderr)
	}
	r := parseReport(t, stdout)
	if !r.Coverage.Complete || len(r.Coverage.Skipped)+len(r.Coverage.Degraded) != 0 {
		t.Errorf("coverage on a healthy cluster as admin = %+v", r.Coverage)
	}
	if r.Metadata.ServerVersion != "v1.37.1" || r.Metadata.GeneratedAt.IsZero() {
		t.Errorf("metadata = %+v", r.Metadata)
	}
	if len(r.Findings) != 0 || r.Summary.Total != 0 {
		t.Errorf("healthy cluster has findings: %+v", r.Findings)
	}
	if got := checksIn(r); !reflect.DeepEqual(got, builtin.Checks().IDs()) {
		t.Errorf("coverage.checks = %v, want every registered check %v", got, builtin.Checks().IDs())
	}
	if !strings.Contains(stdout, `"findings": []`) {
		t.Errorf("findings must be an empty list, not null:\n%s", stdout)
	}

	yamlOut, stderr, code := pluginOn(c.Kubeconfig).scan(t, "-A", "-o", "yaml").out()
	if code != 0 {
		t.Fatalf("scan -o yaml exit %d: %s", code, stderr)
	}
	raw, err := yaml.YAMLToJSON([]byte(yamlOut))
	if err != nil {
		t.Fatalf("-o yaml is not YAML: %v", err)
	}
	fromYAML := parseReport(t, string(raw))
	// Two scans differ only in when they ran.
	fromYAML.Metadata.GeneratedAt = r.Metadata.GeneratedAt
	if !reflect.DeepEqual(fromYAML, r) {
		t.Errorf("-o yaml is not the -o json document:\njson %+v\nyaml %+v", r, fromYAML)
	}

	table, _, code := pluginOn(c.Kubeconfig).scan(t, "-A").out()
	if code != 0 || strings.Contains(table, "\x1b[") {
		t.Errorf("table on a pipe: exit %d, has ANSI codes: %v\n%s", code, strings.Contains(table, "\x1b["), table)
	}
	if !strings.Contains(table, "Coverage: complete") {
		t.Errorf("table has no coverage note:\n%s", table)
	}
}

func checksIn(r *report.Report) []string {
	out := append([]string{}, r.Coverage.Checks...)
	return out
}

func TestScanRestrictedUser(t *testing.T) {
	c := testcluster.Start(t, testcluster.Options{})
	createNamespace(t, c, "team")
	ctx := t.Context()
	kube := c.Clientset()
	_, err := kube.RbacV1().Roles("team").Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "pod-reader", Namespace: "team"},
		Rules:      []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = kube.RbacV1().RoleBindings("team").Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "alice-reads-pods", Namespace: "team"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "pod-reader"},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "alice"}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kube.CoreV1().Pods("team").Create(ctx, simplePod("team", "web-0"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	alice := c.UserKubeconfigInNamespace(t, "team", "alice")

	stdout, stderr, code := pluginOn(alice).scan(t, "-n", "team", "-o", "json").out()
	if code != 0 && code != 2 {
		t.Fatalf("scan -n team as a pod reader: exit %d\nstderr: %s", code, stderr)
	}
	r := parseReport(t, stdout)
	if len(builtin.Checks().IDs()) > 0 {
		if r.Coverage.Complete {
			t.Errorf("a user who may only read pods got complete coverage: %+v", r.Coverage)
		}
		notes := append(append([]report.Note{}, r.Coverage.Skipped...), r.Coverage.Degraded...)
		for _, n := range notes {
			if n.Reason == "" || n.Check == "" {
				t.Errorf("coverage note without check or reason: %+v", n)
			}
		}
		if !strings.Contains(fmt.Sprint(notes), "forbidden") {
			t.Errorf("coverage does not say what was forbidden: %+v", notes)
		}
		if !strings.Contains(stderr, "warning: check") {
			t.Errorf("stderr does not warn about the incomplete coverage:\n%s", stderr)
		}
	}

	// Across all namespaces she may not list pods: no check can run, so the scan cannot say
	// "healthy" (exit 1), yet it still prints its report listing the skipped checks.
	stdout, stderr, code = pluginOn(alice).scan(t, "-A", "-o", "json").out()
	if code != 1 || !strings.Contains(stderr, "no check could run") {
		t.Fatalf("scan -A as a pod reader: exit %d, want 1 and the reason\nstderr: %s", code, stderr)
	}
	r = parseReport(t, stdout)
	if len(builtin.Checks().IDs()) > 0 && (r.Coverage.Complete || len(r.Coverage.Skipped) == 0 || len(r.Coverage.Checks) != 0) {
		t.Errorf("scan -A without cluster-wide rights must list skipped checks: %+v", r.Coverage)
	}
}

func TestScanUsageErrors(t *testing.T) {
	dir := t.TempDir()
	unreachable := filepath.Join(dir, "unreachable")
	// Port 1 on loopback: nothing listens there, the connection is refused at once.
	if err := os.WriteFile(unreachable, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: abc}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	garbage := filepath.Join(dir, "garbage")
	if err := os.WriteFile(garbage, []byte("this: [is not a kubeconfig"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name       string
		kubeconfig string
		args       []string
		want       string
	}{
		{"unreachable server", unreachable, []string{"scan"}, "cannot reach the cluster"},
		{"bad kubeconfig", garbage, []string{"scan"}, "kubeconfig"},
		{"unknown check", unreachable, []string{"scan", "--checks", "no-such-check"}, `unknown check "no-such-check"`},
		{"bad min-age", unreachable, []string{"scan", "--min-age", "ten minutes"}, "invalid --min-age"},
		{"bad output", unreachable, []string{"scan", "-o", "xml"}, "invalid --output"},
		{"bad fail-on", unreachable, []string{"scan", "--fail-on", "critical"}, "invalid --fail-on"},
		{"unknown explain", unreachable, []string{"explain", "nothing-like-this"}, `unknown ID "nothing-like-this"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := runPlugin(t, tc.kubeconfig, tc.args...)
			if code != 1 {
				t.Errorf("exit %d, want 1\nstdout: %s\nstderr: %s", code, stdout, stderr)
			}
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			if len(lines) != 1 || !strings.HasPrefix(lines[0], "error: ") || !strings.Contains(lines[0], tc.want) {
				t.Errorf("stderr is not one clear line containing %q:\n%s", tc.want, stderr)
			}
			if strings.TrimSpace(stdout) != "" {
				t.Errorf("stdout is not empty on error:\n%s", stdout)
			}
		})
	}
}

// countingTransport counts the requests per path (without query) and LIST pages per path.
type countingTransport struct {
	next  http.RoundTripper
	mu    sync.Mutex
	lists map[string]int // first pages (no continue token)
	pages map[string]int // every page
}

func (c *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodGet && req.URL.Query().Has("limit") {
		c.mu.Lock()
		c.pages[req.URL.Path]++
		if req.URL.Query().Get("continue") == "" {
			c.lists[req.URL.Path]++
		}
		c.mu.Unlock()
	}
	return c.next.RoundTrip(req)
}

// needsCheck is a test check that only declares inputs: several of them share inputs, and the
// collector must still read each input once.
type needsCheck struct{ id string }

func (n needsCheck) Info() checks.Info {
	return checks.Info{ID: n.id, Threshold: time.Minute, Needs: []checks.Need{
		{Input: snapshot.InputPods}, {Input: snapshot.InputEvents}, {Input: snapshot.InputNodes},
		{Input: snapshot.InputObjects}, {Input: snapshot.InputNamespaces}, {Input: snapshot.InputControllers, Optional: true},
		{Input: snapshot.InputPersistentVolumes, Optional: true}, {Input: snapshot.InputDeletedServices, Optional: true},
		{Input: snapshot.InputDeletedAttachments, Optional: true},
	}}
}

func (needsCheck) Run(*snapshot.Snapshot, time.Duration) []report.Finding { return nil }

func TestCollectorReadsEachKindOncePaginated(t *testing.T) {
	c := testcluster.Start(t, testcluster.Options{})
	ctx := t.Context()
	const pods, pageSize = 37, 10
	createNamespace(t, c, "many")
	for i := range pods {
		p := simplePod("many", fmt.Sprintf("web-%02d", i))
		if _, err := c.Clientset().CoreV1().Pods("many").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, nChecks := range []int{1, 4} {
		t.Run(fmt.Sprintf("%d checks", nChecks), func(t *testing.T) {
			counter := &countingTransport{lists: map[string]int{}, pages: map[string]int{}}
			cfg := c.RESTConfig()
			cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { counter.next = rt; return counter })
			clients, err := scan.Clients(cfg)
			if err != nil {
				t.Fatal(err)
			}
			var cs []checks.Check
			for i := range nChecks {
				cs = append(cs, needsCheck{id: fmt.Sprintf("c%d", i)})
			}
			snap := collectWithPageSize(ctx, t, clients, cs, pageSize)
			if len(snap.Pods) != pods {
				t.Errorf("read %d pods, want all %d across pages", len(snap.Pods), pods)
			}
			if got := counter.pages["/api/v1/pods"]; got != (pods+pageSize-1)/pageSize {
				t.Errorf("pods were read in %d pages, want %d", got, (pods+pageSize-1)/pageSize)
			}
			for path, n := range counter.lists {
				if n != 1 {
					t.Errorf("%s listed %d times in one scan of %d checks, want once", path, n, nChecks)
				}
			}
			if counter.lists["/api/v1/events"] != 1 || counter.lists["/api/v1/nodes"] != 1 || counter.lists["/api/v1/persistentvolumes"] != 1 || counter.lists["/api/v1/services"] != 1 ||
				counter.lists["/apis/storage.k8s.io/v1/volumeattachments"] != 1 {
				t.Errorf("inputs not read: %v", counter.lists)
			}
		})
	}
}

func collectWithPageSize(ctx context.Context, t *testing.T, clients collect.Clients, cs []checks.Check, pageSize int64) *snapshot.Snapshot {
	t.Helper()
	_, snap, err := scan.Run(ctx, clients, scan.Options{Scope: snapshot.Scope{AllNamespaces: true},
		Settings: snapshot.DefaultSettings(), Checks: cs, MinAge: -1, PageSize: pageSize})
	if err != nil {
		t.Fatal(err)
	}
	return snap
}
