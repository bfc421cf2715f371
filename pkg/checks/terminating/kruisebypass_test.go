package terminating

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/checktest"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
)

// directlyDeleted is a CloneSet pod that was Normal when `kubectl delete pod` reached it: the
// hook finalizer came with the pod from the template (field manager kruise-manager), the kubelet
// stopped its containers and the apiserver set the grace period to 0.
func directlyDeleted(fin string) *corev1.Pod {
	return replicaSetPod("target", checktest.OwnedBy("apps.kruise.io/v1alpha1", "CloneSet", "cart", "uid-cs-cart"),
		checktest.Labels(map[string]string{kruise.LabelLifecycleState: "Normal"}),
		checktest.Deleted(10*time.Minute, 0), checktest.Stopped(), checktest.Finalizers("kruise-manager", fin))
}

func TestKruiseHookBypassed(t *testing.T) {
	cases := []struct {
		name  string
		world func(*testing.T) checktest.Cluster
		want  want
	}{
		{name: "preDelete hook finalizer on a pod deleted directly: for a person",
			world: func(t *testing.T) checktest.Cluster {
				w := healthy()
				w.Workloads = []*kruise.Workload{cloneSet(t, map[string]any{"finalizersHandler": []any{"example.com/unregister"}})}
				w.Pods = []*corev1.Pod{directlyDeleted("example.com/unregister")}
				return w
			},
			want: want{rootCause: RootCauseKruiseHookBypassed, node: "node-a",
				summary:  []string{"deleted directly, preDelete hook finalizer example.com/unregister of CloneSet shop/cart never released"},
				evidence: []string{"label lifecycle.apps.kruise.io/state: Normal (never PreparingDelete", "CloneSet shop/cart spec.lifecycle.preDelete.finalizersHandler lists example.com/unregister"},
				message:  []string{"does not create a replacement", "apps.kruise.io/specified-delete"}}},
		{name: "preNormal hook finalizer likewise",
			world: func(t *testing.T) checktest.Cluster {
				w := healthy()
				cs := cloneSet(t, nil)
				cs.Lifecycle.PreDelete = nil
				cs.Lifecycle.PreNormal = &kruise.LifecycleHook{FinalizersHandler: []string{"example.com/warmed"}}
				w.Workloads = []*kruise.Workload{cs}
				w.Pods = []*corev1.Pod{directlyDeleted("example.com/warmed")}
				return w
			},
			want: want{rootCause: RootCauseKruiseHookBypassed, node: "node-a", summary: []string{"preNormal hook finalizer example.com/warmed"}}},
		// The Cluster API finalizer stands in for any hook finalizer the known-finalizer table
		// locates: its owner is shown not installed, so removing it is offered.
		{name: "hook owner shown not installed: removal offered",
			world: func(t *testing.T) checktest.Cluster {
				w := healthy()
				w.Workloads = []*kruise.Workload{cloneSet(t, map[string]any{"finalizersHandler": []any{"machine.cluster.x-k8s.io"}})}
				w.Pods = []*corev1.Pod{directlyDeleted("machine.cluster.x-k8s.io")}
				return w
			},
			want: want{rootCause: RootCauseKruiseHookBypassed, node: "node-a", fixes: []string{checks.ActionRemoveFinalizer + ":machine.cluster.x-k8s.io"},
				message: []string{"not installed"}}},
		{name: "near miss: a finalizer the workload's hooks do not list",
			world: func(t *testing.T) checktest.Cluster {
				w := healthy()
				w.Workloads = []*kruise.Workload{cloneSet(t, map[string]any{"finalizersHandler": []any{"example.com/unregister"}})}
				w.Pods = []*corev1.Pod{directlyDeleted("example.com/snapshot")}
				return w
			},
			want: want{rootCause: RootCauseFinalizerOwnerNotActing, node: "node-a"}},
		{name: "near miss: scaled in through the workload (PreparingDelete) is the hook pending",
			world: func(t *testing.T) checktest.Cluster {
				w := healthy()
				w.Workloads = []*kruise.Workload{cloneSet(t, map[string]any{"finalizersHandler": []any{"example.com/unregister"}})}
				p := cloneSetPod(checktest.Deleted(10*time.Minute, 0), checktest.Stopped(), checktest.Finalizers("registry-agent", "example.com/unregister"))
				p.Name = "target"
				w.Pods = []*corev1.Pod{p}
				return w
			},
			want: want{rootCause: RootCauseKruisePreDeleteHook, node: "node-a"}},
		{name: "near miss: deleted within the threshold",
			world: func(t *testing.T) checktest.Cluster {
				w := healthy()
				w.Workloads = []*kruise.Workload{cloneSet(t, map[string]any{"finalizersHandler": []any{"example.com/unregister"}})}
				p := directlyDeleted("example.com/unregister")
				checktest.Deleted(time.Minute, 0)(p)
				w.Pods = []*corev1.Pod{p}
				return w
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := New().Run(c.world(t).Snapshot(), 5*time.Minute)
			expect(t, fs, "target", c.want)
		})
	}
}
