package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/testcluster"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// fixDoc is the part of `fix -o json` the tests read.
type fixDoc struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		DryRun string `json:"dryRun"`
		User   string `json:"user"`
		Report string `json:"report"`
	} `json:"metadata"`
	Summary struct {
		Total, Applied, AlreadyResolved, Refused, Failed, DryRun int
	} `json:"summary"`
	Results []fixResult `json:"results"`
}

type fixResult struct {
	Findings              []string         `json:"findings"`
	Action                string           `json:"action"`
	Object                report.ObjectRef `json:"object"`
	Status                string           `json:"status"`
	Reason                string           `json:"reason"`
	ResourceVersionBefore string           `json:"resourceVersionBefore"`
	ResourceVersionAfter  string           `json:"resourceVersionAfter"`
	Verified              bool             `json:"verified"`
}

// fixAudit is one line of --audit-file.
type fixAudit struct {
	Time                  time.Time        `json:"time"`
	User                  string           `json:"user"`
	Action                string           `json:"action"`
	Object                report.ObjectRef `json:"object"`
	Findings              []string         `json:"findings"`
	ResourceVersionBefore string           `json:"resourceVersionBefore"`
	ResourceVersionAfter  string           `json:"resourceVersionAfter"`
	Result                string           `json:"result"`
}

func fixParse(t *testing.T, stdout, stderr string) fixDoc {
	t.Helper()
	var d fixDoc
	if err := json.Unmarshal([]byte(stdout), &d); err != nil {
		t.Fatalf("fix -o json stdout is not JSON: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	if d.APIVersion != report.APIVersion || d.Kind != "FixResult" {
		t.Fatalf("fix -o json: apiVersion/kind = %s/%s", d.APIVersion, d.Kind)
	}
	return d
}

// fixOne runs fix and checks the exit code and that exactly one action has the wanted status.
func fixOne(t *testing.T, kubeconfig string, wantExit int, wantStatus string, args ...string) fixResult {
	t.Helper()
	fixed := pluginOn(kubeconfig).fix(t, append([]string{"-o", "json"}, args...)...).wantExit(wantExit)
	stderr := fixed.stderr
	d := fixParse(t, fixed.stdout, stderr)
	if len(d.Results) != 1 || d.Results[0].Status != wantStatus {
		t.Fatalf("fix %v: want one %s result, got %+v\nstderr:\n%s", args, wantStatus, d.Results, stderr)
	}
	return d.Results[0]
}

// fixScan runs the stuck-terminating check on ns and returns the report, once why agrees with
// it on every object it reports.
func fixScan(t *testing.T, kubeconfig, ns string) (*report.Report, string) {
	t.Helper()
	scanned := pluginOn(kubeconfig).scan(t, "-n", ns, "--checks", "stuck-terminating", "--min-age", "0s", "-o", "json").wantFindingsOrNone()
	rep := scanned.agreed() // scanned is now the scan that agreed
	return rep, scanned.stdout
}

func fixFinding(t *testing.T, r *report.Report, name, rootCause string) report.Finding {
	t.Helper()
	for _, f := range r.Findings {
		if f.Object.Name == name && f.RootCause.ID == rootCause {
			return f
		}
	}
	t.Fatalf("no %s finding for %s in %+v", rootCause, name, r.Findings)
	return report.Finding{}
}

// fixTerminatingPod makes a pod held Terminating by finalizers the way it happens for real: a
// controller ("keeper", whose Deployment exists) adds the example.com/keep-* finalizers, another
// ("cleanup-controller", since uninstalled) the others, each through its own client so that
// managedFields name it; then the pod was deleted. The check declares an owner missing only when
// it is a known one that no namespace runs, never because no workload is named like a field
// manager, so the fixtures' orphan is Argo CD's finalizer with no Argo CD installed; the fix
// engine does not care which finalizer it removes. The pod is not bound to a node,
// so only the finalizers hold it.
func fixTerminatingPod(t *testing.T, cs kubernetes.Interface, ns, name string, finalizers ...string) *corev1.Pod {
	t.Helper()
	ctx := t.Context()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/web:1.0"}}},
	}
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{FieldManager: "kubectl-create"}); err != nil {
		t.Fatalf("create pod: %v", err)
	}
	for i, f := range finalizers {
		manager := "cleanup-controller"
		if strings.HasPrefix(f, "example.com/keep") {
			manager = "keeper"
		}
		patch := `[{"op":"add","path":"/metadata/finalizers/-","value":"` + f + `"}]`
		if i == 0 {
			patch = `[{"op":"add","path":"/metadata/finalizers","value":["` + f + `"]}]`
		}
		if _, err := cs.CoreV1().Pods(ns).Patch(ctx, name, types.JSONPatchType, []byte(patch), metav1.PatchOptions{FieldManager: manager}); err != nil {
			t.Fatalf("add finalizer %s: %v", f, err)
		}
	}
	if err := cs.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete pod: %v", err)
	}
	got, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil || got.DeletionTimestamp == nil {
		t.Fatalf("pod %s/%s should be Terminating: %v", ns, name, err)
	}
	if !reflect.DeepEqual(got.Finalizers, finalizers) {
		t.Fatalf("fixture finalizers = %v, want %v", got.Finalizers, finalizers)
	}
	return got
}

