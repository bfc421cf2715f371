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
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/scenario/kubelet"
	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/testcluster"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// The OpenKruise checks against a real apiserver with the project's Kruise CRDs. No kruise-manager
// runs: the test writes what it would have written (CloneSet status through the status
// subresource, pods with its labels, annotations and owner references, its events), and what the
// kube-controller-manager and the manager's leader election would have written (Deployment
// status, the leader Lease, renewed every 2s like a live leader). kwok plays the kubelet of the
// node the default manager's leader runs on and serves that pod's log from a CRI log file through
// the real pods/log path; the other managers' leaders run on a node whose kubelet does not answer,
// which is the degraded path (no logs).

const (
	krChecks     = "stuck-preparing-normal,expectations-unsatisfied"
	krFinalizer  = "example.com/registered"
	krReadyLabel = "example.com/ready"
	// krHookManager is the field manager of the third-party controller that satisfies preNormal hooks.
	krHookManager = "registry-controller"
	krKwokNode    = "kwok-node-0"
	// krDeadNode's kubelet endpoint refuses connections.
	krDeadNode = "node-1"
	// krLogsNamespace is the default manager namespace, whose leader's log kwok serves.
	krLogsNamespace = "kruise-system"
)

var krCloneSets = schema.GroupVersionResource{Group: "apps.kruise.io", Version: "v1alpha1", Resource: "clonesets"}

// krEnv is the cluster and the clients the scenarios build objects with.
type krEnv struct {
	c       *testcluster.Cluster
	cs      kubernetes.Interface
	dyn     dynamic.Interface
	ctx     context.Context
	logFile string
}

