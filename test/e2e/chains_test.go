package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/scenario/kubelet"
	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/testcluster"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// Stuck deletions held by the built-in controllers' conditions, produced by the real controllers
// (kube-controller-manager's PVC and PV protection and garbage collector, the
// apiextensions-apiserver) on a control plane where kwok plays the kubelet of two nodes. kwok
// manages the nodes labelled kwok-group=alive: relabelling one takes it out of kwok's watch, so
// that node alone stops heartbeating, like a node whose kubelet died.

const (
	chLive = "kw-1"
	chDead = "kw-2"
)

func TestBlockingChains(t *testing.T) {
	stages := filepath.Join(t.TempDir(), "kwok-stages.yaml")
	if err := os.WriteFile(stages, []byte(kubelet.Stages), 0o600); err != nil {
		t.Fatal(err)
	}
	c := testcluster.Start(t, testcluster.Options{
		ControllerManager: true, Scheduler: true, NodeMonitorGracePeriod: 10 * time.Second,
		Kwok: &testcluster.KwokOptions{NodeLabelSelector: "kwok-group=alive", ExtraArgs: []string{"--config=" + stages}},
	})
	e := &teEnv{c: c, cs: c.Clientset(), ctx: t.Context()}
	for _, n := range []string{chLive, chDead} {
		node := kwokNode(n)
		node.Labels["kwok-group"] = "alive"
		if _, err := e.cs.CoreV1().Nodes().Create(e.ctx, node, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create node: %v", err)
		}
		waitNodeReady(t, e.cs, n, corev1.ConditionTrue)
	}
	t.Run("claim deleted while its pod runs", e.claimInUse)
	t.Run("foreground deletion held by a pod on a dead node", e.foregroundOnDeadNode)
	t.Run("why on one object", e.whyOneObject)
	t.Run("claim held by its pod Terminating on a dead node", e.claimOnDeadNode)
	t.Run("CRD held by an instance's finalizer", e.crdInstance)
	t.Run("load balancer Service no controller acts on", e.loadBalancerNobodyActs)
	t.Run("CloneSet pod deleted around its preDelete hook", e.kruiseHookBypassed)
}

// kruiseHookBypassed: a CloneSet with a preDelete hook finalizer, and its pod as kruise-manager
// v1.9.0 creates it (the template's finalizer, lifecycle state Normal, owned by the CloneSet),
// deleted directly with kubectl delete pod. kwok stops its containers; the finalizer stays.
func (e *teEnv) kruiseHookBypassed(t *testing.T) {
	const ns = "ch-kruise"
	e.namespace(t, ns)
	crds, err := testcluster.KruiseCRDFiles()
	if err != nil {
		t.Fatal(err)
	}
	e.c.InstallCRDs(t, crds...)
	labels := map[string]any{"app": "cart"}
	cs := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
		"metadata": map[string]any{"name": "cart", "namespace": ns},
		"spec": map[string]any{"replicas": int64(1), "selector": map[string]any{"matchLabels": labels},
			"lifecycle": map[string]any{"preDelete": map[string]any{"finalizersHandler": []any{"example.com/unregister"}}},
			"template": map[string]any{"metadata": map[string]any{"labels": labels, "finalizers": []any{"example.com/unregister"}},
				"spec": map[string]any{"containers": []any{map[string]any{"name": "app", "image": "registry.example/app:1.0"}}}}}}}
	created, err := e.c.Dynamic().Resource(kruise.CloneSets).Namespace(ns).Create(e.ctx, cs, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	yes := true
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cart-x8k2q", Finalizers: []string{"example.com/unregister"},
		Labels: map[string]string{"app": "cart", "lifecycle.apps.kruise.io/state": "Normal", "apps.kruise.io/cloneset-instance-id": "x8k2q"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "cart", UID: created.GetUID(),
			Controller: &yes, BlockOwnerDeletion: &yes}}}, Spec: chPodSpec(chLive, 3)}
	if _, err := e.cs.CoreV1().Pods(ns).Create(e.ctx, p, metav1.CreateOptions{FieldManager: "kruise-manager"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "pod running", func(ctx context.Context) (bool, error) {
		got, err := e.cs.CoreV1().Pods(ns).Get(ctx, p.Name, metav1.GetOptions{})
		return err == nil && got.Status.Phase == corev1.PodRunning, err
	})
	e.deletePod(t, ns, p.Name)
	var run *pluginRun
	eventually(t, 60*time.Second, "the kruise-hook-bypassed finding", func(ctx context.Context) (bool, error) {
		run = e.pollAll(t)
		for _, g := range run.report().Findings {
			if g.Object.Name == p.Name && g.RootCause.ID == "kruise-hook-bypassed" {
				return true, nil
			}
		}
		return false, nil
	})
	assertFinding(t, teFind(t, run.agreed(), "Pod", p.Name), "kruise-hook-bypassed", report.SeverityWarning,
		[]string{"CloneSet ch-kruise/cart spec.lifecycle.preDelete.finalizersHandler lists example.com/unregister", "apps.kruise.io/specified-delete"}, nil)
}