// fixKeeper is the Deployment of the controller that owns the keep-* finalizers.
func fixKeeper(t *testing.T, cs kubernetes.Interface, ns string) {
	t.Helper()
	labels := map[string]string{"app": "keeper"}
	one := int32(1)
	_, err := cs.AppsV1().Deployments(ns).Create(t.Context(), &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "keeper", Namespace: ns},
		Spec: appsv1.DeploymentSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "keeper", Image: "registry.example/keeper:1"}}}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create keeper deployment: %v", err)
	}
}

func fixNamespace(t *testing.T, cs kubernetes.Interface, name string) string {
	t.Helper()
	if _, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	return name
}

func fixGetPod(t *testing.T, cs kubernetes.Interface, ns, name string) *corev1.Pod {
	t.Helper()
	p, err := cs.CoreV1().Pods(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get pod %s/%s: %v", ns, name, err)
	}
	return p
}

// fixEvents returns the WorkloadDoctorFix events about the object with the uid.
func fixEvents(t *testing.T, cs kubernetes.Interface, ns string, uid types.UID) []corev1.Event {
	t.Helper()
	l, err := cs.CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{FieldSelector: "reason=WorkloadDoctorFix"})
	if err != nil {
		t.Fatalf("list events: %v", err)
	}
	var out []corev1.Event
	for _, e := range l.Items {
		if e.InvolvedObject.UID == uid {
			out = append(out, e)
		}
	}
	return out
}

// fixUntouched fails if the pod was written since before.
func fixUntouched(t *testing.T, cs kubernetes.Interface, before *corev1.Pod) {
	t.Helper()
	after := fixGetPod(t, cs, before.Namespace, before.Name)
	if after.ResourceVersion != before.ResourceVersion || !reflect.DeepEqual(after.Finalizers, before.Finalizers) {
		t.Errorf("pod %s/%s was written: resourceVersion %s -> %s, finalizers %v -> %v", before.Namespace, before.Name,
			before.ResourceVersion, after.ResourceVersion, before.Finalizers, after.Finalizers)
	}
	if evs := fixEvents(t, cs, before.Namespace, before.UID); len(evs) != 0 {
		t.Errorf("events recorded on an untouched pod: %+v", evs)
	}
}