func TestKruiseChecks(t *testing.T) {
	t.Parallel()
	pluginBinary(t)
	k := startKruiseCluster(t)

	// The managers: one per running configuration the root causes depend on.
	k.node(t, krKwokNode, true)
	k.node(t, krDeadNode, false)
	logsLeader := k.manager(t, krLogsNamespace, "v1.7.0", []string{"--expectation-timeout=30s"}, krKwokNode, true)
	k.manager(t, "kruise-gate", "v1.7.0", []string{"--feature-gates=CloneSetEventHandlerOptimization=true"}, krDeadNode, true)
	k.manager(t, "kruise-v190", "v1.9.0", nil, krDeadNode, true)
	k.manager(t, "kruise-down", "v1.7.0", nil, krDeadNode, false)

	t.Run("prenormal-hook-pending", func(t *testing.T) {
		const ns = "pn-hook"
		k.namespace(t, ns)
		cs := k.steadyCloneSet(t, ns, "web", krHookBoth(), "")
		pod := k.clonePod(t, cs, "7xk2p", "PreparingNormal", krDeadNode)
		// The hook controller set the label, but to another value, and never added its finalizer.
		k.hookActs(t, pod, nil, map[string]string{krReadyLabel: "false"})
		// Near misses in the same namespace: a steady CloneSet and one mid-rollout, both up to date.
		steady := k.steadyCloneSet(t, ns, "api", nil, "")
		k.clonePod(t, steady, "q8r2m", "Normal", krDeadNode)
		k.midRollout(t, ns, "cart")

		rep := pluginOn(k.c.Kubeconfig).scan(t, krArgs(ns, "kruise-gate")...).wantExit(0).agreed()
		f := krFind(t, rep, "stuck-preparing-normal", "web-7xk2p")
		assertFinding(t, f, "prenormal-hook-pending", report.SeverityWarning,
			[]string{"finalizer example.com/registered is missing",
				`label example.com/ready is "false", the hook wants "true" (set by registry-controller at `},
			nil)
		if len(rep.Findings) != 1 {
			t.Errorf("want only the hook finding, got %d:\n%s", len(rep.Findings), summaries(rep))
		}
		// With the checks' own thresholds (10m in PreparingNormal), a pod created just now is no finding.
		if rep := pluginOn(k.c.Kubeconfig).scan(t, krArgs(ns, "kruise-gate", "--fail-on", "warning")...).wantExit(0).agreed(); len(rep.Findings) != 0 {
			t.Errorf("default thresholds reported a new pod:\n%s", summaries(rep))
		}
	})

	t.Run("prenormal-event-dropped and requeue-workload", func(t *testing.T) {
		const ns = "pn-dropped"
		k.namespace(t, ns)
		cs := k.steadyCloneSet(t, ns, "web", krHookBoth(), "")
		pod := k.clonePod(t, cs, "b4n9d", "PreparingNormal", krDeadNode)
		k.hookActs(t, pod, []string{krFinalizer}, map[string]string{krReadyLabel: "true"})

		scanned := pluginOn(k.c.Kubeconfig).scan(t, krArgs(ns, "kruise-gate")...).wantExit(2)
		rep := scanned.agreed()
		stdout := scanned.stdout
		f := krFind(t, rep, "stuck-preparing-normal", "web-b4n9d")
		assertFinding(t, f, "prenormal-event-dropped", report.SeverityError,
			[]string{"--feature-gates sets CloneSetEventHandlerOptimization=true",
				"kruise-manager v1.7.0 is in the affected range >= v1.4.0, < v1.9.0 of openkruise/kruise#2057",
				"preNormal finalizer example.com/registered is present (added by registry-controller at ",
				"upgrade to v1.9.0 or turn the gate off"},
			[]string{"requeue-workload"})
		if f.Owner == nil || f.Owner.Kind != "CloneSet" || f.Owner.UID != string(cs.GetUID()) {
			t.Errorf("owner = %+v, want the CloneSet", f.Owner)
		}

		// The pod changed after the scan: a fix from the saved report is refused, nothing written.
		saved := filepath.Join(t.TempDir(), "report.json")
		if err := os.WriteFile(saved, []byte(stdout), 0o600); err != nil {
			t.Fatal(err)
		}
		k.touchPod(t, ns, "web-b4n9d")
		out, errOut, code := pluginOn(k.c.Kubeconfig).fix(t, "--from-report", saved, "--kruise-namespace", "kruise-gate", f.ID, "--yes", "-o", "json").out()
		if res := krFixResults(t, out); code != 3 || len(res) != 1 || res[0].Status != "refused" || !strings.Contains(res[0].Reason, "changed since the plan") {
			t.Fatalf("fix of a changed pod: exit %d, want 3 and a refusal because the pod changed\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
		}
		if v := k.getCloneSet(t, ns, "web").GetAnnotations()["workloaddoctor.io/requeued-at"]; v != "" {
			t.Fatalf("refused fix still annotated the CloneSet: %q", v)
		}

		// A fresh fix requeues the CloneSet: the annotation is on it, and nothing else changed.
		before := k.getCloneSet(t, ns, "web")
		krFix(t, k, ns, "kruise-gate", f.ID)
		after := k.getCloneSet(t, ns, "web")
		if after.GetAnnotations()["workloaddoctor.io/requeued-at"] == "" {
			t.Fatalf("CloneSet has no workloaddoctor.io/requeued-at annotation after fix: %v", after.GetAnnotations())
		}
		if after.GetUID() != before.GetUID() || after.GetGeneration() != before.GetGeneration() {
			t.Errorf("requeue changed more than an annotation: generation %d -> %d", before.GetGeneration(), after.GetGeneration())
		}
	})

	t.Run("prenormal-reconcile-missed on a fixed release", func(t *testing.T) {
		const ns = "pn-missed"
		k.namespace(t, ns)
		cs := k.steadyCloneSet(t, ns, "web", krHookBoth(), "")
		pod := k.clonePod(t, cs, "z2c7t", "PreparingNormal", krDeadNode)
		k.hookActs(t, pod, []string{krFinalizer}, map[string]string{krReadyLabel: "true"})

		rep := pluginOn(k.c.Kubeconfig).scan(t, krArgs(ns, "kruise-v190")...).wantExit(2).agreed()
		f := krFind(t, rep, "stuck-preparing-normal", "web-z2c7t")
		assertFinding(t, f, "prenormal-reconcile-missed", report.SeverityError,
			[]string{"kruise-manager Deployment kruise-v190/kruise-controller-manager runs image openkruise/kruise-manager:v1.9.0 (v1.9.0)",
				"openkruise/kruise#2057 does not apply"},
			[]string{"requeue-workload"})
		krFix(t, k, ns, "kruise-v190", f.ID)
		if k.getCloneSet(t, ns, "web").GetAnnotations()["workloaddoctor.io/requeued-at"] == "" {
			t.Fatal("CloneSet was not annotated by requeue-workload")
		}
	})

	t.Run("ondelete-refresh-bug", func(t *testing.T) {
		const ns = "pn-ondelete"
		k.namespace(t, ns)
		cs := k.steadyCloneSet(t, ns, "web", nil, "OnDelete")
		k.clonePod(t, cs, "m5v8s", "PreparingNormal", krDeadNode)
		rep := pluginOn(k.c.Kubeconfig).scan(t, krArgs(ns, "kruise-v190")...).wantExit(2).agreed()
		assertFinding(t, krFind(t, rep, "stuck-preparing-normal", "web-m5v8s"), "ondelete-refresh-bug", report.SeverityError,
			[]string{"CloneSet pn-ondelete/web has updateStrategy.type OnDelete", "kruise-manager v1.9.0 is in the affected range >= v1.9.0, < v1.10.0"}, nil)
	})

	t.Run("pod-not-scheduled", func(t *testing.T) {
		const ns = "pn-unsched"
		k.namespace(t, ns)
		cs := k.steadyCloneSet(t, ns, "web", nil, "")
		pod := k.clonePod(t, cs, "d9w4f", "PreparingNormal", "")
		// What kube-scheduler writes when no node fits.
		pod.Status = corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
			Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", LastTransitionTime: metav1.Now(),
			Message: "0/2 nodes are available: 2 Insufficient cpu. preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod.",
		}}}
		if _, err := k.cs.CoreV1().Pods(ns).UpdateStatus(k.ctx, pod, metav1.UpdateOptions{FieldManager: "kube-scheduler"}); err != nil {
			t.Fatal(err)
		}
		rep := pluginOn(k.c.Kubeconfig).scan(t, krArgs(ns, "kruise-v190")...).wantExit(0).agreed()
		assertFinding(t, krFind(t, rep, "stuck-preparing-normal", "web-d9w4f"), "pod-not-scheduled", report.SeverityWarning,
			[]string{"spec.nodeName is empty", "condition PodScheduled=False reason Unschedulable: 0/2 nodes are available: 2 Insufficient cpu."}, nil)
	})

	t.Run("controller-unavailable", func(t *testing.T) {
		const ns = "pn-down"
		k.namespace(t, ns)
		cs := k.steadyCloneSet(t, ns, "web", nil, "")
		k.clonePod(t, cs, "h3j6k", "PreparingNormal", krDeadNode)
		// Scaled to 2 while the manager was down: nothing observed it.
		k.setReplicas(t, ns, "web", 2)
		rep := pluginOn(k.c.Kubeconfig).scan(t, krArgs(ns, "kruise-down")...).wantExit(2).agreed()
		down := []string{"Deployment kruise-down/kruise-controller-manager has no available replica",
			"leader Lease kruise-down/kruise-manager (holder kruise-controller-manager-6f7d8c9b5-"}
		assertFinding(t, krFind(t, rep, "stuck-preparing-normal", "web-h3j6k"), "controller-unavailable", report.SeverityError, down, nil)
		assertFinding(t, krFind(t, rep, "expectations-unsatisfied", "web"), "controller-unavailable", report.SeverityError,
			append(down, "status.observedGeneration 1 < metadata.generation 2"), nil)
	})

	t.Run("pod-creation-failing", func(t *testing.T) {
		const ns = "exp-quota"
		k.namespace(t, ns)
		cs := k.cloneSet(t, ns, "web", 2, nil, "")
		cs = k.writeStatus(t, cs, 0, "web-5d4f8b7c9", 0)
		k.event(t, cs, corev1.EventTypeWarning, "FailedCreate",
			`failed to create pod: pods "web-x7k2p" is forbidden: exceeded quota: compute, requested: cpu=2, used: cpu=8, limited: cpu=8, `+
				`pod: {"metadata":{"name":"web-x7k2p"},"spec":{"containers":[{"name":"app","env":[{"name":"API_TOKEN","value":"s3cr3t-value"}]}]}}`)
		scanned := pluginOn(k.c.Kubeconfig).scan(t, krArgs(ns, "kruise-gate")...).wantExit(2)
		rep := scanned.agreed()
		stdout := scanned.stdout
		assertFinding(t, krFind(t, rep, "expectations-unsatisfied", "web"), "pod-creation-failing", report.SeverityError,
			[]string{"spec.replicas 2 but 0 active pods", "event Warning FailedCreate from cloneset-controller",
				"exceeded quota: compute, requested: cpu=2, used: cpu=8, limited: cpu=8"}, nil)
		if strings.Contains(stdout, "s3cr3t-value") {
			t.Errorf("the report leaks an environment value from the event's pod dump:\n%s", stdout)
		}
	})

	t.Run("scale-expectations-leaked inferred without logs, and the pod it blocks", func(t *testing.T) {
		const ns = "exp-nolog"
		k.namespace(t, ns)
		cs, pod := k.leakedCloneSet(t, ns, "demo", "5l6cv")
		k.hookActs(t, pod, []string{krFinalizer}, nil)
		rep := pluginOn(k.c.Kubeconfig).scan(t, krArgs(ns, "kruise-gate")...).wantExit(2).agreed()
		exp := krFind(t, rep, "expectations-unsatisfied", "demo")
		assertFinding(t, exp, "scale-expectations-leaked", report.SeverityError,
			[]string{"status.observedGeneration 2 < metadata.generation 3", "spec.replicas 3 but 1 active pods",
				"predates the expectation timeout handling of openkruise/kruise#1829",
				"inferred from the frozen status: the leader's log could not be read (get pods/log of kruise-gate/kruise-controller-manager-6f7d8c9b5-"},
			[]string{"restart-controller-leader", "requeue-workload"})
		pn := krFind(t, rep, "stuck-preparing-normal", "demo-"+"a1b2c")
		assertFinding(t, pn, "workload-expectations-blocked", report.SeverityError,
			[]string{"expectations-unsatisfied finding " + exp.ID + ": scale-expectations-leaked"},
			[]string{"restart-controller-leader", "requeue-workload"})
		krDegraded(t, rep, "expectations-unsatisfied", "pods/log")
		krDegraded(t, rep, "stuck-preparing-normal", "pods/log")
		_ = cs
	})

	t.Run("update-expectations-leaked inferred without logs", func(t *testing.T) {
		const ns = "exp-update"
		k.namespace(t, ns)
		cs := k.cloneSet(t, ns, "web", 2, nil, "InPlaceIfPossible")
		// The template changed (generation 2), both pods were updated in place to the new revision,
		// and the status, observed at generation 2, never counted them.
		k.setImage(t, ns, "web", "nginx:1.28")
		cs = k.writeStatus(t, k.getCloneSet(t, ns, "web"), 2, "web-6c8d9e7f5", 0)
		cs = k.setStatusField(t, cs, "currentRevision", "web-5d4f8b7c9")
		k.clonePodRev(t, cs, "p4q7w", "Normal", krDeadNode, "web-6c8d9e7f5")
		k.clonePodRev(t, cs, "r8t2y", "Normal", krDeadNode, "web-6c8d9e7f5")
		rep := pluginOn(k.c.Kubeconfig).scan(t, krArgs(ns, "kruise-gate")...).wantExit(2).agreed()
		assertFinding(t, krFind(t, rep, "expectations-unsatisfied", "web"), "update-expectations-leaked", report.SeverityError,
			[]string{"status.updatedReplicas 0 but 2 active pods carry updateRevision web-6c8d9e7f5", "inferred from the frozen status"},
			[]string{"restart-controller-leader", "requeue-workload"})
	})

	t.Run("stalled-unknown with a readable leader log", func(t *testing.T) {
		const ns = "exp-stalled"
		k.namespace(t, ns)
		k.leakedCloneSet(t, ns, "demo", "5l6cv")
		rep := pluginOn(k.c.Kubeconfig).scan(t, krArgs(ns, krLogsNamespace)...).wantExit(2).agreed()
		f := krFind(t, rep, "expectations-unsatisfied", "demo")
		assertFinding(t, f, "stalled-unknown", report.SeverityWarning,
			[]string{"the leader's log has no expectation line for CloneSet exp-stalled/demo", "kruise-manager --expectation-timeout is 30s"},
			[]string{"requeue-workload", "restart-controller-leader"})
		if !rep.Coverage.Complete {
			t.Errorf("coverage is not complete with a readable log: %+v", rep.Coverage)
		}
		krFix(t, k, ns, krLogsNamespace, f.ID)
		if k.getCloneSet(t, ns, "demo").GetAnnotations()["workloaddoctor.io/requeued-at"] == "" {
			t.Fatal("CloneSet was not annotated by requeue-workload")
		}
	})

	t.Run("admission-webhook-unavailable: OpenKruise's pod webhooks without their Service", k.webhookBlocksPodWrites)

	t.Run("expectations leaked, confirmed by the leader log, and restart-controller-leader", func(t *testing.T) {
		const ns = "exp-logs"
		k.namespace(t, ns)
		k.leakedCloneSet(t, ns, "demo", "5l6cv")
		api := k.steadyCloneSet(t, ns, "api", nil, "InPlaceIfPossible")
		k.clonePod(t, api, "w3e5r", "Normal", krDeadNode)
		// A pod update the controller waits for: the status is frozen at an older count.
		k.writeStatus(t, k.getCloneSet(t, ns, "api"), 1, "api-5d4f8b7c9", 1)
		k.setReplicas(t, ns, "api", 2)
		now := time.Now()
		k.writeLog(t,
			krKlog(now.Add(-90*time.Second), 'I', "cloneset_controller.go:235", `"Not satisfied scale" cloneSet="exp-logs/demo" scaleDirtyPods={"create":["demo-5l6cv"]}`),
			krKlog(now.Add(-60*time.Second), 'I', "cloneset_controller.go:232", `"Expectation unsatisfied overtime" cloneSet="exp-logs/demo" scaleDirtyPods={"create":["demo-5l6cv"]} overTime="30.000366775s"`),
			krKlog(now.Add(-50*time.Second), 'I', "cloneset_controller.go:292", `"Expectation unsatisfied overtime for CloneSet, wait for pod updating timeout" cloneSet="exp-logs/api" pod="exp-logs/api-w3e5r" timeout="30.5s"`),
			krKlog(now.Add(-40*time.Second), 'I', "controller.go:219", `"Starting workers" controller="sidecarset" worker count=3`),
		)

		rep := pluginOn(k.c.Kubeconfig).scan(t, krArgs(ns, krLogsNamespace)...).wantExit(2).agreed()
		f := krFind(t, rep, "expectations-unsatisfied", "demo")
		assertFinding(t, f, "scale-expectations-leaked", report.SeverityError,
			[]string{`cloneset_controller.go:232] "Expectation unsatisfied overtime" cloneSet="exp-logs/demo" scaleDirtyPods={"create":["demo-5l6cv"]}`,
				"dirty pod demo-5l6cv (expected create) no longer exists"},
			[]string{"restart-controller-leader", "requeue-workload"})
		assertFinding(t, krFind(t, rep, "expectations-unsatisfied", "api"), "update-expectations-leaked", report.SeverityError,
			[]string{"pod api-w3e5r the leader waits for still exists"}, []string{"restart-controller-leader", "requeue-workload"})
		if !rep.Coverage.Complete {
			t.Errorf("coverage is not complete with a readable log: %+v", rep.Coverage)
		}

		// Restart the leader: its pod is deleted (kwok, its kubelet, finishes the deletion).
		holder := f.Fixes[0].Params["holderIdentity"]
		if !strings.HasPrefix(holder, logsLeader.Name+"_") {
			t.Fatalf("restart fix names holder %q, want the leader pod %s", holder, logsLeader.Name)
		}
		// One replica: the restart is high risk (its pod webhook fails closed while it restarts),
		// so it is named (kruise_leader_test.go tests the refusal).
		krFix(t, k, ns, krLogsNamespace, f.ID, "--action", "restart-controller-leader")
		eventually(t, 60*time.Second, "leader pod "+logsLeader.Name+" deleted", func(ctx context.Context) (bool, error) {
			p, err := k.cs.CoreV1().Pods(krLogsNamespace).Get(ctx, logsLeader.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			return err == nil && p.UID != logsLeader.UID, err
		})
		if _, err := k.cs.AppsV1().Deployments(krLogsNamespace).Get(k.ctx, "kruise-controller-manager", metav1.GetOptions{}); err != nil {
			t.Errorf("the manager Deployment must stay: %v", err)
		}
	})
}

