package e2e

import (
	"context"
	"encoding/json"
	"fmt"
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
	"k8s.io/client-go/kubernetes"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/scenario"
	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/scenario/kubelet"
	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/testcluster"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/fix"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// The stuck-terminating check on a living cluster: apiserver, kube-controller-manager (its
// namespace, node lifecycle, garbage collector and PodGC controllers), scheduler and kwok v0.7
// playing the kubelet of a fake node. Each stuck state is produced the way it arises for real;
// the plugin binary scans and fixes it.
//
// kwok runs with pod stages the project writes: kwok before v0.8 clears every finalizer when it
// deletes a pod (docs/domain.md, "KWOK"), which no kubelet does. These stages behave like a kubelet:
// a pod being deleted is deleted with grace period 0 once "its containers stopped", and any
// finalizer stays for its owner to remove.

const (
	teCheck    = "stuck-terminating"
	teKwokNode = "kwok-node-0"
)

// teEnv is the cluster the scenarios share.
type teEnv struct {
	c   *testcluster.Cluster
	cs  kubernetes.Interface
	ctx context.Context
}

func TestStuckTerminating(t *testing.T) {
	stages := filepath.Join(t.TempDir(), "kwok-stages.yaml")
	if err := os.WriteFile(stages, []byte(kubelet.Stages), 0o600); err != nil {
		t.Fatal(err)
	}
	c := testcluster.Start(t, testcluster.Options{
		ControllerManager: true,
		Scheduler:         true,
		Kwok: &testcluster.KwokOptions{
			NodeAnnotationSelector: "kwok.x-k8s.io/node=fake",
			ExtraArgs:              []string{"--config=" + stages},
		},
		NodeMonitorGracePeriod: 10 * time.Second,
	})
	crds, err := testcluster.CRDDir()
	if err != nil {
		t.Fatal(err)
	}
	c.InstallCRDs(t, filepath.Join(crds, "cluster.x-k8s.io_clusters.yaml"), filepath.Join(crds, "cluster.x-k8s.io_machines.yaml"))
	e := &teEnv{c: c, cs: c.Clientset(), ctx: t.Context()}
	if _, err := e.cs.CoreV1().Nodes().Create(e.ctx, kwokNode(teKwokNode), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create node: %v", err)
	}
	waitNodeReady(t, e.cs, teKwokNode, corev1.ConditionTrue)

	// Sequential: the last two change the whole cluster (an APIService that breaks discovery,
	// kwok stopped).
	t.Run("finalizer owner not found: field managers are binary names", e.finalizerOwnerNotFound)
	t.Run("finalizer owner missing only on positive evidence", e.finalizerOwnerMissingEvidence)
	t.Run("custom resource found through discovery", e.customResource)
	t.Run("operator uninstalled before its custom resources", e.operatorUninstalled)
	t.Run("a webhook whose Service is gone rejects the finalizer's removal", e.webhookBlocksRemoval)
	t.Run("cluster api paused and re-add race", e.clusterAPI)
	t.Run("kwok stage not run", e.kwokStageNotRun)
	t.Run("a workstation clock ahead ages nothing", e.clockAhead)
	t.Run("namespace blocked by an unavailable APIService", e.namespaceDiscovery)
	t.Run("node not ready", e.nodeNotReady)
}

// ---- scenarios ----

var teWidgets = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}