// loadBalancerNobodyActs: a LoadBalancer Service carrying the cleanup finalizer (as a
// cloud-controller-manager since uninstalled left it) deleted on a cluster that runs none.
func (e *teEnv) loadBalancerNobodyActs(t *testing.T) {
	const ns = "ch-lb"
	e.namespace(t, ns)
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop-lb", Finalizers: []string{"service.kubernetes.io/load-balancer-cleanup"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80}}}}
	if _, err := e.cs.CoreV1().Services(ns).Create(e.ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := e.cs.CoreV1().Services(ns).Delete(e.ctx, svc.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f := teFind(t, e.scanAll(t), "Service", "shop-lb")
	assertFinding(t, f, "finalizer-owner-not-acting", report.SeverityWarning,
		[]string{"may run no cloud-controller-manager", "status.loadBalancer.ingress []"}, nil)
	if !strings.Contains(f.Summary, "no service controller ever acted") {
		t.Errorf("summary %q", f.Summary)
	}
}

// claimInUse: a PV and its claim deleted while a Running pod on a healthy node mounts the claim.
// The claim waits for the pod (not stuck: no write), the volume waits for the claim.
func (e *teEnv) claimInUse(t *testing.T) {
	const ns = "ch-claim"
	e.namespace(t, ns)
	pv := e.boundClaim(t, ns, "data")
	// A second claim, used by a pod on the node that dies next: see claimOnDeadNode.
	e.boundClaim(t, ns, "logs")
	e.podOn(t, ns, "batch-0", chDead, corev1.Volume{Name: "logs", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "logs"}}})
	e.podOn(t, ns, "db-0", chLive, corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}})
	if err := e.cs.CoreV1().PersistentVolumeClaims(ns).Delete(e.ctx, "data", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := e.cs.CoreV1().PersistentVolumes().Delete(e.ctx, pv.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	rep := e.scanAll(t)
	claim := teFind(t, rep, "PersistentVolumeClaim", "data")
	assertFinding(t, claim, "protected-resource-in-use", report.SeverityWarning,
		[]string{"used by: pod ch-claim/db-0, Running on node kw-1 (node Ready)", "kubernetes.io/pvc-protection"}, nil)
	if len(claim.BlockedBy) != 0 {
		t.Errorf("the claim waits on a healthy pod, nothing stuck: blockedBy %v", claim.BlockedBy)
	}
	vol := teFind(t, rep, "PersistentVolume", pv.Name)
	assertFinding(t, vol, "protected-resource-in-use", report.SeverityWarning, []string{"status.phase Bound, claimRef ch-claim/data"}, nil)
	assertBlockedBy(t, vol, claim.ID, "PersistentVolumeClaim/data")
	assertNoProtectionRemoval(t, rep)

	// why on the cluster-scoped volume gives the scan's verdict and its chain, reading the claim's
	// namespace (claimRef, where the PV protection controller's condition leads: kubernetes
	// pkg/controller/volume/pvprotection/pv_protection_controller.go, isBeingUsed) and the volumes.
	whyAgreesWithScan(t, pluginOn(e.c.Kubeconfig), rep, vol, "--checks", teCheck, "--min-age", "0s")
	if res, _, _ := whyInProcess(t, e.c, "pv", pv.Name, ""); res.Namespace != ns || len(res.Report.Findings) == 0 || res.Report.Findings[0].ID != vol.ID {
		t.Errorf("why pv/%s in process: namespace %q, findings %v; want %s and the volume's finding first", pv.Name, res.Namespace, summaries(res.Report), ns)
	}
	if _, err := e.cs.CoreV1().PersistentVolumeClaims(ns).Get(e.ctx, "data", metav1.GetOptions{}); err != nil {
		t.Errorf("the claim a running pod uses must still be there: %v", err)
	}
}

// foregroundOnDeadNode: a Deployment whose pod runs on kw-2, kw-2's kubelet dies, then the
// Deployment is deleted with foreground propagation: the garbage collector deletes the ReplicaSet
// (foreground too) and the pod, which no kubelet confirms.
func (e *teEnv) foregroundOnDeadNode(t *testing.T) {
	const ns = "ch-fg"
	e.namespace(t, ns)
	one, grace := int32(1), int64(3)
	labels := map[string]string{"app": "web"}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: appsv1.DeploymentSpec{
		Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: chPodSpec(chDead, grace)},
	}}
	if _, err := e.cs.AppsV1().Deployments(ns).Create(e.ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 90*time.Second, "deployment web available", func(ctx context.Context) (bool, error) {
		got, err := e.cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		return err == nil && got.Status.AvailableReplicas == 1, err
	})
	patch := []byte(`{"metadata":{"labels":{"kwok-group":"dead"}}}`)
	if _, err := e.cs.CoreV1().Nodes().Patch(e.ctx, chDead, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	waitNodeReady(t, e.cs, chDead, corev1.ConditionUnknown)
	fg := metav1.DeletePropagationForeground
	if err := e.cs.AppsV1().Deployments(ns).Delete(e.ctx, "web", metav1.DeleteOptions{PropagationPolicy: &fg}); err != nil {
		t.Fatal(err)
	}

	var run *pluginRun
	var rep *report.Report
	eventually(t, 90*time.Second, "the pod's node-not-ready finding and the ReplicaSet deleted", func(ctx context.Context) (bool, error) {
		run = e.pollAll(t)
		rep = run.report()
		var pod, rs bool
		for _, f := range rep.Findings {
			pod = pod || f.Object.Namespace == ns && f.Object.Kind == "Pod" && f.RootCause.ID == "node-not-ready"
			rs = rs || f.Object.Namespace == ns && f.Object.Kind == "ReplicaSet"
		}
		return pod && rs, nil
	})
	rep = run.agreed()
	var pod report.Finding
	for _, f := range rep.Findings {
		if f.Object.Namespace == ns && f.Object.Kind == "Pod" {
			pod = f
		}
	}
	assertFinding(t, pod, "node-not-ready", report.SeverityError, []string{"node " + chDead}, []string{"force-delete"})
	dep := teFind(t, rep, "Deployment", "web")
	assertFinding(t, dep, "dependents-remaining", report.SeverityWarning, []string{"dependent: replicaset ch-fg/web-", "foregroundDeletion"}, nil)
	var rs report.Finding
	for _, f := range rep.Findings {
		if f.Object.Namespace == ns && f.Object.Kind == "ReplicaSet" {
			rs = f
		}
	}
	assertFinding(t, rs, "dependents-remaining", report.SeverityWarning, []string{"dependent: pod ch-fg/" + pod.Object.Name + ", Terminating"}, nil)
	assertBlockedBy(t, rs, pod.ID, "Pod/"+pod.Object.Name)
	assertBlockedBy(t, dep, pod.ID, "ReplicaSet/"+rs.Object.Name, "Pod/"+pod.Object.Name)
	if !strings.Contains(dep.Summary, "root: pod ch-fg/"+pod.Object.Name+", Terminating") || !strings.Contains(dep.Summary, "node "+chDead) {
		t.Errorf("deployment summary %q does not name the root pod on %s", dep.Summary, chDead)
	}
	assertNoProtectionRemoval(t, rep)

	// why on each object of the chain gives the scan's verdicts and IDs (run.agreed above); on the
	// Deployment it draws the chain down to the pod, whose finding carries the fix.
	p := pluginOn(e.c.Kubeconfig)
	whyDep := whyAgreesWithScan(t, p, rep, dep, "--checks", teCheck, "--min-age", "0s")
	whyReadsNodeByName(t, e, pod.Object.Name, ns, chDead)
	tree := p.why(t, "deploy/web", "-n", ns, "--checks", teCheck, "--min-age", "0s").wantExit(2).stdout
	t.Logf("why deploy/web -n %s:\n%s", ns, tree)
	for _, want := range []string{"ch-fg/deployment/web", "└─ ch-fg/replicaset/" + rs.Object.Name, "   └─ ch-fg/pod/" + pod.Object.Name,
		"ROOT CAUSE node-not-ready [" + pod.ID + ", fix force-delete]", "kubectl workloaddoctor fix -n ch-fg " + pod.ID} {
		if !strings.Contains(tree, want) {
			t.Errorf("why deploy/web: no %q in\n%s", want, tree)
		}
	}

	table, stderr, code := pluginOn(e.c.Kubeconfig).scan(t, "-n", ns, "--checks", teCheck, "--min-age", "0s").out()
	if code != 2 || strings.Count(table, "dependents-remaining") != 0 || !strings.Contains(table, "also holds ch-fg/deployment/web") {
		t.Errorf("table: exit %d, want 2 and the chain folded under the pod's row:\n%s\n%s", code, table, stderr)
	}

	// fix on the Deployment's finding, by the ID why printed, applies the root's fix: the pod is
	// force-deleted, then the garbage collector finishes the ReplicaSet and the Deployment on its own.
	// why --watch on the Deployment, started before the fix, follows the chain as it clears and
	// ends by itself once the Deployment is gone.
	watch := p.start(t, "why", "deploy/web", "-n", ns, "--watch", "--checks", teCheck, "--min-age", "0s")
	e.fix(t, ns, whyDep.Findings[0].ID, 0, "applied")
	eventually(t, 60*time.Second, "the deployment gone", func(ctx context.Context) (bool, error) {
		_, err := e.cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
		return apierrors.IsNotFound(err), teIgnoreNotFound(err)
	})
	watched := watch.wait().wantExit(0)
	if !strings.HasPrefix(watched.stdout, "OBJECT") || !strings.HasSuffix(watched.stdout, "deployments.apps \"web\" in namespace \"ch-fg\" is gone.\n") {
		t.Errorf("why --watch: want the tree, then the Deployment gone:\n%s", watched.stdout)
	}
	t.Logf("why --watch deploy/web:\n%s", watched.stdout)
}