// ---- cluster ----

func startKruiseCluster(t *testing.T) *krEnv {
	t.Helper()
	return startKruiseClusterLogs(t, krLogsNamespace)
}

// startKruiseClusterLogs is startKruiseCluster with kwok serving the log of the manager
// container of every pod in the namespaces given.
func startKruiseClusterLogs(t *testing.T, namespaces ...string) *krEnv {
	t.Helper()
	dir := t.TempDir()
	logFile := filepath.Join(dir, "kruise-manager.log")
	if err := os.WriteFile(logFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// kwok serves the log of the manager container of every pod in namespaces from logFile.
	config := kubelet.ClusterLogs("manager", logFile, namespaces...)
	configFile := filepath.Join(dir, "kwok.yaml")
	if err := os.WriteFile(configFile, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	c := testcluster.Start(t, testcluster.Options{Kwok: &testcluster.KwokOptions{
		NodeAnnotationSelector: "kwok.x-k8s.io/node=fake",
		ServeKubeletAPI:        true,
		ExtraArgs:              []string{"--config=" + configFile},
	}})
	c.InstallCRDs(t)
	return &krEnv{c: c, cs: c.Clientset(), dyn: c.Dynamic(), ctx: t.Context(), logFile: logFile}
}

func (k *krEnv) namespace(t *testing.T, name string) {
	t.Helper()
	_, err := k.cs.CoreV1().Namespaces().Create(k.ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// node registers a node. A kwok node gets its status and kubelet endpoint from kwok; the other
// registers like a kubelet that then stopped answering: its endpoint refuses connections.
func (k *krEnv) node(t *testing.T, name string, kwok bool) {
	t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}}}
	if kwok {
		n.Annotations = map[string]string{"kwok.x-k8s.io/node": "fake"}
	} else {
		port, err := testcluster.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		n.Status = corev1.NodeStatus{
			Addresses:       []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}},
			DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: int32(port)}},
		}
	}
	if _, err := k.cs.CoreV1().Nodes().Create(k.ctx, n, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if kwok {
		eventually(t, 30*time.Second, "kwok to take node "+name, func(ctx context.Context) (bool, error) {
			got, err := k.cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			return err == nil && got.Status.DaemonEndpoints.KubeletEndpoint.Port != 0, err
		})
	}
}