// customResource: a CRD made here, a custom resource with a finalizer whose controller is not
// found, deleted; the objects input finds it through discovery. Its field manager names no
// workload, which proves nothing, so no fix is offered. Deleting its namespace then waits on it.
func (e *teEnv) customResource(t *testing.T) {
	const ns = "st-crd"
	e.namespace(t, ns)
	installLooseCRD(t, e.c, "example.com", "Widget", "widgets")
	dyn := e.c.Dynamic().Resource(teWidgets).Namespace(ns)
	w := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": "w1", "finalizers": []any{"example.com/protect"}},
		"spec":     map[string]any{"size": int64(3)},
	}}
	// The widget operator creates its objects with its finalizer.
	created, err := dyn.Create(e.ctx, w, metav1.CreateOptions{FieldManager: "widget-operator"})
	if err != nil {
		t.Fatal(err)
	}
	if err := dyn.Delete(e.ctx, "w1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}

	rep := e.scan(t, ns, 0)
	f := teFind(t, rep, "Widget", "w1")
	assertFinding(t, f, "finalizer-owner-not-acting", report.SeverityWarning,
		[]string{"finalizer example.com/protect: not in the known-finalizer table; added by field manager widget-operator",
			"no workload named widget-operator or with a container so named among the Deployments, StatefulSets and DaemonSets of all namespaces"},
		nil)
	if f.Object.APIVersion != "example.com/v1" || f.Object.UID != string(created.GetUID()) {
		t.Errorf("finding object = %+v", f.Object)
	}

	// The namespace controller deletes what it can and reports what stays.
	if err := e.cs.CoreV1().Namespaces().Delete(e.ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitNamespaceCondition(t, ns, corev1.NamespaceFinalizersRemaining)
	rep = e.scan(t, ns, 0)
	nf := teFind(t, rep, "Namespace", ns)
	assertFinding(t, nf, "namespace-content-remaining", report.SeverityWarning,
		[]string{"remaining: widgets.example.com (1)", "held by finalizers: example.com/protect (1)",
			"objects being deleted in the namespace: Widget w1 [example.com/protect]"}, nil)

	// The widget operator comes back and removes its finalizer; the widget and then the namespace go.
	if _, err := dyn.Patch(e.ctx, "w1", types.JSONPatchType, []byte(`[{"op":"remove","path":"/metadata/finalizers/0"}]`),
		metav1.PatchOptions{FieldManager: "widget-operator"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "widget w1 to be gone", func(ctx context.Context) (bool, error) {
		_, err := dyn.Get(ctx, "w1", metav1.GetOptions{})
		return apierrors.IsNotFound(err), teIgnoreNotFound(err)
	})
	eventually(t, 2*time.Minute, "namespace "+ns+" to be gone", func(ctx context.Context) (bool, error) {
		_, err := e.cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err), teIgnoreNotFound(err)
	})
}

var (
	teMachines = schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta1", Resource: "machines"}
	teClusters = schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta1", Resource: "clusters"}
)

// clusterAPI: a Machine of a Cluster paused by a clusterctl move is deleted; a Machine of an
// unpaused Cluster is deleted while a controller keeps trying to add a finalizer to it.
func (e *teEnv) clusterAPI(t *testing.T) {
	const ns = "st-capi"
	e.namespace(t, ns)
	dyn := e.c.Dynamic()
	for _, cl := range []struct {
		name   string
		paused bool
	}{{"prod", true}, {"staging", false}} {
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Cluster",
			"metadata": map[string]any{"name": cl.name, "namespace": ns},
			"spec":     map[string]any{"paused": cl.paused, "controlPlaneEndpoint": map[string]any{"host": "10.0.0.10", "port": int64(6443)}},
		}}
		if _, err := dyn.Resource(teClusters).Namespace(ns).Create(e.ctx, obj, metav1.CreateOptions{FieldManager: "clusterctl"}); err != nil {
			t.Fatal(err)
		}
	}
	machine := func(name, cluster string, annotations map[string]any) *unstructured.Unstructured {
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Machine",
			"metadata": map[string]any{"name": name, "namespace": ns, "annotations": annotations,
				"labels": map[string]any{"cluster.x-k8s.io/cluster-name": cluster}},
			"spec": map[string]any{"clusterName": cluster, "bootstrap": map[string]any{"dataSecretName": name + "-bootstrap"}},
		}}
		// clusterctl move creates it; the machine controller ("manager") adds its finalizer.
		if _, err := dyn.Resource(teMachines).Namespace(ns).Create(e.ctx, obj, metav1.CreateOptions{FieldManager: "clusterctl"}); err != nil {
			t.Fatal(err)
		}
		got, err := dyn.Resource(teMachines).Namespace(ns).Patch(e.ctx, name, types.MergePatchType,
			[]byte(`{"metadata":{"finalizers":["machine.cluster.x-k8s.io"]}}`), metav1.PatchOptions{FieldManager: "manager"})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	paused := machine("prod-cp-0", "prod", map[string]any{"clusterctl.cluster.x-k8s.io/delete-for-move": ""})
	racing := machine("staging-md-0", "staging", nil)
	for _, m := range []*unstructured.Unstructured{paused, racing} {
		if err := dyn.Resource(teMachines).Namespace(ns).Delete(e.ctx, m.GetName(), metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// A provider controller that missed the deletion adds its finalizer; the apiserver refuses
	// with 422, and the controller records that as a Warning event on every retry.
	live, err := dyn.Resource(teMachines).Namespace(ns).Get(e.ctx, racing.GetName(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	live.SetFinalizers(append(live.GetFinalizers(), "infrastructure.cluster.x-k8s.io/provider-cleanup"))
	_, err = dyn.Resource(teMachines).Namespace(ns).Update(e.ctx, live, metav1.UpdateOptions{FieldManager: "provider-manager"})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "no new finalizers can be added if the object is being deleted") {
		t.Fatalf("adding a finalizer to a Machine being deleted: %v, want the apiserver's 422", err)
	}
	now := metav1.Now()
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s.%x", racing.GetName(), now.UnixNano())},
		InvolvedObject: corev1.ObjectReference{APIVersion: "cluster.x-k8s.io/v1beta1", Kind: "Machine", Namespace: ns,
			Name: racing.GetName(), UID: racing.GetUID(), ResourceVersion: live.GetResourceVersion()},
		Type: corev1.EventTypeWarning, Reason: "ReconcileError", Message: err.Error(), Count: 6,
		Source:         corev1.EventSource{Component: "provider-manager"},
		FirstTimestamp: metav1.NewTime(now.Add(-3 * time.Minute)), LastTimestamp: now,
	}
	if _, err := e.cs.CoreV1().Events(ns).Create(e.ctx, ev, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	rep := e.scan(t, ns, 2)
	f := teFind(t, rep, "Machine", paused.GetName())
	assertFinding(t, f, "owner-paused", report.SeverityWarning,
		[]string{"Cluster st-capi/prod: spec.paused=true", "clusterctl.cluster.x-k8s.io/delete-for-move",
			"finalizer machine.cluster.x-k8s.io: owner Cluster API controller (known-finalizer table)"}, nil)
	f = teFind(t, rep, "Machine", racing.GetName())
	assertFinding(t, f, "finalizer-readd-race", report.SeverityError,
		[]string{"6 Warning event(s) ReconcileError from provider-manager", "no new finalizers can be added if the object is being deleted"},
		[]string{"remove-finalizer:machine.cluster.x-k8s.io"})
	if !strings.Contains(strings.Join(f.RootCause.References, ","), "kubernetes-sigs/cluster-api#11812") {
		t.Errorf("references %v lack kubernetes-sigs/cluster-api#11812", f.RootCause.References)
	}
	for _, other := range rep.Findings {
		if other.Object.Kind == "Cluster" {
			t.Errorf("a Cluster that is not being deleted was reported: %+v", other)
		}
	}
}

// kwokStageNotRun: the cluster's kwok controller Deployment runs v0.5.0; a pod on its node still
// holds kwok's finalizer after deletion.
func (e *teEnv) kwokStageNotRun(t *testing.T) {
	const ns = "st-kwok"
	e.namespace(t, ns)
	// kwok's shipped manifest: kube-system/kwok-controller, its configuration from a file.
	e.deployment(t, "kube-system", "kwok-controller", "kwok-controller", "registry.k8s.io/kwok/kwok:v0.5.0",
		"--config=/root/.kwok/kwok.yaml", "--node-ip=$(POD_IP)")
	pod := e.kwokPod(t, ns, "sim-0", 30)
	// kwok v0.5's pod stages add its finalizer to the pods they start.
	e.addFinalizer(t, pod, "kwok", "kwok.x-k8s.io/fake")
	e.deletePod(t, ns, pod.Name)
	e.waitKubeletDone(t, ns, pod.Name)

	rep := e.scan(t, ns, 2)
	f := teFind(t, rep, "Pod", pod.Name)
	assertFinding(t, f, "kwok-stage-not-run", report.SeverityError,
		[]string{"finalizer kwok.x-k8s.io/fake is still on the pod (added by field manager kwok)",
			"node kwok-node-0 has annotation kwok.x-k8s.io/node=fake",
			"kwok controller: Deployment kube-system/kwok-controller: 1/1 available, image registry.k8s.io/kwok/kwok:v0.5.0",
			"kwok v0.5.0 is in the range of kubernetes-sigs/kwok#958"},
		[]string{"remove-finalizer:kwok.x-k8s.io/fake"})
	if !strings.Contains(strings.Join(f.RootCause.References, ","), "kubernetes-sigs/kwok#958") ||
		!strings.Contains(f.RootCause.Message, "kubernetes-sigs/kwok#958") {
		t.Errorf("finding does not name kubernetes-sigs/kwok#958: %s %v", f.RootCause.Message, f.RootCause.References)
	}
	e.fix(t, ns, f.ID, 0, "applied")
	e.waitPodGone(t, ns, pod.Name, pod.UID)
}

// namespaceDiscovery: an APIService points at a Service that does not exist; a namespace deleted
// meanwhile stays Terminating until the APIService goes.
func (e *teEnv) namespaceDiscovery(t *testing.T) {
	const ns = "st-blocked"
	const svcName = "v1alpha1.wd-e2e.example"
	svc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": svcName},
		"spec": map[string]any{"group": "wd-e2e.example", "version": "v1alpha1", "groupPriorityMinimum": int64(1000),
			"versionPriority": int64(15), "insecureSkipTLSVerify": true,
			"service": map[string]any{"namespace": "default", "name": "wd-missing-api", "port": int64(443)}},
	}}
	dyn := e.c.Dynamic().Resource(apiServices)
	if _, err := dyn.Create(e.ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	removed := false
	removeAPIService := func() {
		if removed {
			return
		}
		removed = true
		if err := dyn.Delete(context.Background(), svcName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete APIService %s: %v", svcName, err)
		}
	}
	t.Cleanup(removeAPIService) // it blocks every namespace deletion in the cluster
	eventually(t, 60*time.Second, "APIService "+svcName+" to be unavailable", func(ctx context.Context) (bool, error) {
		got, err := dyn.Get(ctx, svcName, metav1.GetOptions{})
		return err == nil && scenario.APIServiceUnavailable(got), err
	})

	e.namespace(t, ns)
	if err := e.cs.CoreV1().Namespaces().Delete(e.ctx, ns, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitNamespaceCondition(t, ns, corev1.NamespaceDeletionDiscoveryFailure)

	rep := e.scan(t, ns, 2)
	f := teFind(t, rep, "Namespace", ns)
	assertFinding(t, f, "namespace-discovery-failed", report.SeverityError,
		[]string{"condition NamespaceDeletionDiscoveryFailure=True (DiscoveryFailed)", "wd-e2e.example/v1alpha1",
			"APIService v1alpha1.wd-e2e.example: calls Service default/wd-missing-api port 443", "Service default/wd-missing-api: not found",
			"recent failure: Available=False (ServiceNotFound)",
			"APIService v1alpha1.wd-e2e.example: unavailable, Service default/wd-missing-api does not exist; its group/version wd-e2e.example/v1alpha1 is named by the condition",
			"1 Terminating namespace(s) in scope whose discovery fails on wd-e2e.example/v1alpha1: " + ns}, nil)
	if len(f.BlockedBy) != 1 || f.BlockedBy[0].Kind != "APIService" || f.BlockedBy[0].Name != svcName || len(f.Fixes) != 0 {
		t.Errorf("blockedBy %+v fixes %+v, want the APIService and no fix", f.BlockedBy, f.Fixes)
	}
	if !strings.Contains(f.Summary, svcName) {
		t.Errorf("summary %q does not name the APIService", f.Summary)
	}
	// The broken API also hides resources from the scan itself: coverage says so.
	degraded := false
	for _, n := range rep.Coverage.Degraded {
		degraded = degraded || (n.Check == teCheck && strings.Contains(n.Reason, "wd-e2e.example/v1alpha1"))
	}
	if !degraded || rep.Coverage.Complete {
		t.Errorf("coverage does not say discovery failed: %+v", rep.Coverage)
	}

	// The APIService was the only blocker: without it the namespace goes.
	removeAPIService()
	eventually(t, 3*time.Minute, "namespace "+ns+" to be gone", func(ctx context.Context) (bool, error) {
		_, err := e.cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		return apierrors.IsNotFound(err), teIgnoreNotFound(err)
	})
}

// nodeNotReady: kwok stops, as a dead kubelet would; its node goes NotReady and two pods deleted
// then stay Terminating. The table folds them into one line per node; fix force-deletes both.
func (e *teEnv) nodeNotReady(t *testing.T) {
	const ns = "st-node"
	e.namespace(t, ns)
	pods := []*corev1.Pod{e.kwokPod(t, ns, "api-0", 3), e.kwokPod(t, ns, "api-1", 3)}

	e.c.StopKwok(t)
	waitNodeReady(t, e.cs, teKwokNode, corev1.ConditionUnknown)
	for _, p := range pods {
		e.deletePod(t, ns, p.Name)
	}

	// The pods' grace period (3s) runs out, then nothing finishes the deletion.
	var run *pluginRun
	var rep *report.Report
	eventually(t, 60*time.Second, "node-not-ready findings for both pods", func(ctx context.Context) (bool, error) {
		run = e.poll(t, ns)
		rep = run.report()
		n := 0
		for _, f := range rep.Findings {
			if f.Check == teCheck && f.RootCause.ID == "node-not-ready" {
				n++
			}
		}
		return n == 2, nil
	})
	rep = run.agreed()
	var ids []string
	for _, p := range pods {
		f := teFind(t, rep, "Pod", p.Name)
		assertFinding(t, f, "node-not-ready", report.SeverityError,
			[]string{"node kwok-node-0 Ready=Unknown", "NodeStatusUnknown", "Lease kube-node-lease/kwok-node-0 last renewed",
				"taints: kwok.x-k8s.io/node=fake:NoSchedule, node.kubernetes.io/unreachable:", "deletionGracePeriodSeconds 3"},
			[]string{"force-delete"})
		if f.Node != teKwokNode || f.Fixes[0].Risk != report.RiskMedium {
			t.Errorf("finding node %q, force-delete risk %s; want %s, medium", f.Node, f.Fixes[0].Risk, teKwokNode)
		}
		ids = append(ids, f.ID)
	}

	table, stderr, code := pluginOn(e.c.Kubeconfig).scan(t, "-n", ns, "--checks", teCheck, "--min-age", "0s").out()
	if code != 2 || !strings.Contains(table, "2 pods on node/"+teKwokNode) || strings.Contains(table, "pod/api-0") {
		t.Errorf("table: exit %d, want 2 and one line for both pods on %s:\n%s\n%s", code, teKwokNode, table, stderr)
	}

	e.fix(t, ns, strings.Join(ids, " "), 0, "applied", "applied")
	for _, p := range pods {
		e.waitPodGone(t, ns, p.Name, p.UID)
	}
}

// ---- building the cluster state ----

func (e *teEnv) namespace(t *testing.T, name string) {
	t.Helper()
	_, err := e.cs.CoreV1().Namespaces().Create(e.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// kwokPodSpec runs on the kwok node, like the pods kwok's documentation creates.
func kwokPodSpec(grace int64) corev1.PodSpec {
	return corev1.PodSpec{
		NodeSelector:                  map[string]string{"type": "kwok"},
		Tolerations:                   []corev1.Toleration{{Key: "kwok.x-k8s.io/node", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
		TerminationGracePeriodSeconds: &grace,
		Containers:                    []corev1.Container{{Name: "app", Image: "registry.example/app:1.0"}},
	}
}

// kwokPod creates a pod the scheduler puts on the kwok node and waits until kwok runs it.
func (e *teEnv) kwokPod(t *testing.T, ns, name string, grace int64) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": name}}, Spec: kwokPodSpec(grace)}
	if _, err := e.cs.CoreV1().Pods(ns).Create(e.ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var got *corev1.Pod
	eventually(t, 60*time.Second, "pod "+ns+"/"+name+" running on "+teKwokNode, func(ctx context.Context) (bool, error) {
		var err error
		got, err = e.cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && got.Spec.NodeName == teKwokNode && got.Status.Phase == corev1.PodRunning, err
	})
	return got
}

// deployment creates a Deployment of one replica on the kwok node and waits until it is available.
func (e *teEnv) deployment(t *testing.T, ns, name, container, image string, args ...string) {
	t.Helper()
	one := int32(1)
	labels := map[string]string{"app": name}
	spec := kwokPodSpec(30)
	spec.Containers = []corev1.Container{{Name: container, Image: image, Args: args}}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: appsv1.DeploymentSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec}},
	}
	if _, err := e.cs.AppsV1().Deployments(ns).Create(e.ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "Deployment "+ns+"/"+name+" available", func(ctx context.Context) (bool, error) {
		got, err := e.cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && got.Status.AvailableReplicas == 1, err
	})
}

// addFinalizer adds a finalizer the way a controller does: a patch under its own field manager.
func (e *teEnv) addFinalizer(t *testing.T, p *corev1.Pod, manager, finalizer string) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"finalizers":[%q]}}`, finalizer)
	if _, err := e.cs.CoreV1().Pods(p.Namespace).Patch(e.ctx, p.Name, types.StrategicMergePatchType, []byte(patch),
		metav1.PatchOptions{FieldManager: manager}); err != nil {
		t.Fatalf("%s adds finalizer %s: %v", manager, finalizer, err)
	}
}

// removeFinalizer removes a finalizer the way its owner does when its cleanup is done.
func (e *teEnv) removeFinalizer(t *testing.T, p *corev1.Pod, manager, finalizer string) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"$deleteFromPrimitiveList/finalizers":[%q]}}`, finalizer)
	if _, err := e.cs.CoreV1().Pods(p.Namespace).Patch(e.ctx, p.Name, types.StrategicMergePatchType, []byte(patch),
		metav1.PatchOptions{FieldManager: manager}); err != nil {
		t.Fatalf("%s removes finalizer %s: %v", manager, finalizer, err)
	}
}

