package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// finalizerOwnerNotFound: a pod's finalizers were added by field managers named after the
// writers' binaries, as real controllers write them: "manager" (every kubebuilder project's
// binary; the apiserver takes the User-Agent's first word when no fieldManager is sent,
// managerOrUserAgent in k8s.io/apiserver/pkg/endpoints/handlers/create.go, and client-go sends the
// program's file name, DefaultKubernetesUserAgent in k8s.io/client-go/rest/config.go) and
// "volume-janitor". The owning controllers run as a StatefulSet and a DaemonSet, not Deployments.
// No finding may claim an owner missing or offer to remove a finalizer. A finalizer removed right
// after a scan makes that scan the stale one, which agreed scans again.
func (e *teEnv) finalizerOwnerNotFound(t *testing.T) {
	const ns = "st-owner"
	for _, n := range []string{ns, "widgets-system", "agents"} {
		e.namespace(t, n)
	}
	// A kubebuilder controller (container and binary "manager") run as a StatefulSet, and a node
	// agent run as a DaemonSet on every node.
	e.statefulSet(t, "widgets-system", "widget-controller", "manager", "registry.example/widget-controller:1.4.0")
	e.daemonSet(t, "agents", "volume-janitor", "janitor", "registry.example/volume-janitor:0.9.0")

	pod := e.kwokPod(t, ns, "web-0", 30)
	e.addFinalizer(t, pod, "manager", "widgets.example.com/cleanup")
	e.addFinalizer(t, pod, "volume-janitor", "volumes.example.com/release")
	e.deletePod(t, ns, pod.Name)
	e.waitKubeletDone(t, ns, pod.Name)

	rep := e.scan(t, ns, 0) // warnings only: nothing reaches --fail-on error
	f := teFind(t, rep, "Pod", pod.Name)
	assertFinding(t, f, "finalizer-owner-not-acting", report.SeverityWarning,
		[]string{"finalizer widgets.example.com/cleanup: not in the known-finalizer table; added by field manager manager (metadata.managedFields); manager is the default binary name of many controllers",
			"finalizer volumes.example.com/release: not in the known-finalizer table; added by field manager volume-janitor",
			"named like the field manager: DaemonSet agents/volume-janitor: 1/1 available"}, nil)
	for _, other := range rep.Findings {
		if other.RootCause.ID == "finalizer-owner-missing" || len(other.Fixes) > 0 {
			t.Errorf("a finding claims an owner missing or offers a write: %s %s %v", other.RootCause.ID, other.Object, other.Fixes)
		}
	}
	// The verdict rests on the workloads of other namespaces (the DaemonSet in agents): why on
	// the pod reads every namespace's as Tables, and in full only the DaemonSet named like the
	// field manager volume-janitor ("manager" names no controller, so it is not searched for).
	_, _, log := whyInProcess(t, e.c, "pod", pod.Name, ns)
	workloadLists(t, log, ns, true, map[string][]string{"daemonsets": {"volume-janitor"}})

	// The janitor removes its finalizer between a scan and the why and capture that check it: the
	// scan is the stale one, so the check is made on a fresh scan, and that is the report the test
	// gets, and the run it reads.
	const released = "volumes.example.com/release"
	scanned := e.poll(t, ns)
	e.removeFinalizer(t, pod, "volume-janitor", released)
	rep, extra := scanned.agreedAfter()
	if extra < 1 {
		t.Errorf("agreed took no extra scan of a state that moved after the scan")
	}
	f = teFind(t, rep, "Pod", pod.Name)
	if all := strings.Join(f.RootCause.Evidence, "\n"); strings.Contains(all, released) || strings.Contains(scanned.stdout, released) ||
		!strings.Contains(all, "widgets.example.com/cleanup") {
		t.Errorf("the agreed report or run is not the fresh scan's:\n%s", all)
	}

	// The other owner does its cleanup and removes its finalizer: the deletion completes.
	e.removeFinalizer(t, pod, "manager", "widgets.example.com/cleanup")
	e.waitPodGone(t, ns, pod.Name, pod.UID)
}

