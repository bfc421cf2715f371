package terminating

import (
	"errors"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/checktest"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

func TestStuckTerminatingPods(t *testing.T) {
	type tc struct {
		name      string
		world     func(t *testing.T) checktest.Cluster
		threshold time.Duration
		zero      bool // --min-age 0s
		want      want
	}
	fiveMin := 5 * time.Minute
	cases := []tc{
		{name: "node missing: PodGC has not force-deleted the pod",
			world: func(*testing.T) checktest.Cluster {
				w := healthy()
				w.Pods = []*corev1.Pod{replicaSetPod("target", checktest.OnNode("ip-10-0-3-7"), checktest.Deleted(12*time.Minute, 30))}
				return w
			},
			want: want{rootCause: RootCauseNodeMissing, node: "ip-10-0-3-7",
				summary:  []string{"ip-10-0-3-7", "no longer exists"},
				evidence: []string{"spec.nodeName ip-10-0-3-7: no such Node", "PodGC", "deletionGracePeriodSeconds 30"},
				message:  []string{"PodGC should have force-deleted it"},
				fixes:    []string{checks.ActionForceDelete}, risks: []report.Risk{report.RiskLow}}},
		// A field manager is the writer's binary name (the apiserver falls back to the User-Agent's
		// first word, managerOrUserAgent in k8s.io/apiserver/pkg/endpoints/handlers/create.go; client-go
		// sends the program's file name, DefaultKubernetesUserAgent in k8s.io/client-go/rest/config.go),
		// so no workload named volume-janitor shows nothing: no finalizer is offered for removal.
		{name: "node missing, already force-deleted, a finalizer whose owner was not found: no fix",
			world: func(*testing.T) checktest.Cluster {
				w := healthy()
				w.Pods = []*corev1.Pod{replicaSetPod("target", checktest.OnNode("ip-10-0-3-7"), checktest.Deleted(12*time.Minute, 0),
					checktest.Finalizers("volume-janitor", "example.com/release-volume"))}
				return w
			},
			want: want{rootCause: RootCauseNodeMissing, node: "ip-10-0-3-7",
				evidence: []string{"only finalizers hold it", "finalizer example.com/release-volume: not in the known-finalizer table; added by field manager volume-janitor",
					"does not show the owner is gone"}}},
		{name: "node missing, grace running, finalizer owner not found: force-delete only",
			world: func(*testing.T) checktest.Cluster {
				w := healthy()
				w.Pods = []*corev1.Pod{replicaSetPod("target", checktest.OnNode("ip-10-0-3-7"), checktest.Deleted(12*time.Minute, 30),
					checktest.Finalizers("volume-janitor", "example.com/release-volume"))}
				return w
			},
			want: want{rootCause: RootCauseNodeMissing, node: "ip-10-0-3-7",
				fixes: []string{checks.ActionForceDelete}}},
		{name: "node missing, StatefulSet pod with a claim: force delete is riskier",
			world: func(*testing.T) checktest.Cluster {
				w := healthy()
				w.Pods = []*corev1.Pod{replicaSetPod("target", statefulSetPod(), checktest.Claim("data-db-0"), checktest.OnNode("ip-10-0-3-7"), checktest.Deleted(12*time.Minute, 30))}
				return w
			},
			want: want{rootCause: RootCauseNodeMissing, node: "ip-10-0-3-7", fixes: []string{checks.ActionForceDelete},
				risks: []report.Risk{report.RiskMedium}}},
		{name: "node not ready: kubelet stopped heartbeating",
			world: func(*testing.T) checktest.Cluster {
				w := healthy()
				w.Nodes = append(w.Nodes, checktest.Node("node-b", checktest.Ready(corev1.ConditionUnknown, 14*time.Minute)))
				w.NodeLeases = append(w.NodeLeases, checktest.NodeLease("node-b", 15*time.Minute))
				w.Pods = []*corev1.Pod{replicaSetPod("target", checktest.OnNode("node-b"), checktest.Deleted(8*time.Minute, 30))}
				return w
			},
			want: want{rootCause: RootCauseNodeNotReady, node: "node-b",
				summary: []string{"node-b", "Ready=Unknown"},
				evidence: []string{"node node-b Ready=Unknown since", "NodeStatusUnknown", "Lease kube-node-lease/node-b last renewed", "(15m ago)",
					"taints: node.kubernetes.io/unreachable:NoExecute", "last status heartbeat"},
				fixes: []string{checks.ActionForceDelete}, risks: []report.Risk{report.RiskMedium}}},
		{name: "node not ready, pod with a persistent volume: force delete is high risk",
			world: func(*testing.T) checktest.Cluster {
				w := healthy()
				w.Nodes = append(w.Nodes, checktest.Node("node-b", checktest.Ready(corev1.ConditionUnknown, 14*time.Minute)))
				w.NodeLeases = append(w.NodeLeases, checktest.NodeLease("node-b", 15*time.Minute))
				w.Pods = []*corev1.Pod{replicaSetPod("target", checktest.Claim("uploads"), checktest.OnNode("node-b"), checktest.Deleted(8*time.Minute, 30))}
				return w
			},
			want: want{rootCause: RootCauseNodeNotReady, node: "node-b", fixes: []string{checks.ActionForceDelete}, risks: []report.Risk{report.RiskHigh}}},
		{name: "node not ready, StatefulSet pod: force delete is high risk",
			world: func(*testing.T) checktest.Cluster {
				w := healthy()
				w.Nodes = append(w.Nodes, checktest.Node("node-b", checktest.Ready(corev1.ConditionUnknown, 14*time.Minute)))
				w.NodeLeases = append(w.NodeLeases, checktest.NodeLease("node-b", 15*time.Minute))
				w.Pods = []*corev1.Pod{replicaSetPod("target", statefulSetPod(), checktest.OnNode("node-b"), checktest.Deleted(8*time.Minute, 30))}
				return w
			},
			want: want{rootCause: RootCauseNodeNotReady, node: "node-b", fixes: []string{checks.ActionForceDelete}, risks: []report.Risk{report.RiskHigh}}},
		{name: "node not ready without a Lease, out-of-service taint set: PodGC is not running",
			world: func(*testing.T) checktest.Cluster {
				w := healthy()
				n := checktest.Node("node-b", checktest.Ready(corev1.ConditionUnknown, 30*time.Minute))
				n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: "node.kubernetes.io/out-of-service", Value: "nodeshutdown", Effect: corev1.TaintEffectNoExecute})
				w.Nodes = append(w.Nodes, n)
				w.Pods = []*corev1.Pod{replicaSetPod("target", checktest.OnNode("node-b"), checktest.Deleted(8*time.Minute, 30))}
				return w
			},
			want: want{rootCause: RootCauseNodeNotReady, node: "node-b",
				evidence: []string{"no Lease kube-node-lease/node-b", "out-of-service is set", "PodGC is not running"},
				fixes:    []string{checks.ActionForceDelete}}},
		{name: "near miss: node NotReady but its kubelet still renews the Lease",
			world: func(*testing.T) checktest.Cluster {
				w := healthy()
				w.Nodes = append(w.Nodes, checktest.Node("node-b", checktest.Ready(corev1.ConditionFalse, 20*time.Minute)))
				w.NodeLeases = append(w.NodeLeases, checktest.NodeLease("node-b", 3*time.Second))
				w.Pods = []*corev1.Pod{replicaSetPod("target", checktest.OnNode("node-b"), checktest.Deleted(8*time.Minute, 30))}
				return w
			},
			want: want{rootCause: RootCauseKubeletKillFailing, node: "node-b",
				evidence: []string{"Ready=False", "KubeletNotReady", "last renewed"}}},
		{name: "near miss: node not ready, pod already deleted with grace 0: the finalizer is the blocker",
			world: func(*testing.T) checktest.Cluster {
				w := healthy()
				w.Nodes = append(w.Nodes, checktest.Node("node-b", checktest.Ready(corev1.ConditionUnknown, 14*time.Minute)))
				w.NodeLeases = append(w.NodeLeases, checktest.NodeLease("node-b", 15*time.Minute))
				w.Pods = []*corev1.Pod{replicaSetPod("target", checktest.OnNode("node-b"), checktest.Deleted(8*time.Minute, 0), checktest.Finalizers("volume-janitor", "example.com/release-volume"))}
				return w
			},
			want: want{rootCause: RootCauseFinalizerOwnerNotActing, node: "node-b", summary: []string{"its owner was not found"}}},
		{name: "kwok v0.5.0 never ran pod-remove-finalizer",
			world: func(*testing.T) checktest.Cluster {
				w := checktest.Cluster{
					Nodes:       []*corev1.Node{kwokNode("kwok-node-0", corev1.ConditionTrue, 3*time.Hour)},
					NodeLeases:  []*coordinationv1.Lease{checktest.NodeLease("kwok-node-0", 2*time.Second)},
					Deployments: []*appsv1.Deployment{checktest.KwokDeployment("v0.5.0")},
				}
				w.Pods = []*corev1.Pod{replicaSetPod("target", checktest.OnNode("kwok-node-0"), checktest.Deleted(6*time.Minute, 30), checktest.Finalizers("kwok", "kwok.x-k8s.io/fake"))}
				return w
			},
			want: want{rootCause: RootCauseKwokStageNotRun, node: "kwok-node-0",
				evidence: []string{"finalizer kwok.x-k8s.io/fake is still on the pod (added by field manager kwok)",
					"annotation kwok.x-k8s.io/node=fake", "kwok controller: Deployment kube-system/kwok-controller: 1/1 available, image registry.k8s.io/kwok/kwok:v0.5.0",
					"kwok v0.5.0 is in the range of kubernetes-sigs/kwok#958"},
				message: []string{"kubernetes-sigs/kwok#958", "v0.5.1"},
				refs:    []string{"kubernetes-sigs/kwok#958", "kubernetes-sigs/kwok#962"},
				fixes:   []string{checks.ActionRemoveFinalizer + ":kwok.x-k8s.io/fake"}, risks: []report.Risk{report.RiskLow}}},
		{name: "kwok v0.5.1 is outside the bug's range",
			world: func(*testing.T) checktest.Cluster {
				w := checktest.Cluster{
					Nodes:       []*corev1.Node{kwokNode("kwok-node-0", corev1.ConditionTrue, 3*time.Hour)},
					NodeLeases:  []*coordinationv1.Lease{checktest.NodeLease("kwok-node-0", 2*time.Second)},
					Deployments: []*appsv1.Deployment{checktest.KwokDeployment("v0.5.1")},
				}
				w.Pods = []*corev1.Pod{replicaSetPod("target", checktest.OnNode("kwok-node-0"), checktest.Deleted(6*time.Minute, 30), checktest.Finalizers("kwok", "kwok.x-k8s.io/fake"))}
				return w
			},
			want: want{rootCause: RootCauseKwokStageNotRun, node: "kwok-node-0",
				evidence: []string{"outside the range of kubernetes-sigs/kwok#958"}, message: []string{"kwok is alive"},
				noRefs: []string{"kwok#958"}, fixes: []string{checks.ActionRemoveFinalizer + ":kwok.x-k8s.io/fake"}}},
		{name: "kwok manages all nodes by flag; no finalizer, kwok never ended the grace period",
			world: func(*testing.T) checktest.Cluster {
				w := healthy()
				w.Deployments = []*appsv1.Deployment{checktest.Deployment("kwok-system", "kwok", "kwok", "mirror.example/kwok:v0.6.1", 1, 1, "--manage-all-nodes=true")}
				w.Pods = []*corev1.Pod{replicaSetPod("target", checktest.Deleted(6*time.Minute, 30))}
				return w
			},
			want: want{rootCause: RootCauseKwokStageNotRun, node: "node-a",
				evidence: []string{"kwok Deployment kwok-system/kwok runs with --manage-all-nodes=true", "deletionGracePeriodSeconds 30: kwok has not deleted"},
				message:  []string{"Restarting kwok"}}},
		{name: "kwok manages nodes by label selector",
			world: func(*testing.T) checktest.Cluster {
				w := healthy()
				w.Nodes[0].Labels["sim"] = "true"
				w.Deployments = []*appsv1.Deployment{checktest.KwokDeployment("v0.7.0", "--manage-nodes-with-label-selector=sim=true")}
				w.Pods = []*corev1.Pod{replicaSetPod("target", checktest.Deleted(6*time.Minute, 30))}
				return w
			},
			want: want{rootCause: RootCauseKwokStageNotRun, node: "node-a", evidence: []string{"--manage-nodes-with-label-selector=sim=true"}}},
		{name: "kwok stopped, pod already deleted with grace 0 still holds kwok's finalizer",
			world: func(*testing.T) checktest.Cluster {
				w := checktest.Cluster{
					Nodes:      []*corev1.Node{kwokNode("kwok-node-0", corev1.ConditionUnknown, 20*time.Minute)},
					NodeLeases: []*coordinationv1.Lease{checktest.NodeLease("kwok-node-0", 21*time.Minute)},
				}
				w.Pods = []*corev1.Pod{replicaSetPod("target", checktest.OnNode("kwok-node-0"), checktest.Deleted(6*time.Minute, 0), checktest.Finalizers("kwok", "kwok.x-k8s.io/fake"))}
				return w
			},
			want: want{rootCause: RootCauseKwokStageNotRun, node: "kwok-node-0",
				evidence: []string{"no kwok controller Deployment found"}, message: []string{"not heartbeating either"},
				fixes: []string{checks.ActionRemoveFinalizer + ":kwok.x-k8s.io/fake"}}},
		{name: "kwok node stopped heartbeating during the grace period: node-not-ready comes first",
			world: func(*testing.T) checktest.Cluster {
				w := checktest.Cluster{
					Nodes:      []*corev1.Node{kwokNode("kwok-node-0", corev1.ConditionUnknown, 20*time.Minute)},
					NodeLeases: []*coordinationv1.Lease{checktest.NodeLease("kwok-node-0", 21*time.Minute)},
				}
				w.Pods = []*corev1.Pod{replicaSetPod("target", checktest.OnNode("kwok-node-0"), checktest.Deleted(6*time.Minute, 30))}
				return w
			},
			want: want{rootCause: RootCauseNodeNotReady, node: "kwok-node-0", fixes: []string{checks.ActionForceDelete}}},
		{name: "OpenKruise preDelete hook finalizer holds a deleted pod",
			world: func(t *testing.T) checktest.Cluster {
				w := healthy()
				w.Workloads = []*kruise.Workload{cloneSet(t, map[string]any{"finalizersHandler": []any{"example.com/unregister"}})}
				w.Pods = []*corev1.Pod{cloneSetPod(checktest.Deleted(10*time.Minute, 0), checktest.Stopped(), checktest.Finalizers("registry-agent", "example.com/unregister"))}
				w.Pods[0].Name = "target"
				return w
			},
			want: want{rootCause: RootCauseKruisePreDeleteHook, node: "node-a",
				summary: []string{"PreparingDelete for 20m", "example.com/unregister"},
				evidence: []string{"label lifecycle.apps.kruise.io/state=PreparingDelete since", "CloneSet shop/cart spec.lifecycle.preDelete: finalizersHandler [example.com/unregister]",
					"hook finalizer example.com/unregister is still on the pod (added by field manager registry-agent)"}}},
		{name: "OpenKruise preDelete hook label holds a pod chosen for deletion",
			world: func(t *testing.T) checktest.Cluster {
				w := healthy()
				w.Workloads = []*kruise.Workload{cloneSet(t, map[string]any{"labelsHandler": map[string]any{"example.com/in-lb": "true"}})}
				p := cloneSetPod()
				p.Name = "target"
				p.Labels["example.com/in-lb"] = "true"
				w.Pods = []*corev1.Pod{p}
				return w
			},
			want: want{rootCause: RootCauseKruisePreDeleteHook, node: "node-a",
				evidence: []string{"hook label example.com/in-lb=true is still on the pod"}, message: []string{"was chosen for deletion"}}},
		{name: "near miss: PreparingDelete for less than the threshold",
			threshold: time.Hour,
			world: func(t *testing.T) checktest.Cluster {
				w := healthy()
				w.Workloads = []*kruise.Workload{cloneSet(t, map[string]any{"labelsHandler": map[string]any{"example.com/in-lb": "true"}})}
				p := cloneSetPod()
				p.Name = "target"
				p.Labels["example.com/in-lb"] = "true"
				w.Pods = []*corev1.Pod{p}
				return w
			}},
		{name: "near miss: preDelete hook already released, another finalizer holds the pod",
			world: func(t *testing.T) checktest.Cluster {
				w := healthy()
				w.Workloads = []*kruise.Workload{cloneSet(t, map[string]any{"finalizersHandler": []any{"example.com/unregister"}})}
				w.Pods = []*corev1.Pod{cloneSetPod(checktest.Deleted(10*time.Minute, 0), checktest.Stopped(), checktest.Finalizers("backup-agent", "example.com/snapshot"))}
				w.Pods[0].Name = "target"
				return w
			},
			want: want{rootCause: RootCauseFinalizerOwnerNotActing, node: "node-a", evidence: []string{"no workload named backup-agent"}}},
		{name: "kubelet cannot kill the container",
			world: func(*testing.T) checktest.Cluster {
				w := healthy()
				p := replicaSetPod("target", checktest.Deleted(9*time.Minute, 30))
				w.Pods = []*corev1.Pod{p}
				w.Events = []*corev1.Event{
					eventAbout(checktest.RefTo("v1", "Pod", p), corev1.EventTypeWarning, "FailedKillPod", "kubelet",
						`error killing pod: failed to "KillContainer" for "app" with KillContainerError: "rpc error: code = DeadlineExceeded desc = context deadline exceeded"`, 14, time.Minute),
					eventAbout(checktest.RefTo("v1", "Pod", p), corev1.EventTypeNormal, "Killing", "kubelet", "Stopping container app", 1, 10*time.Minute),
				}
				return w
			},
			want: want{rootCause: RootCauseKubeletKillFailing, node: "node-a",
				evidence: []string{"Warning FailedKillPod from kubelet (x14", "KillContainerError", "containers still running: app", "node node-a Ready=True"},
				noEvid:   []string{"Stopping container"},
				message:  []string{"reports FailedKillPod"}}},
		{name: "kubelet silent: no event, containers stopped, grace never ended",
			world: func(*testing.T) checktest.Cluster {
				w := healthy()
				w.Pods = []*corev1.Pod{replicaSetPod("target", checktest.Deleted(9*time.Minute, 30), checktest.Stopped())}
				return w
			},
			want: want{rootCause: RootCauseKubeletKillFailing, node: "node-a", evidence: []string{"no kubelet Warning event about this pod"}}},
		{name: "kubelet first, then the finalizer",
			world: func(*testing.T) checktest.Cluster {
				w := healthy()
				w.Pods = []*corev1.Pod{replicaSetPod("target", checktest.Deleted(9*time.Minute, 30), checktest.Finalizers("volume-janitor", "example.com/release-volume"))}
				return w
			},
			want: want{rootCause: RootCauseKubeletKillFailing, node: "node-a",
				evidence: []string{"after the kubelet: finalizer example.com/release-volume: not in the known-finalizer table; added by field manager volume-janitor"}}},
		{name: "pod with two finalizers, one owner not found and one running: nothing removed",
			world: func(*testing.T) checktest.Cluster {
				w := healthy()
				w.Deployments = []*appsv1.Deployment{checktest.Deployment("backup", "backup-agent", "agent", "acme/backup-agent:2.3.0", 2, 2)}
				w.Pods = []*corev1.Pod{replicaSetPod("target", checktest.Deleted(9*time.Minute, 0), checktest.Stopped(),
					checktest.Finalizers("volume-janitor", "example.com/release-volume"), checktest.Finalizers("backup-agent", "backup.acme.io/snapshot"))}
				return w
			},
			want: want{rootCause: RootCauseFinalizerOwnerNotActing, node: "node-a",
				evidence: []string{"finalizer example.com/release-volume: not in the known-finalizer table; added by field manager volume-janitor (metadata.managedFields); no workload named volume-janitor",
					"finalizer backup.acme.io/snapshot: not in the known-finalizer table; added by field manager backup-agent", "named like the field manager: Deployment backup/backup-agent: 2/2 available"},
				message: []string{"its owner was not found", "runs but has not removed it"}}},
		{name: "near miss: the finalizer's owner runs and is healthy: not missing",
			world: func(*testing.T) checktest.Cluster {
				w := healthy()
				w.Deployments = []*appsv1.Deployment{checktest.Deployment("backup", "backup-agent", "agent", "acme/backup-agent:2.3.0", 2, 2)}
				p := replicaSetPod("target", checktest.Deleted(9*time.Minute, 0), checktest.Stopped(), checktest.Finalizers("backup-agent", "backup.acme.io/snapshot"))
				w.Pods = []*corev1.Pod{p}
				w.Events = []*corev1.Event{eventAbout(checktest.RefTo("v1", "Pod", p), corev1.EventTypeWarning, "SnapshotFailed", "backup-agent",
					"snapshot of volume data failed: quota exceeded", 5, 2*time.Minute)}
				return w
			},
			want: want{rootCause: RootCauseFinalizerOwnerNotActing, node: "node-a",
				evidence: []string{"Deployment backup/backup-agent: 2/2 available", "Warning SnapshotFailed from backup-agent (x5"},
				message:  []string{"runs but has not removed it"}}},
		{name: "Job tracking finalizer: built-in owner is not acting",
			world: func(*testing.T) checktest.Cluster {
				w := healthy()
				w.Pods = []*corev1.Pod{replicaSetPod("target", checktest.Deleted(9*time.Minute, 0), checktest.Stopped(), checktest.Finalizers("kube-controller-manager", "batch.kubernetes.io/job-tracking"))}
				return w
			},
			want: want{rootCause: RootCauseFinalizerOwnerNotActing, node: "node-a",
				evidence: []string{"owner Job controller (kube-controller-manager) (known-finalizer table)", "built into the control plane"}}},
		{name: "pod read only in metadata: the finalizer is still diagnosed",
			world: func(*testing.T) checktest.Cluster {
				w := healthy()
				w.MetaOnlyPods = []*corev1.Pod{replicaSetPod("target", checktest.Deleted(9*time.Minute, 30), checktest.Finalizers("volume-janitor", "example.com/release-volume"))}
				w.Unread = map[snapshot.Input]error{snapshot.InputPods: errors.New("get Pods: timeout")}
				return w
			},
			want: want{rootCause: RootCauseFinalizerOwnerNotActing, node: ""}},
		{name: "nodes Unread: a missing node is not claimed",
			world: func(*testing.T) checktest.Cluster {
				w := healthy()
				w.Nodes, w.NodeLeases = nil, nil
				w.Unread = map[snapshot.Input]error{snapshot.InputNodes: errors.New("forbidden: list nodes")}
				w.Pods = []*corev1.Pod{replicaSetPod("target", checktest.OnNode("ip-10-0-3-7"), checktest.Deleted(12*time.Minute, 30))}
				return w
			},
			want: want{rootCause: RootCauseKubeletKillFailing, node: "ip-10-0-3-7", evidence: []string{"nodes were not read"}}},
		{name: "kwok manages a single node by flag",
			world: func(*testing.T) checktest.Cluster {
				w := healthy()
				w.Deployments = []*appsv1.Deployment{checktest.KwokDeployment("v0.6.0", "--manage-single-node=node-a")}
				w.Pods = []*corev1.Pod{replicaSetPod("target", checktest.Deleted(6*time.Minute, 30))}
				return w
			},
			want: want{rootCause: RootCauseKwokStageNotRun, node: "node-a", evidence: []string{"--manage-single-node=node-a"}}},
		{name: "near miss: kwok manages another single node",
			world: func(*testing.T) checktest.Cluster {
				w := healthy()
				w.Deployments = []*appsv1.Deployment{checktest.KwokDeployment("v0.6.0", "--manage-single-node=node-z")}
				w.Pods = []*corev1.Pod{replicaSetPod("target", checktest.Deleted(6*time.Minute, 30))}
				return w
			},
			want: want{rootCause: RootCauseKubeletKillFailing, node: "node-a"}},
		{name: "near miss: pod still within its grace period",
			zero: true,
			world: func(*testing.T) checktest.Cluster {
				w := healthy()
				w.Nodes = append(w.Nodes, checktest.Node("node-b", checktest.Ready(corev1.ConditionUnknown, 14*time.Minute)))
				w.Pods = []*corev1.Pod{replicaSetPod("target", checktest.OnNode("node-b"), checktest.Deleted(-20*time.Second, 30))}
				return w
			}},
		{name: "near miss: pod deleted 1s ago",
			threshold: fiveMin,
			world: func(*testing.T) checktest.Cluster {
				w := healthy()
				w.Pods = []*corev1.Pod{replicaSetPod("target", checktest.OnNode("gone"), checktest.Deleted(time.Second, 0), checktest.Finalizers("volume-janitor", "example.com/release-volume"))}
				return w
			}},
		{name: "the same pod is reported at once with --min-age 0s",
			zero: true,
			world: func(*testing.T) checktest.Cluster {
				w := healthy()
				w.Pods = []*corev1.Pod{replicaSetPod("target", checktest.OnNode("gone"), checktest.Deleted(time.Second, 0), checktest.Finalizers("volume-janitor", "example.com/release-volume"))}
				return w
			},
			want: want{rootCause: RootCauseNodeMissing, node: "gone"}},
		{name: "near miss: a running pod",
			world: func(*testing.T) checktest.Cluster {
				w := healthy()
				w.Pods = []*corev1.Pod{replicaSetPod("target")}
				return w
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			th := fiveMin
			switch {
			case c.zero:
				th = 0
			case c.threshold > 0:
				th = c.threshold
			}
			fs := New().Run(c.world(t).Snapshot(), th)
			expect(t, fs, "target", c.want)
		})
	}
}