// manager installs a kruise-manager the way Helm and kube-controller-manager leave it: the
// Deployment with its status, its ReplicaSet, the leader pod on node, and the leader Lease. A
// healthy leader renews the Lease every 2s until the test ends; an unhealthy one stopped 10m ago.
func (k *krEnv) manager(t *testing.T, ns, version string, args []string, node string, healthy bool) *corev1.Pod {
	t.Helper()
	k.namespace(t, ns)
	const name, rsHash = "kruise-controller-manager", "6f7d8c9b5"
	labels := map[string]string{"control-plane": "controller-manager"}
	one := int32(1)
	tmpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "manager", Image: "openkruise/kruise-manager:" + version, Command: []string{"/manager"},
			Args: append([]string{"--enable-leader-election", "--metrics-addr=:8080", "--health-probe-addr=:8000",
				"--logtostderr=true", "--leader-election-namespace=" + ns, "--v=4"}, args...)}},
		ServiceAccountName: "kruise-manager",
	}}
	d, err := k.cs.AppsV1().Deployments(ns).Create(k.ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec:       appsv1.DeploymentSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: tmpl},
	}, metav1.CreateOptions{FieldManager: "helm"})
	if err != nil {
		t.Fatal(err)
	}
	avail := int32(0)
	cond := appsv1.DeploymentCondition{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionFalse, Reason: "MinimumReplicasUnavailable",
		Message: "Deployment does not have minimum availability.", LastUpdateTime: metav1.Now(), LastTransitionTime: metav1.Now()}
	if healthy {
		avail = 1
		cond.Status, cond.Reason, cond.Message = corev1.ConditionTrue, "MinimumReplicasAvailable", "Deployment has minimum availability."
	}
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: avail,
		AvailableReplicas: avail, UnavailableReplicas: 1 - avail, Conditions: []appsv1.DeploymentCondition{cond}}
	if _, err := k.cs.AppsV1().Deployments(ns).UpdateStatus(k.ctx, d, metav1.UpdateOptions{FieldManager: "kube-controller-manager"}); err != nil {
		t.Fatal(err)
	}
	yes := true
	rsLabels := map[string]string{"control-plane": "controller-manager", "pod-template-hash": rsHash}
	rsTmpl := *tmpl.DeepCopy()
	rsTmpl.Labels = rsLabels
	rs, err := k.cs.AppsV1().ReplicaSets(ns).Create(k.ctx, &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-" + rsHash, Labels: rsLabels, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "apps/v1", Kind: "Deployment", Name: name, UID: d.UID, Controller: &yes, BlockOwnerDeletion: &yes}}},
		Spec: appsv1.ReplicaSetSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: rsLabels}, Template: rsTmpl},
	}, metav1.CreateOptions{FieldManager: "kube-controller-manager"})
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: rs.Name + "-2lq8x", Labels: rsLabels, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name, UID: rs.UID, Controller: &yes, BlockOwnerDeletion: &yes}}},
		Spec: *rsTmpl.Spec.DeepCopy(),
	}
	pod.Spec.NodeName = node
	pod.Spec.Tolerations = []corev1.Toleration{{Key: "kwok.x-k8s.io/node", Operator: corev1.TolerationOpExists}}
	pod, err = k.cs.CoreV1().Pods(ns).Create(k.ctx, pod, metav1.CreateOptions{FieldManager: "kube-controller-manager"})
	if err != nil {
		t.Fatal(err)
	}
	if node == krKwokNode {
		eventually(t, 30*time.Second, "kwok to run the leader pod", func(ctx context.Context) (bool, error) {
			p, err := k.cs.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
			return err == nil && p.Status.Phase == corev1.PodRunning, err
		})
	} else {
		ready := corev1.ConditionFalse
		if healthy {
			ready = corev1.ConditionTrue
		}
		pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}, {Type: corev1.PodReady, Status: ready}}}
		if pod, err = k.cs.CoreV1().Pods(ns).UpdateStatus(k.ctx, pod, metav1.UpdateOptions{FieldManager: "kubelet"}); err != nil {
			t.Fatal(err)
		}
	}
	holder := pod.Name + "_0b6a2c1e-5d1f-4a8e-9d3c-2f7e1b0a9c8d"
	renewed := time.Now()
	if !healthy {
		renewed = renewed.Add(-10 * time.Minute)
	}
	dur := int32(15)
	lease, err := k.cs.CoordinationV1().Leases(ns).Create(k.ctx, &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "kruise-manager"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &dur,
			AcquireTime: &metav1.MicroTime{Time: renewed.Add(-time.Hour)}, RenewTime: &metav1.MicroTime{Time: renewed}},
	}, metav1.CreateOptions{FieldManager: "manager"})
	if err != nil {
		t.Fatal(err)
	}
	if healthy {
		go k.renew(lease)
	}
	return pod
}

