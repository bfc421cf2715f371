package e2e

import (
	"context"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/testcluster"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/audit"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// kustomize builds dir with the real kubectl and returns the YAML.
func kustomize(t *testing.T, c *testcluster.Cluster, dir string) string {
	t.Helper()
	out, errOut, code := runKubectl(t, c.Kubeconfig, "kustomize", dir)
	if code != 0 {
		t.Fatalf("kubectl kustomize %s: exit %d\n%s", dir, code, errOut)
	}
	return out
}

// applyYAML applies manifests server-side (dryRun: with --dry-run=server) as the admin.
func applyYAML(t *testing.T, c *testcluster.Cluster, manifests string, dryRun bool) {
	t.Helper()
	args := []string{}
	if dryRun {
		args = append(args, "--dry-run=server")
	}
	kubectlApply(t, c, manifests, args...)
}

// applyYAMLIn dry-runs manifests into namespace, as Helm installs a release there.
func applyYAMLIn(t *testing.T, c *testcluster.Cluster, manifests, namespace string) {
	t.Helper()
	kubectlApply(t, c, manifests, "--dry-run=server", "-n", namespace)
}

func kubectlApply(t *testing.T, c *testcluster.Cluster, manifests string, extra ...string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "manifests.yaml")
	if err := os.WriteFile(path, []byte(manifests), 0o600); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"apply", "--server-side", "--field-manager=e2e", "-f", path}, extra...)
	if out, errOut, code := runKubectl(t, c.Kubeconfig, args...); code != 0 {
		t.Fatalf("kubectl %s: exit %d\n%s\n%s", strings.Join(args, " "), code, out, errOut)
	}
}

// documents splits YAML into its objects, by kind/name.
func documents(t *testing.T, manifests string) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, doc := range strings.Split(manifests, "\n---\n") {
		var m map[string]any
		if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
			t.Fatalf("rendered YAML: %v\n%s", err, doc)
		}
		if m == nil {
			continue
		}
		meta, _ := m["metadata"].(map[string]any)
		out[m["kind"].(string)+"/"+meta["name"].(string)] = m
	}
	return out
}