// finalizerOwnerMissingEvidence: a Machine holds Cluster API's finalizer and no Cluster API
// controller is installed. With every namespace's workloads listed that is positive evidence,
// named in the finding, and the finalizer may be removed. A user whose credentials cannot list
// workloads cluster-wide gets no such verdict and a coverage note saying what was searched. A fix
// from a report saved before the Machine changed is refused.
func (e *teEnv) finalizerOwnerMissingEvidence(t *testing.T) {
	const ns = "st-owner-capi"
	e.namespace(t, ns)
	e.namespace(t, "capi-system")
	dyn := e.c.Dynamic().Resource(teMachines).Namespace(ns)
	m := orphanMachine(t, e.c, ns, "orphan-md-0")

	// carol may read only this namespace and capi-system: the cluster-wide workload lists are
	// refused, so she sees no owner-missing verdict, and coverage says where was searched.
	user := e.scanUserIn(t, "carol", ns, "capi-system")
	rep := e.scanAs(t, user, ns)
	f := teFind(t, rep, "Machine", m.GetName())
	assertFinding(t, f, "finalizer-owner-not-acting", report.SeverityWarning,
		[]string{"no Deployment capi-system/capi-controller-manager, no Deployment running image cluster-api-controller among"}, nil)
	noted := false
	for _, n := range rep.Coverage.Notes {
		noted = noted || (n.Check == teCheck && strings.Contains(n.Reason, "searched only in namespaces "+ns+", capi-system") &&
			strings.Contains(n.Reason, "forbidden: list apps/deployments in all namespaces"))
	}
	if !noted {
		t.Errorf("coverage notes %+v do not say the controller search was partial", rep.Coverage.Notes)
	}

	rep = e.scan(t, ns, 2)
	f = teFind(t, rep, "Machine", m.GetName())
	assertFinding(t, f, "finalizer-owner-missing", report.SeverityError,
		[]string{"not installed: no Deployment capi-system/capi-controller-manager, no Deployment running image cluster-api-controller " +
			"among the Deployments, StatefulSets and DaemonSets of all namespaces (listed in full)"},
		[]string{"remove-finalizer:machine.cluster.x-k8s.io"})
	saved := filepath.Join(t.TempDir(), "report.json")
	raw, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(saved, raw, 0o600); err != nil {
		t.Fatal(err)
	}

	// Someone touches the Machine after the report was saved: the saved fix is refused.
	if _, err := dyn.Patch(e.ctx, m.GetName(), types.MergePatchType, []byte(`{"metadata":{"annotations":{"example.com/touched":"yes"}}}`),
		metav1.PatchOptions{FieldManager: "kubectl-annotate"}); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := pluginOn(e.c.Kubeconfig).fix(t, "--from-report", saved, f.ID, "--yes", "-o", "json").out()
	if code != 3 || !strings.Contains(stdout, `"refused"`) {
		t.Fatalf("fix from a stale report: exit %d, want 3 with a refused action\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if still, err := dyn.Get(e.ctx, m.GetName(), metav1.GetOptions{}); err != nil || len(still.GetFinalizers()) != 1 {
		t.Fatalf("the refused fix changed the Machine: %v %v", still, err)
	}

	// A fresh fix removes the finalizer; the Machine goes.
	e.fix(t, ns, f.ID, 0, "applied")
	eventually(t, 30*time.Second, "Machine "+m.GetName()+" to be gone", func(ctx context.Context) (bool, error) {
		_, err := dyn.Get(ctx, m.GetName(), metav1.GetOptions{})
		return apierrors.IsNotFound(err), teIgnoreNotFound(err)
	})
}

// scanUserIn returns a kubeconfig of a user bound to the shipped scan role in the given
// namespaces only.
func (e *teEnv) scanUserIn(t *testing.T, user string, namespaces ...string) string {
	t.Helper()
	if out, errOut, code := runKubectl(t, e.c.Kubeconfig, "apply", "-f", filepath.Join(repoRoot(t), "deploy", "rbac", "scan.yaml")); code != 0 {
		t.Fatalf("kubectl apply scan.yaml: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, ns := range namespaces {
		if _, err := e.cs.RbacV1().RoleBindings(ns).Create(e.ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "workloaddoctor-scan-" + user, Namespace: ns},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "workloaddoctor-scan"},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
		}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	kc := e.c.UserKubeconfig(t, user)
	eventually(t, 30*time.Second, "the scan role to apply to "+user, func(context.Context) (bool, error) {
		out, _, code := runKubectl(t, kc, "auth", "can-i", "list", "deployments.apps", "-n", namespaces[0])
		return code == 0 && strings.TrimSpace(out) == "yes", nil
	})
	if out, _, _ := runKubectl(t, kc, "auth", "can-i", "list", "deployments.apps", "-A"); strings.TrimSpace(out) != "no" {
		t.Fatalf("%s may list deployments cluster-wide: %q", user, out)
	}
	return kc
}

// scanAs runs the scan with another kubeconfig; it accepts exit 0 or 2.
func (e *teEnv) scanAs(t *testing.T, kubeconfig, ns string) *report.Report {
	t.Helper()
	return pluginOn(kubeconfig).scan(t, "-n", ns, "--checks", teCheck, "-o", "json", "--min-age", "0s").wantFindingsOrNone().agreed()
}

// statefulSet creates a StatefulSet of one replica on the kwok node and waits until it is available.
func (e *teEnv) statefulSet(t *testing.T, ns, name, container, image string) {
	t.Helper()
	one := int32(1)
	labels := map[string]string{"app": name}
	spec := kwokPodSpec(30)
	spec.Containers = []corev1.Container{{Name: container, Image: image}}
	s := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: appsv1.StatefulSetSpec{Replicas: &one, ServiceName: name, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec}},
	}
	if _, err := e.cs.AppsV1().StatefulSets(ns).Create(e.ctx, s, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "StatefulSet "+ns+"/"+name+" available", func(ctx context.Context) (bool, error) {
		got, err := e.cs.AppsV1().StatefulSets(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && got.Status.AvailableReplicas == 1, err
	})
}

// daemonSet creates a DaemonSet on the kwok node and waits until its pod is available.
func (e *teEnv) daemonSet(t *testing.T, ns, name, container, image string) {
	t.Helper()
	labels := map[string]string{"app": name}
	spec := kwokPodSpec(30)
	spec.Containers = []corev1.Container{{Name: container, Image: image}}
	d := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec}},
	}
	if _, err := e.cs.AppsV1().DaemonSets(ns).Create(e.ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "DaemonSet "+ns+"/"+name+" available", func(ctx context.Context) (bool, error) {
		got, err := e.cs.AppsV1().DaemonSets(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && got.Status.NumberAvailable == 1, err
	})
}