// renew renews the Lease every 2s, as the leader's elector does, until the test's context ends.
func (k *krEnv) renew(lease *coordinationv1.Lease) {
	tick := time.NewTicker(2 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-k.ctx.Done():
			return
		case <-tick.C:
		}
		l, err := k.cs.CoordinationV1().Leases(lease.Namespace).Get(k.ctx, lease.Name, metav1.GetOptions{})
		if err != nil {
			continue
		}
		l.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
		_, _ = k.cs.CoordinationV1().Leases(lease.Namespace).Update(k.ctx, l, metav1.UpdateOptions{FieldManager: "manager"})
	}
}

// ---- OpenKruise objects ----

func krHookBoth() map[string]any {
	return map[string]any{"preNormal": map[string]any{
		"finalizersHandler": []any{krFinalizer}, "labelsHandler": map[string]any{krReadyLabel: "true"}}}
}

// cloneSet creates a CloneSet the way `kubectl apply` would.
func (k *krEnv) cloneSet(t *testing.T, ns, name string, replicas int64, lifecycle map[string]any, updateType string) *unstructured.Unstructured {
	t.Helper()
	labels := map[string]any{"app": name}
	spec := map[string]any{
		"replicas": replicas,
		"selector": map[string]any{"matchLabels": labels},
		"template": map[string]any{"metadata": map[string]any{"labels": labels},
			"spec": map[string]any{"containers": []any{map[string]any{"name": "app", "image": "nginx:1.27"}}}},
	}
	if lifecycle != nil {
		spec["lifecycle"] = lifecycle
	}
	if updateType != "" {
		spec["updateStrategy"] = map[string]any{"type": updateType}
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
		"metadata": map[string]any{"name": name, "namespace": ns}, "spec": spec,
	}}
	out, err := k.dyn.Resource(krCloneSets).Namespace(ns).Create(k.ctx, u, metav1.CreateOptions{FieldManager: "kubectl-client-side-apply"})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// writeStatus writes the status kruise computes at the end of a reconcile, through the status
