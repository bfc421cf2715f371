package terminating

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/checktest"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// TestNodesReadByName: `why` reads the nodes its pods name one by one instead of listing them.
// A node is gone only when the scan asked for it and the apiserver had none; a name it never
// read says nothing, so a force-delete is never offered on a node that was merely not read.
func TestNodesReadByName(t *testing.T) {
	const node = "ip-10-0-3-7"
	pod := func() *corev1.Pod {
		return replicaSetPod("target", checktest.OnNode(node), checktest.Deleted(12*time.Minute, 30))
	}
	for _, c := range []struct {
		name   string
		world  checktest.Cluster
		root   string // "" for none of the node root causes
		evWant string
	}{
		{name: "name read, no such node: node-missing, as with a list",
			world: checktest.Cluster{Pods: []*corev1.Pod{pod()}, NodesByName: map[string]bool{node: true}},
			root:  RootCauseNodeMissing, evWant: "spec.nodeName " + node + ": no such Node"},
		{name: "name never read: nothing concluded about the node",
			world: checktest.Cluster{Pods: []*corev1.Pod{pod()}, NodesByName: map[string]bool{"node-a": true},
				Nodes: []*corev1.Node{readyNode("node-a")}}},
		{name: "node read by name, NotReady, its Lease gone: node-not-ready",
			world: checktest.Cluster{Pods: []*corev1.Pod{pod()}, NodesByName: map[string]bool{node: true},
				Nodes: []*corev1.Node{checktest.Node(node, checktest.Ready(corev1.ConditionUnknown, 10*time.Minute))}},
			root: RootCauseNodeNotReady, evWant: "no Lease kube-node-lease/" + node},
		{name: "node read by name, NotReady, its Lease unreadable: no stale heartbeat claimed from it",
			world: checktest.Cluster{Pods: []*corev1.Pod{pod()}, NodesByName: map[string]bool{node: true},
				Nodes:  []*corev1.Node{checktest.Node(node, checktest.Ready(corev1.ConditionFalse, 10*time.Minute))},
				Unread: map[snapshot.Input]error{snapshot.InputNodeLeases: errors.New("get leases: connection reset")}}},
		{name: "node read by name, Ready with a fresh Lease: the kubelet is not the cause",
			world: checktest.Cluster{Pods: []*corev1.Pod{pod()}, NodesByName: map[string]bool{node: true},
				Nodes:      []*corev1.Node{readyNode(node)},
				NodeLeases: []*coordinationv1.Lease{checktest.NodeLease(node, 4*time.Second)}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := c.world.Snapshot()
			if got := New().(checks.ReadDeclarer).DeclareReads(s).NodesDue(s); !slices.Equal(got, []string{node}) {
				t.Errorf("declared nodes %v, want the pod's node", got)
			}
			fs := New().Run(s, 5*time.Minute)
			var f *report.Finding
			for i := range fs {
				if fs[i].Object.Name == "target" {
					f = &fs[i]
				}
			}
			nodeCause := f != nil && (f.RootCause.ID == RootCauseNodeMissing || f.RootCause.ID == RootCauseNodeNotReady)
			switch {
			case c.root == "" && nodeCause:
				t.Fatalf("root cause %s from a node the scan did not see: %v", f.RootCause.ID, f.RootCause.Evidence)
			case c.root == "":
				if f != nil && slices.ContainsFunc(f.Fixes, func(x report.Fix) bool { return x.Action == checks.ActionForceDelete }) {
					t.Errorf("force-delete offered without a node verdict: %+v", f.Fixes)
				}
			case f == nil || f.RootCause.ID != c.root:
				t.Fatalf("finding %+v, want root cause %s", f, c.root)
			case !slices.ContainsFunc(f.RootCause.Evidence, func(l string) bool { return strings.Contains(l, c.evWant) }):
				t.Errorf("evidence lacks %q: %v", c.evWant, f.RootCause.Evidence)
			}
		})
	}
}