// TestAuditorKustomizeBase: deploy/auditor and its autofix component are accepted by the
// apiserver (server-side dry run), the Deployment is what the contract says, and the RBAC it
// grants is enough: `audit` running as its ServiceAccount scans, writes reports and leads.
func TestAuditorKustomizeBase(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, testcluster.Options{})
	installReportCRDs(t, c)
	base := filepath.Join(repoRoot(t), "deploy", "auditor")
	rendered := kustomize(t, c, base)
	createNamespace(t, c, "workloaddoctor") // a dry run does not create the namespace
	applyYAML(t, c, rendered, true)

	objs := documents(t, rendered)
	dep := objs["Deployment/workloaddoctor-auditor"]
	if dep == nil {
		t.Fatalf("no Deployment in the base: %v", objs)
	}
	spec := dep["spec"].(map[string]any)
	pod := spec["template"].(map[string]any)["spec"].(map[string]any)
	ctr := pod["containers"].([]any)[0].(map[string]any)
	args := strings.Join(toStrings(ctr["args"]), " ")
	sc := ctr["securityContext"].(map[string]any)
	res := ctr["resources"].(map[string]any)
	if spec["replicas"] != float64(2) || pod["securityContext"].(map[string]any)["runAsNonRoot"] != true ||
		sc["readOnlyRootFilesystem"] != true || sc["allowPrivilegeEscalation"] != false ||
		res["requests"] == nil || res["limits"] == nil ||
		!strings.HasPrefix(args, "audit ") || !strings.Contains(args, "--leader-elect") || strings.Contains(args, "--auto-fix") {
		t.Errorf("Deployment: replicas %v, pod %v, container %v", spec["replicas"], pod["securityContext"], ctr)
	}
	if objs["Service/workloaddoctor-auditor-metrics"] == nil || objs["ClusterRoleBinding/workloaddoctor-auditor-fix"] != nil {
		t.Errorf("base objects: %v", keys(objs))
	}

	// With the autofix component: the fix role bound, --auto-fix given.
	overlay := t.TempDir()
	rel, err := filepath.Rel(overlay, base)
	if err != nil {
		t.Fatal(err)
	}
	kz := "resources: [" + rel + "]\ncomponents: [" + rel + "/autofix]\n"
	if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(kz), 0o600); err != nil {
		t.Fatal(err)
	}
	withFix := kustomize(t, c, overlay)
	applyYAML(t, c, withFix, true)
	if fixObjs := documents(t, withFix); fixObjs["ClusterRoleBinding/workloaddoctor-auditor-fix"] == nil || !strings.Contains(withFix, "--auto-fix=") {
		t.Errorf("autofix component: %v", keys(fixObjs))
	}

	// For real: the ServiceAccount's grants run the auditor.
	applyYAML(t, c, rendered, false)
	const saUser = "system:serviceaccount:workloaddoctor:workloaddoctor-auditor"
	// The controllers' leader logs the scan reads as evidence, wherever they run; never a Secret.
	for _, a := range []struct {
		ns, verb, resource, sub string
		want                    bool
	}{
		{"kruise-system", "get", "pods", "log", true}, {"capi-system", "get", "pods", "log", true},
		{"elsewhere", "get", "pods", "log", true}, {"kruise-system", "list", "pods", "", true},
		{"kruise-system", "get", "secrets", "", false}, {"", "list", "secrets", "", false},
	} {
		if got := canI(t, c, saUser, a.verb, a.ns, a.resource, a.sub); got != a.want {
			t.Errorf("%s %s/%s in %q allowed %v, want %v", a.verb, a.resource, a.sub, a.ns, got, a.want)
		}
	}
	sa := c.UserKubeconfigInNamespace(t, "workloaddoctor", saUser)
	createNamespace(t, c, "ad")
	heldConfigMap(t, c.Clientset(), "ad")
	_, stderr, code := runPlugin(t, sa, "audit", "--once", "-A", "--checks", teCheck, "--min-age", "0s", "--fail-on", "warning")
	if code != 2 || auditReport(t, c, audit.OpenReports, "ad") == nil {
		t.Fatalf("audit --once as the ServiceAccount: exit %d (want 2) and a report\n%s", code, stderr)
	}
	p := startAudit(t, sa, "-A", "--checks", teCheck, "--interval", "2s", "--leader-elect", "--leader-election-lease-duration", "4s")
	eventually(t, 2*time.Minute, "the ServiceAccount's auditor to lead", func(context.Context) (bool, error) {
		return p.scrape(t).leader(), nil
	})
	if _, err := c.Clientset().CoordinationV1().Leases("workloaddoctor").Get(t.Context(), audit.LeaseName, metav1.GetOptions{}); err != nil {
		t.Errorf("the Lease: %v", err)
	}
}