// subresource: observedGeneration is the CloneSet's current generation, replicas the pods it saw.
func (k *krEnv) writeStatus(t *testing.T, cs *unstructured.Unstructured, replicas int64, revision string, updated int64) *unstructured.Unstructured {
	t.Helper()
	cs = cs.DeepCopy()
	cs.Object["status"] = map[string]any{
		"observedGeneration": cs.GetGeneration(), "replicas": replicas, "readyReplicas": replicas, "availableReplicas": replicas,
		"updatedReplicas": updated, "updatedReadyReplicas": updated, "expectedUpdatedReplicas": replicas,
		"updateRevision": revision, "currentRevision": revision, "collisionCount": int64(0),
		"labelSelector": "app=" + cs.GetName(),
	}
	out, err := k.dyn.Resource(krCloneSets).Namespace(cs.GetNamespace()).UpdateStatus(k.ctx, cs, metav1.UpdateOptions{FieldManager: "kruise-manager"})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func (k *krEnv) setStatusField(t *testing.T, cs *unstructured.Unstructured, field string, value any) *unstructured.Unstructured {
	t.Helper()
	cs = cs.DeepCopy()
	if err := unstructured.SetNestedField(cs.Object, value, "status", field); err != nil {
		t.Fatal(err)
	}
	out, err := k.dyn.Resource(krCloneSets).Namespace(cs.GetNamespace()).UpdateStatus(k.ctx, cs, metav1.UpdateOptions{FieldManager: "kruise-manager"})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// steadyCloneSet is a CloneSet with one replica whose status kruise has fully written.
func (k *krEnv) steadyCloneSet(t *testing.T, ns, name string, lifecycle map[string]any, updateType string) *unstructured.Unstructured {
	t.Helper()
	cs := k.cloneSet(t, ns, name, 1, lifecycle, updateType)
	return k.writeStatus(t, cs, 1, name+"-5d4f8b7c9", 1)
}

func (k *krEnv) getCloneSet(t *testing.T, ns, name string) *unstructured.Unstructured {
	t.Helper()
	u, err := k.dyn.Resource(krCloneSets).Namespace(ns).Get(k.ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// setReplicas scales the CloneSet the way `kubectl scale` would edit its spec.
func (k *krEnv) setReplicas(t *testing.T, ns, name string, replicas int64) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas)
	if _, err := k.dyn.Resource(krCloneSets).Namespace(ns).Patch(k.ctx, name, types.MergePatchType, []byte(patch),
		metav1.PatchOptions{FieldManager: "kubectl-scale"}); err != nil {
		t.Fatal(err)
	}
}

func (k *krEnv) setImage(t *testing.T, ns, name, image string) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec":{"template":{"spec":{"containers":[{"name":"app","image":%q}]}}}}`, image)
	if _, err := k.dyn.Resource(krCloneSets).Namespace(ns).Patch(k.ctx, name, types.MergePatchType, []byte(patch),
		metav1.PatchOptions{FieldManager: "kubectl-set"}); err != nil {
		t.Fatal(err)
	}
}

// clonePod creates a pod the way the CloneSet controller does, on the CloneSet's revision.
func (k *krEnv) clonePod(t *testing.T, cs *unstructured.Unstructured, suffix, state, node string) *corev1.Pod {
	t.Helper()
	return k.clonePodRev(t, cs, suffix, state, node, cs.GetName()+"-5d4f8b7c9")
}

func (k *krEnv) clonePodRev(t *testing.T, cs *unstructured.Unstructured, suffix, state, node, revision string) *corev1.Pod {
	t.Helper()
	yes := true
	short := revision[strings.LastIndexByte(revision, '-')+1:]
	image, _, _ := unstructured.NestedSlice(cs.Object, "spec", "template", "spec", "containers")
	img := "nginx:1.27"
	if len(image) > 0 {
		if m, ok := image[0].(map[string]any); ok && m["image"] != nil {
			img = m["image"].(string)
		}
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: cs.GetName() + "-" + suffix, Namespace: cs.GetNamespace(),
			Labels: map[string]string{"app": cs.GetName(), "controller-revision-hash": revision, "pod-template-hash": short,
				"apps.kruise.io/cloneset-instance-id": suffix, "lifecycle.apps.kruise.io/state": state},
			Annotations: map[string]string{"lifecycle.apps.kruise.io/timestamp": time.Now().UTC().Format(time.RFC3339)},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: cs.GetName(),
				UID: cs.GetUID(), Controller: &yes, BlockOwnerDeletion: &yes}},
		},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "app", Image: img}},
			ReadinessGates: []corev1.PodReadinessGate{{ConditionType: "InPlaceUpdateReady"}, {ConditionType: "KruisePodReady"}}},
	}
	pod, err := k.cs.CoreV1().Pods(cs.GetNamespace()).Create(k.ctx, pod, metav1.CreateOptions{FieldManager: "kruise-manager"})
	if err != nil {
		t.Fatal(err)
	}
	if node == "" {
		return pod
	}
	normal := corev1.ConditionFalse
	if state == "Normal" {
		normal = corev1.ConditionTrue
	}
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}, {Type: corev1.PodInitialized, Status: corev1.ConditionTrue},
		{Type: corev1.ContainersReady, Status: corev1.ConditionTrue}, {Type: "InPlaceUpdateReady", Status: corev1.ConditionTrue},
		{Type: "KruisePodReady", Status: normal}, {Type: corev1.PodReady, Status: normal}}}
	if pod, err = k.cs.CoreV1().Pods(cs.GetNamespace()).UpdateStatus(k.ctx, pod, metav1.UpdateOptions{FieldManager: "kubelet"}); err != nil {
		t.Fatal(err)
	}
	return pod
}