var chGadgets = schema.GroupVersionResource{Group: "example.org", Version: "v1", Resource: "gadgets"}

// crdInstance: a CRD deleted while an instance holds a finalizer nobody removes.
func (e *teEnv) crdInstance(t *testing.T) {
	const ns = "ch-crd"
	e.namespace(t, ns)
	installLooseCRD(t, e.c, "example.org", "Gadget", "gadgets")
	g := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.org/v1", "kind": "Gadget",
		"metadata": map[string]any{"name": "g1", "finalizers": []any{"example.org/hold"}}}}
	if _, err := e.c.Dynamic().Resource(chGadgets).Namespace(ns).Create(e.ctx, g, metav1.CreateOptions{FieldManager: "gadget-operator"}); err != nil {
		t.Fatal(err)
	}
	crds := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	if err := e.c.Dynamic().Resource(crds).Delete(e.ctx, "gadgets.example.org", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var run *pluginRun
	var rep *report.Report
	eventually(t, 60*time.Second, "the CRD's finding", func(ctx context.Context) (bool, error) {
		run = e.pollAll(t)
		rep = run.report()
		for _, f := range rep.Findings {
			if f.Object.Kind == "CustomResourceDefinition" && f.RootCause.ID == "dependents-remaining" {
				return true, nil
			}
		}
		return false, nil
	})
	rep = run.agreed()
	f := teFind(t, rep, "CustomResourceDefinition", "gadgets.example.org")
	assertFinding(t, f, "dependents-remaining", report.SeverityWarning,
		[]string{"instance: gadget ch-crd/g1, Deleting, finalizers [example.org/hold]", "customresourcecleanup.apiextensions.k8s.io"}, nil)
	inst := teFind(t, rep, "Gadget", "g1")
	assertBlockedBy(t, f, inst.ID, "Gadget/g1")
	assertNoProtectionRemoval(t, rep)

	// why on the definition finds its instances being deleted with one list (apiextensions-apiserver
	// pkg/controller/finalizer/crd_finalizer.go, sync: the finalizer waits for every instance) and
	// diagnoses them on their namespace's scan: the scan's verdicts, down to the instance's.
	whyAgreesWithScan(t, pluginOn(e.c.Kubeconfig), rep, f, "--checks", teCheck, "--min-age", "0s")
	if res, _, _ := whyInProcess(t, e.c, "crd", f.Object.Name, ""); res.Namespace != ns || len(res.Report.Findings) != 2 {
		t.Errorf("why crd/%s in process: namespace %q, findings %v; want %s, the definition's and the instance's", f.Object.Name, res.Namespace, summaries(res.Report), ns)
	}
}