// TestFixStuckTerminating applies the fixes of real stuck-terminating findings with the real
// binary and checks the objects' real state afterwards. No controller-manager runs: its PodGC
// would force-delete the node-missing pod by itself.
func TestFixStuckTerminating(t *testing.T) {
	t.Parallel()
	pluginBinary(t)
	c := testcluster.Start(t, testcluster.Options{})
	cs := c.Clientset()
	kc := c.Kubeconfig

	t.Run("remove-finalizer removes only the orphaned finalizer, records an Event and an audit line", func(t *testing.T) {
		ns := fixNamespace(t, cs, "fix-remove")
		fixKeeper(t, cs, ns)
		pod := fixTerminatingPod(t, cs, ns, "web-0", "example.com/keep-a", "resources-finalizer.argocd.argoproj.io/background", "example.com/keep-b")
		r, _ := fixScan(t, kc, ns)
		f := fixFinding(t, r, "web-0", "finalizer-owner-missing")
		if len(f.Fixes) != 1 || f.Fixes[0].Params["finalizer"] != "resources-finalizer.argocd.argoproj.io/background" {
			t.Fatalf("finding proposes %+v, want only the removal of resources-finalizer.argocd.argoproj.io/background", f.Fixes)
		}

		audit := filepath.Join(t.TempDir(), "audit.jsonl")
		res := fixOne(t, kc, 0, "applied", "-n", ns, "--check", "stuck-terminating", "--min-age", "0s", "--yes", "--audit-file", audit)
		after := fixGetPod(t, cs, ns, "web-0")
		if want := []string{"example.com/keep-a", "example.com/keep-b"}; !reflect.DeepEqual(after.Finalizers, want) {
			t.Errorf("finalizers = %v, want %v (the others kept, in order)", after.Finalizers, want)
		}
		if res.Action != "remove-finalizer" || res.Object.UID != string(pod.UID) || !res.Verified ||
			res.ResourceVersionBefore != pod.ResourceVersion || res.ResourceVersionAfter != after.ResourceVersion {
			t.Errorf("result = %+v; pod rv %s -> %s", res, pod.ResourceVersion, after.ResourceVersion)
		}

		evs := fixEvents(t, cs, ns, pod.UID)
		if len(evs) != 1 || evs[0].Type != corev1.EventTypeNormal || evs[0].Source.Component != "kubectl-workloaddoctor" ||
			!strings.Contains(evs[0].Message, "remove-finalizer") || !strings.Contains(evs[0].Message, f.ID) {
			t.Errorf("events on the pod = %+v, want one Normal WorkloadDoctorFix event naming the action and finding", evs)
		}

		data, err := os.ReadFile(audit)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		if len(lines) != 1 {
			t.Fatalf("audit file has %d lines, want 1:\n%s", len(lines), data)
		}
		var rec fixAudit
		if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
			t.Fatalf("audit line is not JSON: %v\n%s", err, lines[0])
		}
		if rec.User != "admin" || rec.Action != "remove-finalizer" || rec.Result != "applied" || rec.Time.IsZero() ||
			rec.Object.UID != string(pod.UID) || rec.Object.Name != "web-0" || !reflect.DeepEqual(rec.Findings, []string{f.ID}) ||
			rec.ResourceVersionBefore != pod.ResourceVersion || rec.ResourceVersionAfter != after.ResourceVersion {
			t.Errorf("audit record = %+v", rec)
		}

		// What is left is the keeper's, which runs: nothing more to fix.
		res2, _ := fixScan(t, kc, ns)
		if g := fixFinding(t, res2, "web-0", "finalizer-owner-not-acting"); len(g.Fixes) != 0 {
			t.Errorf("after the fix the pod still offers fixes %+v", g.Fixes)
		}
	})

	t.Run("remove-finalizer works on any resource, cluster-scoped ones included", func(t *testing.T) {
		ns := fixNamespace(t, cs, "fix-objects")
		ctx := t.Context()
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "settings"}, Data: map[string]string{"mode": "x"}}
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// A cluster-scoped custom resource, created by its operator.
		dir, err := testcluster.CRDDir()
		if err != nil {
			t.Fatal(err)
		}
		c.InstallCRDs(t, filepath.Join(dir, "apps.kruise.io_sidecarsets.yaml"))
		sidecarSets := schema.GroupVersionResource{Group: "apps.kruise.io", Version: "v1alpha1", Resource: "sidecarsets"}
		dyn := c.Dynamic().Resource(sidecarSets)
		ss := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps.kruise.io/v1alpha1", "kind": "SidecarSet",
			"metadata": map[string]any{"name": "fix-e2e-logging"},
			"spec":     map[string]any{"containers": []any{map[string]any{"name": "log", "image": "registry.example/log:1"}}}}}
		if _, err := dyn.Create(ctx, ss, metav1.CreateOptions{FieldManager: "sidecar-operator"}); err != nil {
			t.Fatal(err)
		}
		add := []byte(`[{"op":"add","path":"/metadata/finalizers","value":["resources-finalizer.argocd.argoproj.io/background"]}]`)
		opts := metav1.PatchOptions{FieldManager: "cleanup-controller"}
		if _, err := cs.CoreV1().ConfigMaps(ns).Patch(ctx, "settings", types.JSONPatchType, add, opts); err != nil {
			t.Fatal(err)
		}
		if _, err := dyn.Patch(ctx, "fix-e2e-logging", types.JSONPatchType, add, opts); err != nil {
			t.Fatal(err)
		}
		if err := cs.CoreV1().ConfigMaps(ns).Delete(ctx, "settings", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := dyn.Delete(ctx, "fix-e2e-logging", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		stuck, err := dyn.Get(ctx, "fix-e2e-logging", metav1.GetOptions{})
		if err != nil || stuck.GetDeletionTimestamp() == nil {
			t.Fatalf("sidecarset should be Deleting: %v", err)
		}

		res := fixOne(t, kc, 0, "applied", "-n", ns, "--check", "stuck-terminating", "--min-age", "0s", "--yes")
		if res.Object.Kind != "ConfigMap" {
			t.Errorf("result = %+v, want the ConfigMap", res)
		}
		if _, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "settings", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("configmap should be gone once its only finalizer is removed: %v", err)
		}

		// Cluster-scoped objects are scanned with -A; the ID picks just this one.
		stdout, stderr, code := pluginOn(kc).scan(t, "-A", "--checks", "stuck-terminating", "--min-age", "0s", "-o", "json").out()
		if code != 2 {
			t.Fatalf("scan -A: exit %d, want 2\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		var r report.Report
		if err := json.Unmarshal([]byte(stdout), &r); err != nil {
			t.Fatal(err)
		}
		f := fixFinding(t, &r, "fix-e2e-logging", "finalizer-owner-missing")
		// why on the cluster-scoped object gives the scan's finding and the fix command that finds
		// it: only a scan of every namespace reports a cluster-scoped object.
		p := pluginOn(kc)
		whyAgreesWithScan(t, p, &r, f, "--checks", "stuck-terminating", "--min-age", "0s")
		if tree := p.why(t, "sidecarset/fix-e2e-logging", "--checks", "stuck-terminating", "--min-age", "0s").wantExit(2).stdout; !strings.Contains(tree, "Fix: kubectl workloaddoctor fix -A "+f.ID) {
			t.Errorf("why sidecarset/fix-e2e-logging: no fix -A %s in\n%s", f.ID, tree)
		}
		res = fixOne(t, kc, 0, "applied", "-A", "--min-age", "0s", "--yes", f.ID)
		if res.Object.Kind != "SidecarSet" || res.Object.Namespace != "" {
			t.Errorf("result = %+v, want the SidecarSet", res)
		}
		if _, err := dyn.Get(ctx, "fix-e2e-logging", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("sidecarset should be gone once its only finalizer is removed: %v", err)
		}
		// Events about cluster-scoped objects live in default.
		if evs := fixEvents(t, cs, metav1.NamespaceDefault, stuck.GetUID()); len(evs) != 1 || evs[0].InvolvedObject.Kind != "SidecarSet" {
			t.Errorf("events on the SidecarSet = %+v", evs)
		}
	})

	t.Run("the shipped scan and fix roles are enough, and the records name the user", func(t *testing.T) {
		root := repoRoot(t)
		if out, errOut, code := runKubectl(t, kc, "apply", "-f", filepath.Join(root, "deploy", "rbac", "scan.yaml"),
			"-f", filepath.Join(root, "deploy", "rbac", "fix.yaml")); code != 0 {
			t.Fatalf("kubectl apply roles: exit %d\n%s\n%s", code, out, errOut)
		}
		for _, role := range []string{"workloaddoctor-scan", "workloaddoctor-fix"} {
			_, err := cs.RbacV1().ClusterRoleBindings().Create(t.Context(), &rbacv1.ClusterRoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: role + "-fix-e2e"},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
				Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "fix-e2e-oncall"}},
			}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
		}
		user := c.UserKubeconfig(t, "oncall-alice", "fix-e2e-oncall")
		ns := fixNamespace(t, cs, "fix-rbac")
		pod := fixTerminatingPod(t, cs, ns, "web-0", "resources-finalizer.argocd.argoproj.io/background")
		audit := filepath.Join(t.TempDir(), "audit.jsonl")
		// The new bindings reach the authorizer's cache within a moment.
		eventually(t, 30*time.Second, "the fix role to apply to oncall-alice", func(context.Context) (bool, error) {
			out, _, code := runKubectl(t, user, "auth", "can-i", "create", "pods", "--subresource=eviction", "-n", ns)
			return code == 0 && strings.TrimSpace(out) == "yes", nil
		})
		res := fixOne(t, user, 0, "applied", "-n", ns, "--check", "stuck-terminating", "--min-age", "0s", "--yes", "--audit-file", audit)
		if !res.Verified {
			t.Errorf("result = %+v", res)
		}
		if _, err := cs.CoreV1().Pods(ns).Get(t.Context(), "web-0", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("pod should be gone: %v", err)
		}
		data, err := os.ReadFile(audit)
		if err != nil {
			t.Fatal(err)
		}
		var rec fixAudit
		if err := json.Unmarshal([]byte(strings.TrimSpace(string(data))), &rec); err != nil || rec.User != "oncall-alice" || rec.Result != "applied" {
			t.Errorf("audit = %s (%v), want one applied record by oncall-alice", data, err)
		}
		if evs := fixEvents(t, cs, ns, pod.UID); len(evs) != 1 || !strings.Contains(evs[0].Message, "oncall-alice") {
			t.Errorf("events = %+v, want one naming oncall-alice", evs)
		}
	})

	t.Run("force-delete removes a pod stuck on a node that no longer exists", func(t *testing.T) {
		ns := fixNamespace(t, cs, "fix-force")
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db-0"},
			Spec: corev1.PodSpec{NodeName: "ip-10-0-9-9", // bound, then the node was deleted
				Containers: []corev1.Container{{Name: "db", Image: "registry.example/db:1"}}},
		}
		created, err := cs.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		grace := int64(1)
		if err := cs.CoreV1().Pods(ns).Delete(t.Context(), "db-0", metav1.DeleteOptions{GracePeriodSeconds: &grace}); err != nil {
			t.Fatal(err)
		}
		// The deletion is overdue once its one-second grace period has passed.
		eventually(t, 30*time.Second, "a node-missing finding", func(context.Context) (bool, error) {
			r, _ := fixScan(t, kc, ns)
			for _, f := range r.Findings {
				if f.Object.Name == "db-0" && f.RootCause.ID == "node-missing" {
					return true, nil
				}
			}
			return false, nil
		})
		res := fixOne(t, kc, 0, "applied", "-n", ns, "--check", "stuck-terminating", "--min-age", "0s", "--yes")
		if res.Action != "force-delete" || !res.Verified {
			t.Errorf("result = %+v", res)
		}
		if _, err := cs.CoreV1().Pods(ns).Get(t.Context(), "db-0", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("pod should be gone after force-delete: %v", err)
		}
		if evs := fixEvents(t, cs, ns, created.UID); len(evs) != 1 || !strings.Contains(evs[0].Message, "force-delete") {
			t.Errorf("events = %+v", evs)
		}
	})

	t.Run("a pod changed after the saved report is refused and left untouched", func(t *testing.T) {
		ns := fixNamespace(t, cs, "fix-race")
		fixTerminatingPod(t, cs, ns, "web-0", "resources-finalizer.argocd.argoproj.io/background")
		_, saved := fixScan(t, kc, ns)
		reportFile := filepath.Join(t.TempDir(), "report.json")
		if err := os.WriteFile(reportFile, []byte(saved), 0o600); err != nil {
			t.Fatal(err)
		}
		// Someone else writes the pod between the plan and the apply.
		if _, err := cs.CoreV1().Pods(ns).Patch(t.Context(), "web-0", types.MergePatchType,
			[]byte(`{"metadata":{"labels":{"triage":"in-progress"}}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		before := fixGetPod(t, cs, ns, "web-0")
		res := fixOne(t, kc, 3, "refused", "--from-report", reportFile, "--yes")
		if !strings.Contains(res.Reason, "changed since the plan") {
			t.Errorf("reason = %q", res.Reason)
		}
		fixUntouched(t, cs, before)
	})

	t.Run("a finalizer removed by someone else after the saved report is already resolved", func(t *testing.T) {
		ns := fixNamespace(t, cs, "fix-resolved")
		pod := fixTerminatingPod(t, cs, ns, "web-0", "resources-finalizer.argocd.argoproj.io/background")
		_, saved := fixScan(t, kc, ns)
		reportFile := filepath.Join(t.TempDir(), "report.json")
		if err := os.WriteFile(reportFile, []byte(saved), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.CoreV1().Pods(ns).Patch(t.Context(), "web-0", types.JSONPatchType,
			[]byte(`[{"op":"remove","path":"/metadata/finalizers/0"}]`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		res := fixOne(t, kc, 0, "already-resolved", "--from-report", reportFile, "--yes")
		if res.ResourceVersionAfter != "" || !strings.Contains(res.Reason, "no longer") {
			t.Errorf("result = %+v", res)
		}
		if evs := fixEvents(t, cs, ns, pod.UID); len(evs) != 0 {
			t.Errorf("nothing was written, yet events were recorded: %+v", evs)
		}
	})

	t.Run("without a terminal and without --yes nothing is written", func(t *testing.T) {
		ns := fixNamespace(t, cs, "fix-noconfirm")
		before := fixTerminatingPod(t, cs, ns, "web-0", "resources-finalizer.argocd.argoproj.io/background")
		audit := filepath.Join(t.TempDir(), "audit.jsonl")
		stdout, stderr, code := pluginOn(kc).fix(t, "-n", ns, "--check", "stuck-terminating", "--min-age", "0s", "--audit-file", audit).out()
		if code != 3 || !strings.Contains(stderr, "stdin is not a terminal") || !strings.Contains(stderr, "--yes") {
			t.Errorf("exit %d, want 3 with the reason on stderr\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		if !strings.Contains(stdout, "Plan: 1 action") || !strings.Contains(stdout, "refused") {
			t.Errorf("stdout should show the plan and the refused action:\n%s", stdout)
		}
		fixUntouched(t, cs, before)
	})

	t.Run("on a terminal one prompt asks for the plan: no refuses, yes applies", func(t *testing.T) {
		ns := fixNamespace(t, cs, "fix-prompt")
		before := fixTerminatingPod(t, cs, ns, "web-0", "resources-finalizer.argocd.argoproj.io/background")
		args := []string{"fix", "-n", ns, "--check", "stuck-terminating", "--min-age", "0s"}
		out, code := fixOnTerminal(t, kc, "n\n", args...)
		if code != 3 || strings.Count(out, "[y/N]") != 1 || !strings.Contains(out, "the answer was not yes") {
			t.Errorf("answer n: exit %d, want 3 after one prompt\n%s", code, out)
		}
		fixUntouched(t, cs, before)

		out, code = fixOnTerminal(t, kc, "y\n", args...)
		if code != 0 || strings.Count(out, "[y/N]") != 1 || !strings.Contains(out, "applied") {
			t.Errorf("answer y: exit %d, want 0 after one prompt\n%s", code, out)
		}
		if _, err := cs.CoreV1().Pods(ns).Get(t.Context(), "web-0", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("pod should be gone once its only finalizer is removed: %v", err)
		}
	})

	t.Run("dry runs write nothing", func(t *testing.T) {
		ns := fixNamespace(t, cs, "fix-dry")
		before := fixTerminatingPod(t, cs, ns, "web-0", "resources-finalizer.argocd.argoproj.io/background")
		res := fixOne(t, kc, 0, "dry-run", "-n", ns, "--check", "stuck-terminating", "--min-age", "0s", "--dry-run=server")
		if !strings.Contains(res.Reason, "server dry run accepted") {
			t.Errorf("server dry run result = %+v", res)
		}
		fixUntouched(t, cs, before)

		stdout, stderr, code := pluginOn(kc).fix(t, "-n", ns, "--check", "stuck-terminating", "--min-age", "0s", "--dry-run=client").out()
		if code != 0 || !strings.Contains(stdout, `remove finalizer "resources-finalizer.argocd.argoproj.io/background"`) {
			t.Errorf("client dry run: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		fixUntouched(t, cs, before)
	})

	t.Run("findings picked by ID; an unknown ID is refused", func(t *testing.T) {
		ns := fixNamespace(t, cs, "fix-ids")
		fixTerminatingPod(t, cs, ns, "web-0", "resources-finalizer.argocd.argoproj.io/background")
		other := fixTerminatingPod(t, cs, ns, "web-1", "resources-finalizer.argocd.argoproj.io/background")
		r, _ := fixScan(t, kc, ns)
		f := fixFinding(t, r, "web-0", "finalizer-owner-missing")
		fixOne(t, kc, 0, "applied", "-n", ns, "--min-age", "0s", "--yes", f.ID)
		if _, err := cs.CoreV1().Pods(ns).Get(t.Context(), "web-0", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("web-0 should be gone once its only finalizer is removed: %v", err)
		}
		fixUntouched(t, cs, other)

		res := fixOne(t, kc, 3, "refused", "-n", ns, "--min-age", "0s", "--yes", "wd-0000000000")
		if !strings.Contains(res.Reason, "no finding with this ID") {
			t.Errorf("reason = %q", res.Reason)
		}
		fixUntouched(t, cs, other)
	})
}

// fixOnTerminal runs the plugin on a pseudo-terminal (util-linux script), typing answer, and
// returns what the terminal showed and the exit code.
func fixOnTerminal(t *testing.T, kubeconfig, answer string, args ...string) (string, int) {
	t.Helper()
	scriptBin, err := exec.LookPath("script")
	if err != nil {
		t.Skip("util-linux script is not installed: cannot run the plugin on a terminal")
	}
	line := pluginBinary(t) + " " + strings.Join(args, " ")
	ctx, cancel := context.WithTimeout(t.Context(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, scriptBin, "-qec", line, "/dev/null")
	cmd.Env = commandEnv(t, kubeconfig)
	cmd.Stdin = strings.NewReader(answer)
	out, err := cmd.CombinedOutput()
	var exitErr *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("%s: %v\n%s", line, ctx.Err(), out)
	case errors.As(err, &exitErr):
		return string(out), exitErr.ExitCode()
	case err != nil:
		t.Fatalf("run %s: %v", line, err)
	}
	return string(out), 0
}