// hookActs is the third-party hook controller adding its finalizers and labels to a pod.
func (k *krEnv) hookActs(t *testing.T, pod *corev1.Pod, finalizers []string, labels map[string]string) {
	t.Helper()
	p, err := k.cs.CoreV1().Pods(pod.Namespace).Get(k.ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Finalizers = append(p.Finalizers, finalizers...)
	for key, v := range labels {
		p.Labels[key] = v
	}
	if _, err := k.cs.CoreV1().Pods(pod.Namespace).Update(k.ctx, p, metav1.UpdateOptions{FieldManager: krHookManager}); err != nil {
		t.Fatal(err)
	}
}

// touchPod changes a pod after a scan (someone annotates it).
func (k *krEnv) touchPod(t *testing.T, ns, name string) {
	t.Helper()
	if _, err := k.cs.CoreV1().Pods(ns).Patch(k.ctx, name, types.MergePatchType, []byte(`{"metadata":{"annotations":{"example.com/touched":"yes"}}}`),
		metav1.PatchOptions{FieldManager: "kubectl-annotate"}); err != nil {
		t.Fatal(err)
	}
}

// midRollout is a CloneSet in the middle of an in-place update: status up to date with its pods.
func (k *krEnv) midRollout(t *testing.T, ns, name string) {
	t.Helper()
	cs := k.cloneSet(t, ns, name, 2, nil, "InPlaceIfPossible")
	k.setImage(t, ns, name, "nginx:1.28")
	cs = k.getCloneSet(t, ns, name)
	k.clonePodRev(t, cs, "n1a2b", "Normal", krDeadNode, name+"-6c8d9e7f5")
	k.clonePodRev(t, cs, "n3c4d", "Normal", krDeadNode, name+"-5d4f8b7c9")
	cs = k.writeStatus(t, cs, 2, name+"-6c8d9e7f5", 1)
	k.setStatusField(t, cs, "currentRevision", name+"-5d4f8b7c9")
}

// leakedCloneSet is the state observed with the real v1.7.0 after a lost watch event: created with
// one replica, template edited (generation 2, observed), then scaled to 3 (generation 3) while the
// leader waited for pod <name>-<lost>, which was created and deleted during a watch re-list. The
// status froze at generation 2 with one replica; no pod was created. Its one pod is PreparingNormal
// with a preNormal hook finalizer the CloneSet declares.
func (k *krEnv) leakedCloneSet(t *testing.T, ns, name, lost string) (*unstructured.Unstructured, *corev1.Pod) {
	t.Helper()
	cs := k.cloneSet(t, ns, name, 1, map[string]any{"preNormal": map[string]any{"finalizersHandler": []any{krFinalizer}}}, "")
	cs = k.writeStatus(t, cs, 1, name+"-5d4f8b7c9", 1)
	k.event(t, cs, corev1.EventTypeNormal, "SuccessfulCreate", "succeed to create pod "+name+"-a1b2c")
	pod := k.clonePod(t, cs, "a1b2c", "PreparingNormal", krDeadNode)
	k.setImage(t, ns, name, "nginx:1.27.1")
	cs = k.writeStatus(t, k.getCloneSet(t, ns, name), 1, name+"-5d4f8b7c9", 1)
	k.event(t, cs, corev1.EventTypeNormal, "SuccessfulCreate", "succeed to create pod "+name+"-"+lost)
	k.setReplicas(t, ns, name, 3)
	return k.getCloneSet(t, ns, name), pod
}

// event records an event on a CloneSet as kruise's cloneset-controller recorder does.
func (k *krEnv) event(t *testing.T, cs *unstructured.Unstructured, typ, reason, msg string) {
	t.Helper()
	now := metav1.Now()
	e := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", cs.GetName(), time.Now().UnixNano()), Namespace: cs.GetNamespace()},
		InvolvedObject: corev1.ObjectReference{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Namespace: cs.GetNamespace(),
			Name: cs.GetName(), UID: cs.GetUID(), ResourceVersion: cs.GetResourceVersion()},
		Reason: reason, Message: msg, Type: typ, Count: 1, FirstTimestamp: now, LastTimestamp: now,
		Source: corev1.EventSource{Component: "cloneset-controller"}, ReportingController: "cloneset-controller",
	}
	if _, err := k.cs.CoreV1().Events(cs.GetNamespace()).Create(k.ctx, e, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// krKlog renders a kruise-manager log line: klog's header, then the structured message.
func krKlog(at time.Time, severity byte, file, msg string) string {
	at = at.UTC()
	return fmt.Sprintf("%c%02d%02d %02d:%02d:%02d.%06d       1 %s] %s", severity, at.Month(), at.Day(), at.Hour(), at.Minute(), at.Second(),
		at.Nanosecond()/1000, file, msg)
}

// writeLog writes the leader container's log the way the container runtime does (CRI format,
// klog writes to stderr), which kwok serves through the kubelet API.
func (k *krEnv) writeLog(t *testing.T, lines ...string) {
	t.Helper()
	var b strings.Builder
	for _, l := range lines {
		fmt.Fprintf(&b, "%s stderr F %s\n", time.Now().UTC().Format(time.RFC3339Nano), l)
	}
	if err := os.WriteFile(k.logFile, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
}

// ---- running the plugin ----

// krArgs are the scan arguments of the OpenKruise checks in namespace ns against the manager in
// kruiseNS; extra replaces the default --min-age 0s.
func krArgs(ns, kruiseNS string, extra ...string) []string {
	if len(extra) == 0 {
		extra = []string{"--min-age", "0s"}
	}
	return append([]string{"-n", ns, "--kruise-namespace", kruiseNS, "--checks", krChecks, "-o", "json"}, extra...)
}

func krFind(t *testing.T, rep *report.Report, check, name string) report.Finding {
	t.Helper()
	for _, f := range rep.Findings {
		if f.Check == check && f.Object.Name == name {
			return f
		}
	}
	t.Fatalf("no %s finding for %s; findings:\n%s", check, name, summaries(rep))
	return report.Finding{}
}

func krDegraded(t *testing.T, rep *report.Report, check, fragment string) {
	t.Helper()
	for _, n := range rep.Coverage.Degraded {
		if n.Check == check && strings.Contains(n.Reason, fragment) {
			if rep.Coverage.Complete {
				t.Errorf("coverage.complete is true with %s degraded", check)
			}
			return
		}
	}
	t.Errorf("coverage.degraded has no %s entry mentioning %q: %+v", check, fragment, rep.Coverage)
}

// krFix applies one finding's default fix (or the one extra flags pick) through the real `fix`
// command, after a fresh scan.
func krFix(t *testing.T, k *krEnv, ns, kruiseNS, id string, extra ...string) {
	t.Helper()
	fixed := pluginOn(k.c.Kubeconfig).fix(t, append(krFixArgs(ns, kruiseNS, id), extra...)...).wantExit(0)
	stdout, stderr := fixed.stdout, fixed.stderr
	if res := krFixResults(t, stdout); len(res) != 1 || res[0].Status != "applied" {
		t.Fatalf("fix %s did not apply one action:\n%s\nstderr:\n%s", id, stdout, stderr)
	}
}

// krFixArgs are the fix arguments that apply finding id of the OpenKruise checks in namespace ns
// against the manager in kruiseNS.
func krFixArgs(ns, kruiseNS, id string) []string {
	return []string{"-n", ns, "--kruise-namespace", kruiseNS, "--checks", krChecks, "--min-age", "0s", id, "--yes", "-o", "json"}
}

type krFixResult struct {
	Action string `json:"action"`
	Status string `json:"status"`
	Reason string `json:"reason"`
}

// krFixResults decodes the results of `fix -o json`.
func krFixResults(t *testing.T, stdout string) []krFixResult {
	t.Helper()
	var doc struct {
		Results []krFixResult `json:"results"`
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("fix -o json is not a result document: %v\n%s", err, stdout)
	}
	return doc.Results
}