// deletePod deletes a pod as `kubectl delete pod` does: with its own grace period.
func (e *teEnv) deletePod(t *testing.T, ns, name string) {
	t.Helper()
	if err := e.cs.CoreV1().Pods(ns).Delete(e.ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete pod %s/%s: %v", ns, name, err)
	}
}

// waitKubeletDone waits until the kubelet (kwok) confirmed the pod stopped: it deleted the pod
// with grace period 0, and only finalizers hold it now.
func (e *teEnv) waitKubeletDone(t *testing.T, ns, name string) {
	t.Helper()
	eventually(t, 60*time.Second, "kwok to finish its part of deleting "+ns+"/"+name, func(ctx context.Context) (bool, error) {
		p, err := e.cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return p.DeletionGracePeriodSeconds != nil && *p.DeletionGracePeriodSeconds == 0, nil
	})
}

func (e *teEnv) waitPodGone(t *testing.T, ns, name string, uid types.UID) {
	t.Helper()
	eventually(t, 30*time.Second, "pod "+ns+"/"+name+" to be gone", func(ctx context.Context) (bool, error) {
		p, err := e.cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return err == nil && p.UID != uid, err
	})
}

func (e *teEnv) waitNamespaceCondition(t *testing.T, ns string, ct corev1.NamespaceConditionType) {
	t.Helper()
	eventually(t, 60*time.Second, fmt.Sprintf("namespace %s condition %s=True", ns, ct), func(ctx context.Context) (bool, error) {
		got, err := e.cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range got.Status.Conditions {
			if c.Type == ct && c.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
}

func teIgnoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// ---- running the plugin ----

// scan runs `scan -n ns --checks stuck-terminating -o json --min-age 0s`; wantExit -1 accepts 0 or
// 2. why must agree with it on every object it finds stuck.
func (e *teEnv) scan(t *testing.T, ns string, wantExit int) *report.Report {
	t.Helper()
	return e.poll(t, ns).wantScanExit(wantExit).agreed()
}

// poll is scan for a loop that waits for a state: the run, exit 0 or 2, which the loop's last
// look, once the state is there, takes on to agreed.
func (e *teEnv) poll(t *testing.T, ns string) *pluginRun {
	t.Helper()
	return pluginOn(e.c.Kubeconfig).scan(t, "-n", ns, "--checks", teCheck, "-o", "json", "--min-age", "0s").wantFindingsOrNone()
}

// fix runs the real `fix` on findings (IDs separated by spaces) and checks each action's status.
func (e *teEnv) fix(t *testing.T, ns, ids string, wantExit int, wantStatus ...string) {
	t.Helper()
	args := append([]string{"-n", ns, "--checks", teCheck, "--min-age", "0s"}, strings.Fields(ids)...)
	args = append(args, "--yes", "-o", "json")
	stdout := pluginOn(e.c.Kubeconfig).fix(t, args...).wantExit(wantExit).stdout
	var doc fix.Document
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("fix -o json is not a result document: %v\n%s", err, stdout)
	}
	var got []string
	for _, r := range doc.Results {
		got = append(got, string(r.Status))
	}
	if strings.Join(got, ",") != strings.Join(wantStatus, ",") {
		t.Fatalf("fix %s: statuses %v, want %v\n%s", ids, got, wantStatus, stdout)
	}
}

func teFind(t *testing.T, rep *report.Report, kind, name string) report.Finding {
	t.Helper()
	for _, f := range rep.Findings {
		if f.Check == teCheck && f.Object.Kind == kind && f.Object.Name == name {
			return f
		}
	}
	t.Fatalf("no %s finding for %s %s; findings:\n%s", teCheck, kind, name, summaries(rep))
	return report.Finding{}
}