// claimOnDeadNode: the claim "logs" and its pod batch-0 (made by claimInUse on kw-2, which
// foregroundOnDeadNode killed) are deleted. The pod waits for a kubelet that is gone, the claim
// for the pod: fixing the claim's finding force-deletes the pod, and the claim then goes.
func (e *teEnv) claimOnDeadNode(t *testing.T) {
	const ns = "ch-claim"
	e.deletePod(t, ns, "batch-0")
	if err := e.cs.CoreV1().PersistentVolumeClaims(ns).Delete(e.ctx, "logs", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	var run *pluginRun
	var rep *report.Report
	eventually(t, 60*time.Second, "the pod's node-not-ready finding", func(ctx context.Context) (bool, error) {
		run = e.pollAll(t)
		rep = run.report()
		for _, f := range rep.Findings {
			if f.Object.Name == "batch-0" && f.RootCause.ID == "node-not-ready" {
				return true, nil
			}
		}
		return false, nil
	})
	rep = run.agreed()
	pod := teFind(t, rep, "Pod", "batch-0")
	claim := teFind(t, rep, "PersistentVolumeClaim", "logs")
	assertFinding(t, claim, "protected-resource-in-use", report.SeverityWarning,
		[]string{"used by: pod ch-claim/batch-0, Terminating for", "on node kw-2, which stopped heartbeating"}, nil)
	assertBlockedBy(t, claim, pod.ID, "Pod/batch-0")
	assertNoProtectionRemoval(t, rep)

	e.fix(t, ns, claim.ID, 0, "applied")
	eventually(t, 60*time.Second, "the claim gone", func(ctx context.Context) (bool, error) {
		_, err := e.cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "logs", metav1.GetOptions{})
		return apierrors.IsNotFound(err), teIgnoreNotFound(err)
	})
}
