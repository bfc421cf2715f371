package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/scenario"
	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/scenario/kubelet"
	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/testcluster"
)

// The disruption budget of `fix` against a real control plane. Drifted CloneSets (kruise-manager
// v1.6.3 on apiserver v1.37.1: every pod carries a resizePolicy its template does not, so
// resize-policy-drift proposes evict-pod for each) are fixed while a test-side controller plays
// kruise's CloneSet scale-up (a pod from the template for each missing replica) and kwok makes
// each new pod Ready only after a delay, as a kubelet starting containers would.

// bgReadyDelay is how long kwok takes to make a new pod Running and Ready.
const bgReadyDelay = 4 * time.Second

// TestFixDisruptionBudget: fix evicts the pods of a workload in waves within its maxUnavailable,
// and a watch proves the Ready count never fell below replicas - maxUnavailable.
func TestFixDisruptionBudget(t *testing.T) {
	t.Parallel()
	pluginBinary(t)
	config := filepath.Join(t.TempDir(), "kwok.yaml")
	stages := strings.Replace(kubelet.Stages, "  next:\n    statusTemplate:",
		fmt.Sprintf("  delay:\n    durationMilliseconds: %d\n  next:\n    statusTemplate:", bgReadyDelay.Milliseconds()), 1)
	if stages == kubelet.Stages {
		t.Fatal("could not add a delay to kwok's pod-running stage")
	}
	if err := os.WriteFile(config, []byte(stages), 0o600); err != nil {
		t.Fatal(err)
	}
	// kwok renews its node's Lease (NodeMonitorGracePeriod), so the node stays Ready for the whole
	// test and the node lifecycle controller never marks the pods not Ready.
	c := testcluster.Start(t, testcluster.Options{ControllerManager: true, Scheduler: true, NodeMonitorGracePeriod: scenario.NodeMonitorGracePeriod,
		Kwok: &testcluster.KwokOptions{ManageAllNodes: true, ExtraArgs: []string{"--config=" + config}}})
	c.InstallCRDs(t)
	e := &rzEnv{c: c, cs: c.Clientset(), dyn: c.Dynamic(), kwok: true}
	if _, err := e.cs.CoreV1().Nodes().Create(t.Context(), kwokNode(rzKwokNode), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create node: %v", err)
	}
	e.manager(t, "v1.6.3")

	t.Run("every pod is evicted, one wave at a time, and the CloneSet keeps 2 of 3 Ready", func(t *testing.T) {
		w := e.budgetCloneSet(t, "bg-waves", "web", 3, true)
		r, _ := rzReport(t, pluginOn(c.Kubeconfig).scan(t, rzArgs(w.ns)...))
		for _, p := range w.pods {
			rzFinding(t, r, p.Name, "kruise-drops-resize-policy")
		}
		ready := watchReady(t, e.cs, w.ns, "app="+w.name)
		start := time.Now()
		stdout, stderr, code := pluginOn(c.Kubeconfig).fix(t, "-n", w.ns, "--check", rzCheck, "--min-age", "0s", "--yes", "-o", "json").out()
		t.Logf("fix of 3 pods in 3 waves, replacements Ready after %s: %s", bgReadyDelay, time.Since(start).Round(100*time.Millisecond))
		min, max := ready.stop()
		if code != 0 {
			t.Fatalf("fix: exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		d := fixParse(t, stdout, stderr)
		if d.Summary.Total != 3 || d.Summary.Applied != 3 {
			t.Errorf("summary %+v, want 3 applied\nstderr:\n%s", d.Summary, stderr)
		}
		// 20% of 3 rounded up: maxUnavailable 1, so the CloneSet keeps 2 Ready pods.
		for _, want := range []string{"cloneset.apps.kruise.io/web -n bg-waves: 3 pods, 1 at a time (3 waves); maxUnavailable 1 from its update strategy (maxUnavailable absent: the controller's default 20% of 3, rounded up); keeps 2 of 3 replicas Ready",
			"bg-waves/cloneset/web: wave 1: 1 pod (3 Ready, keeps 2)", "bg-waves/cloneset/web: wave 3: 1 pod", "waiting for Ready pods before the next wave: 2 Ready, keeps 2"} {
			if !strings.Contains(stderr, want) {
				t.Errorf("stderr lacks %q:\n%s", want, stderr)
			}
		}
		if min != 2 || max != 3 {
			t.Errorf("Ready pods during the fix: min %d max %d, want min 2 (replicas 3 - maxUnavailable 1) and max 3", min, max)
		}
		w.waitReplaced(t, e, 3)
		if r, code := rzReport(t, pluginOn(c.Kubeconfig).scan(t, rzArgs(w.ns)...)); code != 0 || len(r.Findings) != 0 {
			t.Errorf("after the fix: scan exit %d, findings %+v", code, r.Findings)
		}
	})

	t.Run("server dry run checks the first wave and touches nothing", func(t *testing.T) {
		w := e.budgetCloneSet(t, "bg-dry", "web", 3, true)
		stdout, stderr, code := pluginOn(c.Kubeconfig).fix(t, "-n", w.ns, "--check", rzCheck, "--min-age", "0s", "--dry-run=server", "-o", "json").out()
		if code != 0 {
			t.Fatalf("fix --dry-run=server: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		d := fixParse(t, stdout, stderr)
		accepted, later := 0, 0
		for _, r := range d.Results {
			switch {
			case r.Status == "dry-run" && strings.Contains(r.Reason, "server dry run accepted the eviction"):
				accepted++
			case r.Status == "dry-run" && strings.Contains(r.Reason, "only the first wave"):
				later++
			}
		}
		if accepted != 1 || later != 2 {
			t.Errorf("results %+v: want 1 eviction checked by the server and 2 left to later waves", d.Results)
		}
		w.untouched(t, e, w.pods...)
	})

	t.Run("--wait=false runs the first wave and defers the rest", func(t *testing.T) {
		w := e.budgetCloneSet(t, "bg-nowait", "web", 3, true)
		stdout, stderr, code := pluginOn(c.Kubeconfig).fix(t, "-n", w.ns, "--check", rzCheck, "--min-age", "0s", "--yes", "--wait=false", "-o", "json").out()
		if code != 3 {
			t.Fatalf("fix --wait=false: exit %d, want 3\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		applied, deferred := bgSplit(t, fixParse(t, stdout, stderr), "--wait=false runs only the first wave")
		if len(applied) != 1 || len(deferred) != 2 {
			t.Fatalf("applied %v deferred %v, want 1 and 2", applied, deferred)
		}
		w.untouched(t, e, w.podsByUID(deferred)...)
	})

	t.Run("replacements that never come: the first wave runs, the rest is deferred after --timeout", func(t *testing.T) {
		w := e.budgetCloneSet(t, "bg-stuck", "web", 3, false)
		stdout, stderr, code := pluginOn(c.Kubeconfig).fix(t, "-n", w.ns, "--check", rzCheck, "--min-age", "0s", "--yes", "--timeout", "5s", "-o", "json").out()
		if code != 3 {
			t.Fatalf("fix: exit %d, want 3\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		applied, deferred := bgSplit(t, fixParse(t, stdout, stderr), "did not allow it within --timeout 5s: the workload had 2 Ready pods and must keep 2")
		if len(applied) != 1 || len(deferred) != 2 {
			t.Fatalf("applied %v deferred %v, want 1 and 2\nstderr:\n%s", applied, deferred, stderr)
		}
		w.untouched(t, e, w.podsByUID(deferred)...)
	})

	t.Run("Ctrl-C between waves stops with a summary of what was done and what was not", func(t *testing.T) {
		w := e.budgetCloneSet(t, "bg-sigint", "web", 3, true)
		stdout, stderr, code := runInterrupted(t, c.Kubeconfig, "waiting for Ready pods before the next wave",
			"fix", "-n", w.ns, "--check", rzCheck, "--min-age", "0s", "--yes", "-o", "json")
		if code != 3 {
			t.Fatalf("fix interrupted: exit %d, want 3\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		applied, deferred := bgSplit(t, fixParse(t, stdout, stderr), "fix was interrupted")
		if len(applied) != 1 || len(deferred) != 2 {
			t.Fatalf("applied %v deferred %v, want 1 and 2\nstderr:\n%s", applied, deferred, stderr)
		}
		if !strings.Contains(stderr, "Interrupted: 1 applied, 0 already resolved, 0 refused, 0 failed, 2 deferred or not attempted") {
			t.Errorf("stderr has no summary of the interrupt:\n%s", stderr)
		}
		w.untouched(t, e, w.podsByUID(deferred)...)
	})

	t.Run("a single replica is refused unless the action is named", func(t *testing.T) {
		w := e.budgetCloneSet(t, "bg-single", "solo", 1, true)
		res := fixOne(t, c.Kubeconfig, 3, "refused", "-n", w.ns, "--check", rzCheck, "--min-age", "0s", "--yes")
		if !strings.Contains(res.Reason, "has 1 replica") || !strings.Contains(res.Reason, "--action evict-pod") {
			t.Errorf("refusal %q does not say why and how to go ahead", res.Reason)
		}
		w.untouched(t, e, w.pods...)
		fixOne(t, c.Kubeconfig, 0, "applied", "-n", w.ns, "--check", rzCheck, "--min-age", "0s", "--yes", "--action", "evict-pod")
		w.waitReplaced(t, e, 1)
	})

	bgDeployment(t, c)
}

// bgCloneSet is a drifted CloneSet and its original pods.
type bgCloneSet struct {
	ns, name string
	uid      types.UID
	replicas int
	revision string
	pods     []*corev1.Pod
}

// budgetCloneSet creates an InPlaceIfPossible CloneSet whose template sets no resizePolicy, with
// replicas pods that carry one (stored when the apiserver defaulted it), waits until they are
// Ready, and, when replace is set, starts its scale-up controller.
func (e *rzEnv) budgetCloneSet(t *testing.T, ns, name string, replicas int, replace bool) *bgCloneSet {
	t.Helper()
	ctx := t.Context()
	createNamespace(t, e.c, ns)
	tpl := rzPodSpec(rzImage(1), nil)
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{
			"replicas":       int64(replicas),
			"selector":       map[string]any{"matchLabels": map[string]any{"app": name}},
			"updateStrategy": map[string]any{"type": "InPlaceIfPossible"},
			"template":       map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": name}}, "spec": rzUnstructured(t, &tpl)},
		},
	}}
	created, err := e.dyn.Resource(rzCloneSets).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create CloneSet: %v", err)
	}
	w := &bgCloneSet{ns: ns, name: name, uid: created.GetUID(), replicas: replicas, revision: name + "-" + utilrand.String(9)}
	// The status kruise writes: every pod on the one revision.
	created.Object["status"] = map[string]any{"observedGeneration": int64(1), "replicas": int64(replicas), "readyReplicas": int64(replicas),
		"availableReplicas": int64(replicas), "updatedReplicas": int64(replicas), "updatedReadyReplicas": int64(replicas),
		"currentRevision": w.revision, "updateRevision": w.revision, "labelSelector": "app=" + name}
	if _, err := e.dyn.Resource(rzCloneSets).Namespace(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{FieldManager: "kruise-manager"}); err != nil {
		t.Fatalf("update CloneSet status: %v", err)
	}
	stored := []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.NotRequired},
		{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.NotRequired}}
	for range replicas {
		p, err := e.bgPod(ctx, w, stored)
		if err != nil {
			t.Fatal(err)
		}
		w.pods = append(w.pods, p)
	}
	eventually(t, time.Minute, fmt.Sprintf("%d pods of %s Ready", replicas, name), func(ctx context.Context) (bool, error) {
		return len(w.serving(ctx, e)) == replicas, nil
	})
	if replace {
		go w.scaleUp(ctx, e)
	}
	return w
}

// bgPod creates one pod of the CloneSet as kruise does, with the given resizePolicy.
func (e *rzEnv) bgPod(ctx context.Context, w *bgCloneSet, policy []corev1.ContainerResizePolicy) (*corev1.Pod, error) {
	id := utilrand.String(5)
	ctrl := true
	spec := rzPodSpec(rzImage(1), policy)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: w.name + "-" + id, Namespace: w.ns,
			Labels: map[string]string{"app": w.name, "controller-revision-hash": w.revision, "apps.kruise.io/cloneset-instance-id": id,
				"lifecycle.apps.kruise.io/state": "Normal"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: w.name,
				UID: w.uid, Controller: &ctrl, BlockOwnerDeletion: &ctrl}}},
		Spec: spec,
	}
	created, err := e.cs.CoreV1().Pods(w.ns).Create(ctx, pod, metav1.CreateOptions{FieldManager: "kruise-manager"})
	if err != nil {
		return nil, fmt.Errorf("create pod of %s: %w", w.name, err)
	}
	return created, nil
}

// scaleUp plays kruise's CloneSet scale-up until the test ends: one pod from the template (no
// resizePolicy) for each replica missing among the pods not being deleted.
func (w *bgCloneSet) scaleUp(ctx context.Context, e *rzEnv) {
	for ctx.Err() == nil {
		pods, err := e.cs.CoreV1().Pods(w.ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + w.name})
		if err == nil {
			active := 0
			for _, p := range pods.Items {
				if p.DeletionTimestamp == nil {
					active++
				}
			}
			for ; active < w.replicas && ctx.Err() == nil; active++ {
				_, _ = e.bgPod(ctx, w, nil) // tried again on the next round
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// serving returns the CloneSet's pods that are Ready and not being deleted.
func (w *bgCloneSet) serving(ctx context.Context, e *rzEnv) []corev1.Pod {
	pods, err := e.cs.CoreV1().Pods(w.ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + w.name})
	if err != nil {
		return nil
	}
	var out []corev1.Pod
	for _, p := range pods.Items {
		if bgServing(&p) {
			out = append(out, p)
		}
	}
	return out
}

// waitReplaced waits until n pods serve, none of them an original, each on the template's policy.
func (w *bgCloneSet) waitReplaced(t *testing.T, e *rzEnv, n int) {
	t.Helper()
	orig := map[types.UID]bool{}
	for _, p := range w.pods {
		orig[p.UID] = true
	}
	eventually(t, time.Minute, "every pod of "+w.name+" replaced and Ready", func(ctx context.Context) (bool, error) {
		pods, err := e.cs.CoreV1().Pods(w.ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + w.name})
		if err != nil {
			return false, err
		}
		ok := 0
		for _, p := range pods.Items {
			if orig[p.UID] {
				return false, nil
			}
			if bgServing(&p) && len(p.Spec.Containers[0].ResizePolicy) == 0 {
				ok++
			}
		}
		return ok == n && len(pods.Items) == n, nil
	})
}

// untouched checks that the pods still exist, unchanged and not being deleted.
func (w *bgCloneSet) untouched(t *testing.T, e *rzEnv, pods ...*corev1.Pod) {
	t.Helper()
	for _, want := range pods {
		p, err := e.cs.CoreV1().Pods(w.ns).Get(t.Context(), want.Name, metav1.GetOptions{})
		if err != nil || p.UID != want.UID || p.DeletionTimestamp != nil {
			t.Errorf("pod %s should be untouched: %v", want.Name, err)
		}
	}
}

func (w *bgCloneSet) podsByUID(uids []string) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range w.pods {
		for _, u := range uids {
			if string(p.UID) == u {
				out = append(out, p)
			}
		}
	}
	return out
}

// bgSplit returns the pod UIDs applied and deferred (with the reason), failing on anything else.
func bgSplit(t *testing.T, d fixDoc, deferredReason string) (applied, deferred []string) {
	t.Helper()
	for _, r := range d.Results {
		switch {
		case r.Status == "applied":
			applied = append(applied, r.Object.UID)
		case r.Status == "deferred" && strings.Contains(r.Reason, deferredReason):
			deferred = append(deferred, r.Object.UID)
		default:
			t.Errorf("unexpected result %+v", r)
		}
	}
	return applied, deferred
}
