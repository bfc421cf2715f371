package e2e

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/checktest"
	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/testcluster"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks/builtin"
)

// TestScanRoleIsEnough binds only the shipped workloaddoctor-scan role (and the optional log role
// in the OpenKruise namespace) to a user, and shows a cluster-wide scan is complete with it: every
// check runs, nothing is skipped or degraded, and the only note is that Secrets were not listed.
// A webhook's Service is there, so the admission input's reads (the Service, its EndpointSlices)
// are made with the role too.
func TestScanRoleIsEnough(t *testing.T) {
	c := testcluster.Start(t, testcluster.Options{})
	c.InstallCRDs(t)
	ctx := t.Context()
	cs := c.Clientset()
	createNamespace(t, c, "kruise-system")
	createNamespace(t, c, "shop")
	if _, err := cs.CoreV1().Pods("shop").Create(ctx, simplePod("shop", "web-0"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Services("shop").Create(ctx, checktest.WebhookServiceObject("shop", "policy"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	nowhere := checktest.NamespaceSelector(&metav1.LabelSelector{MatchLabels: map[string]string{"workloaddoctor.io/e2e": "nowhere"}})
	if _, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, checktest.ValidatingWebhooks("policy",
		checktest.Webhook("policy.example.com", "shop", "policy", checktest.Rules("CREATE", "", "v1", "configmaps"), nowhere)), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	if out, errOut, code := runKubectl(t, c.Kubeconfig, "apply", "-f", filepath.Join(repoRoot(t), "deploy", "rbac", "scan.yaml")); code != 0 {
		t.Fatalf("kubectl apply scan.yaml: exit %d\n%s\n%s", code, out, errOut)
	}
	group := []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "platform-oncall"}}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "workloaddoctor-scan"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "workloaddoctor-scan"},
		Subjects:   group,
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().RoleBindings("kruise-system").Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "workloaddoctor-scan-logs", Namespace: "kruise-system"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "workloaddoctor-scan-logs"},
		Subjects:   group,
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	user := c.UserKubeconfig(t, "bob", "platform-oncall")
	eventually(t, 30*time.Second, "the scan role to apply to bob", func(context.Context) (bool, error) {
		out, _, code := runKubectl(t, user, "auth", "can-i", "list", "clonesets.apps.kruise.io", "-A")
		return code == 0 && strings.TrimSpace(out) == "yes", nil
	})
	// The role must not let its holder read secrets.
	if out, _, _ := runKubectl(t, user, "auth", "can-i", "list", "secrets", "-A"); strings.TrimSpace(out) != "no" {
		t.Errorf("the scan role grants list secrets: %q", out)
	}
	for _, verb := range []string{"delete", "patch", "create", "update"} {
		if out, _, _ := runKubectl(t, user, "auth", "can-i", verb, "pods", "-A"); strings.TrimSpace(out) != "no" {
			t.Errorf("the scan role grants %s pods: %q", verb, out)
		}
	}

	stdout, stderr, code := pluginOn(user).scan(t, "-A", "-o", "json").out()
	if code != 0 {
		t.Fatalf("scan -A with the scan role: exit %d\nstderr: %s", code, stderr)
	}
	r := parseReport(t, stdout)
	if !r.Coverage.Complete || len(r.Coverage.Skipped) != 0 || len(r.Coverage.Degraded) != 0 {
		t.Errorf("coverage with the scan role = %+v, want complete", r.Coverage)
	}
	if len(r.Coverage.Checks) != len(builtin.Checks().IDs()) {
		t.Errorf("checks that ran = %v, want all of %v", r.Coverage.Checks, builtin.Checks().IDs())
	}
	secretsNoted := false
	for _, n := range r.Coverage.Notes {
		secretsNoted = secretsNoted || strings.Contains(n.Reason, "secrets")
	}
	if !secretsNoted {
		t.Errorf("coverage does not say Secrets were not listed: %+v", r.Coverage.Notes)
	}
	if strings.Contains(stderr, "warning: check") {
		t.Errorf("stderr warns although coverage is complete:\n%s", stderr)
	}
}