// TestAuditorReadsControllerLogs: the kustomize base's grants let a scan read the kruise-manager
// leader's log through pods/log, so the OpenKruise checks run with their evidence and coverage is
// complete; without the base's log binding the same scan is degraded on pods/log.
func TestAuditorReadsControllerLogs(t *testing.T) {
	t.Parallel()
	k := startKruiseCluster(t)
	k.node(t, krKwokNode, true)
	k.manager(t, krLogsNamespace, "v1.9.0", nil, krKwokNode, true)
	applyYAML(t, k.c, kustomize(t, k.c, filepath.Join(repoRoot(t), "deploy", "auditor")), false)
	const saUser = "system:serviceaccount:workloaddoctor:workloaddoctor-auditor"
	sa := k.c.UserKubeconfigInNamespace(t, "workloaddoctor", saUser)
	scan := func() *report.Report {
		t.Helper()
		stdout, stderr, code := pluginOn(sa).scan(t, "-A", "-o", "json", "--checks", "expectations-unsatisfied,stuck-preparing-normal,rollout-stalled").out()
		if code != 0 {
			t.Fatalf("scan -A as the auditor's ServiceAccount: exit %d\n%s", code, stderr)
		}
		return parseReport(t, stdout)
	}
	if r := scan(); !r.Coverage.Complete || len(r.Coverage.Degraded) != 0 || len(r.Coverage.Skipped) != 0 {
		t.Errorf("coverage with the base's grants = %+v, want complete", r.Coverage)
	}

	if err := k.cs.RbacV1().ClusterRoleBindings().Delete(k.ctx, "workloaddoctor-auditor-scan-logs", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the log grant to go", func(context.Context) (bool, error) {
		return !canI(t, k.c, saUser, "get", krLogsNamespace, "pods", "log"), nil
	})
	r := scan()
	krDegraded(t, r, "expectations-unsatisfied", "pods/log")
	krDegraded(t, r, "rollout-stalled", "pods/log")
}

// canI asks the apiserver's authorizer whether the ServiceAccount user may verb resource (and
// subresource) in ns.
func canI(t *testing.T, c *testcluster.Cluster, user, verb, ns, resource, sub string) bool {
	t.Helper()
	parts := strings.Split(user, ":")
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:   user,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + parts[2], "system:authenticated"},
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: ns, Verb: verb, Resource: resource, Subresource: sub,
		},
	}}
	got, err := c.Clientset().AuthorizationV1().SubjectAccessReviews().Create(t.Context(), sar, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("SubjectAccessReview: %v", err)
	}
	return got.Status.Allowed
}

func toStrings(v any) []string {
	var out []string
	for _, x := range v.([]any) {
		out = append(out, x.(string))
	}
	return out
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestDockerfileBinary: the image is distroless/static run as non-root, and the binary it copies
// in, built as its RUN line builds it (make build, cgo off), is static and runs.
func TestDockerfileBinary(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	raw, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	df := string(raw)
	for _, want := range []string{"FROM gcr.io/distroless/static:nonroot", "USER 65532:65532", "ENV CGO_ENABLED=0",
		"RUN make build", "COPY --from=build /src/bin/kubectl-workloaddoctor /kubectl-workloaddoctor"} {
		if !strings.Contains(df, "\n"+want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
	bin := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "make", "build", "BIN="+bin)
	cmd.Dir, cmd.Env = root, append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make build with cgo off: %v\n%s", err, out)
	}
	path := filepath.Join(bin, "kubectl-workloaddoctor")
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("the binary asks for a dynamic loader: distroless/static has none")
		}
	}
	if out, _, code := run(t, "", path, "version", "--client"); code != 0 || !strings.Contains(out, "Plugin Version") {
		t.Errorf("the image's binary does not run: exit %d\n%s", code, out)
	}
}

// TestHelmChartDryRun: the chart's renderings (make test-chart writes them to bin/chart with the
// Helm library) are accepted by the apiserver, with and without auto-fix and the ServiceMonitor.
func TestHelmChartDryRun(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(repoRoot(t), "bin", "chart")
	renderings, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(renderings) < 2 {
		t.Fatalf("chart renderings missing in %s: run `make test-chart` first (%v)", dir, err)
	}
	c := testcluster.Start(t, testcluster.Options{})
	installLooseCRD(t, c, "monitoring.coreos.com", "ServiceMonitor", "servicemonitors")
	createNamespace(t, c, "workloaddoctor")
	for _, r := range renderings {
		raw, err := os.ReadFile(r)
		if err != nil {
			t.Fatal(err)
		}
		// Helm installs into the release namespace; kubectl needs it written on namespaced objects.
		applyYAMLIn(t, c, string(raw), "workloaddoctor")
	}
}
