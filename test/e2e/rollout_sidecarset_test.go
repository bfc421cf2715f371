package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/scenario/kruisemanager"
	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/scenario/kubelet"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

var roSidecarSets = schema.GroupVersionResource{Group: "apps.kruise.io", Version: "v1alpha1", Resource: "sidecarsets"}

// SidecarSet updates run by the kruise-manager stand-in's SidecarSet controller, written from
// v1.9.0's (Processor.UpdateSidecarSet, pkg/controller/sidecarset): status counts, in-place
// sidecar image updates within maxUnavailable that kwok completes by restarting the container,
// and update expectations in the leader's memory. A pod deleted while the controller updates it,
// its delete event handled before the expectation is made (openkruise/kruise#2253), freezes the
// SidecarSet with "update in flight" every second until the leader restarts.
//
// A leader below --v=3 does not log that line: the scan reports sidecarset-update-stalled and
// proposes no write. A leader at --v=4 logs it: sidecarset-update-in-flight with
// restart-controller-leader, which fix applies; the next leader starts with no expectations and
// the update completes. Beside it, an update waiting on the kubelet, a paused one and a
// partitioned one are no finding.
func TestRolloutStalledSidecarSet(t *testing.T) {
	t.Parallel()
	pluginBinary(t)
	k, m := rolloutClusterManager(t)
	const ns = "ss-rollout"
	k.namespace(t, ns)

	sets := []struct {
		name     string
		pods     int
		restarts bool           // kwok restarts the updated sidecar
		strategy map[string]any // spec.updateStrategy set with the new image
	}{
		{name: "ss-leak", pods: 4, restarts: true},
		{name: "ss-kubelet", pods: 2},
		{name: "ss-paused", pods: 2, restarts: true, strategy: map[string]any{"paused": true}},
		{name: "ss-partition", pods: 2, restarts: true, strategy: map[string]any{"partition": 1}},
	}
	for _, s := range sets {
		ssCreate(t, k, s.name)
		for i := range s.pods {
			ssPod(t, k, m, ns, fmt.Sprintf("%s-%d", s.name, i), s.name, s.restarts)
		}
	}
	for _, s := range sets {
		ssWaitStatus(t, k, s.name, int64(s.pods), int64(s.pods), int64(s.pods))
	}

	// A leader at --v=2: the controller does not log its V(3) lines.
	ssManagerVerbosity(t, k, m, 2)
	m.DeletePodInSidecarUpdate("ss-leak")
	for _, s := range sets {
		ssSetImage(t, k, s.name, "envoy:1.31", s.strategy)
	}
	// The first pod updated was deleted before it was expected: nothing more is updated.
	ssWaitStatus(t, k, "ss-leak", 3, 0, 3)
	ssWaitStatus(t, k, "ss-kubelet", 2, 1, 1)
	ssWaitStatus(t, k, "ss-paused", 2, 0, 2)
	ssWaitStatus(t, k, "ss-partition", 2, 1, 2)

	t.Run("leader below --v=3: stalled, no write", func(t *testing.T) {
		if raw, _ := os.ReadFile(k.logFile); strings.Contains(string(raw), "update in flight") {
			t.Fatalf("the leader at --v=2 logged a V(3) line:\n%s", raw)
		}
		f := ssOnly(t, pluginOn(k.c.Kubeconfig).scan(t, roArgs(ns, "--min-age", "0s")...).wantExit(0).agreed())
		if f.RootCause.ID != "sidecarset-update-stalled" || len(f.Fixes) != 0 {
			t.Fatalf("got %s with fixes %+v", f.RootCause.ID, f.Fixes)
		}
		if rep := pluginOn(k.c.Kubeconfig).scan(t, roArgs(ns)...).wantExit(0).agreed(); len(rep.Findings) != 0 {
			t.Errorf("within the 10m threshold nothing is stalled:\n%s", summaries(rep))
		}
	})

	// A leader at --v=4 starts with no expectations: ss-leak completes. The same race again
	// leaks again, and this leader logs it.
	ssManagerVerbosity(t, k, m, 4)
	ssWaitStatus(t, k, "ss-leak", 3, 3, 3)
	m.DeletePodInSidecarUpdate("ss-leak")
	ssSetImage(t, k, "ss-leak", "envoy:1.32", nil)
	ssWaitStatus(t, k, "ss-leak", 2, 0, 2)
	eventually(t, time.Minute, "the leader to log the update in flight", func(context.Context) (bool, error) {
		raw, err := os.ReadFile(k.logFile)
		return strings.Contains(string(raw), `"Sidecarset matched pods has some update in flight, will sync later" sidecarSet="ss-leak"`), err
	})

	t.Run("the leader logs the update in flight: restart-controller-leader, and the update completes", func(t *testing.T) {
		f := ssOnly(t, pluginOn(k.c.Kubeconfig).scan(t, roArgs(ns, "--min-age", "0s")...).wantExit(2).agreed())
		if f.RootCause.ID != "sidecarset-update-in-flight" || len(f.Fixes) != 1 || f.Fixes[0].Action != "restart-controller-leader" ||
			f.Fixes[0].Risk != report.RiskMedium {
			t.Fatalf("got %s with fixes %+v, want restart-controller-leader at medium risk (a second Ready replica)", f.RootCause.ID, f.Fixes)
		}
		leader := m.Leader()
		stdout, stderr, code := pluginOn(k.c.Kubeconfig).fix(t, "-n", ns, "--checks", "rollout-stalled", "--min-age", "0s", f.ID, "--yes", "-o", "json").out()
		if res := krFixResults(t, stdout); code != 0 || len(res) != 1 || res[0].Status != "applied" {
			t.Fatalf("fix: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		eventually(t, 2*time.Minute, "a new leader to update the pods to the current hash", func(ctx context.Context) (bool, error) {
			return m.Leader() != "" && m.Leader() != leader && ssAllUpdated(t, k, ns, "ss-leak", 2), nil
		})
		ssWaitStatus(t, k, "ss-leak", 2, 2, 2)
		if rep := pluginOn(k.c.Kubeconfig).scan(t, roArgs(ns, "--min-age", "0s")...).wantExit(0).agreed(); len(rep.Findings) != 0 {
			t.Errorf("the update completed, yet:\n%s", summaries(rep))
		}
	})
}

// ssCreate creates a SidecarSet injecting proxy envoy:1.30 into pods labelled app=name.
func ssCreate(t *testing.T, k *krEnv, name string) {
	t.Helper()
	ss := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps.kruise.io/v1alpha1", "kind": "SidecarSet", "metadata": map[string]any{"name": name},
		"spec": map[string]any{"selector": map[string]any{"matchLabels": map[string]any{"app": name}},
			"containers": []any{map[string]any{"name": "proxy", "image": "envoy:1.30"}}},
	}}
	if _, err := k.dyn.Resource(roSidecarSets).Create(k.ctx, ss, metav1.CreateOptions{FieldManager: "kubectl-client-side-apply"}); err != nil {
		t.Fatal(err)
	}
}

// ssPod creates a pod the SidecarSet selects, injected as the pod webhook admits it.
func ssPod(t *testing.T, k *krEnv, m *kruisemanager.Manager, ns, name, app string, restarts bool) {
	t.Helper()
	labels := map[string]string{"app": app}
	if restarts {
		labels[kubelet.RestartsLabel] = "true"
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: corev1.PodSpec{NodeSelector: map[string]string{"pool": "main"}, Containers: []corev1.Container{{Name: "app", Image: "web:1"}}}}
	if _, err := m.CreateInjectedPod(k.ctx, pod); err != nil {
		t.Fatal(err)
	}
}

// ssSetImage changes the sidecar's image (and updateStrategy) as `kubectl patch` does.
func ssSetImage(t *testing.T, k *krEnv, name, image string, strategy map[string]any) {
	t.Helper()
	spec := map[string]any{"containers": []any{map[string]any{"name": "proxy", "image": image}}}
	if strategy != nil {
		spec["updateStrategy"] = strategy
	}
	raw, err := json.Marshal(map[string]any{"spec": spec})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k.dyn.Resource(roSidecarSets).Patch(k.ctx, name, types.MergePatchType, raw, metav1.PatchOptions{FieldManager: "kubectl-patch"}); err != nil {
		t.Fatal(err)
	}
}

// ssWaitStatus waits until the controller has written the status of the current generation and
// hash with these counts.
func ssWaitStatus(t *testing.T, k *krEnv, name string, matched, updated, ready int64) {
	t.Helper()
	var last map[string]any
	eventually(t, 2*time.Minute, fmt.Sprintf("SidecarSet %s: matched %d, updated %d, ready %d", name, matched, updated, ready),
		func(ctx context.Context) (bool, error) {
			u, err := k.dyn.Resource(roSidecarSets).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			last, _, _ = unstructured.NestedMap(u.Object, "status")
			n := func(f string) int64 { v, _, _ := unstructured.NestedInt64(u.Object, "status", f); return v }
			return u.GetAnnotations()["kruise.io/sidecarset-hash"] != "" && n("observedGeneration") == u.GetGeneration() &&
				n("matchedPods") == matched && n("updatedPods") == updated && n("readyPods") == ready, nil
		})
	t.Logf("SidecarSet %s status %v", name, last)
}

// ssAllUpdated reports whether the SidecarSet's want pods all carry its current hash and run its
// image.
func ssAllUpdated(t *testing.T, k *krEnv, ns, name string, want int) bool {
	t.Helper()
	u, err := k.dyn.Resource(roSidecarSets).Get(k.ctx, name, metav1.GetOptions{})
	if err != nil {
		return false
	}
	hash := u.GetAnnotations()["kruise.io/sidecarset-hash"]
	var image string
	if cs, _, _ := unstructured.NestedSlice(u.Object, "spec", "containers"); len(cs) == 1 {
		image, _ = cs[0].(map[string]any)["image"].(string)
	}
	pods, err := k.cs.CoreV1().Pods(ns).List(k.ctx, metav1.ListOptions{LabelSelector: "app=" + name})
	if err != nil || len(pods.Items) != want {
		return false
	}
	for _, p := range pods.Items {
		var revs map[string]struct {
			Hash string `json:"hash"`
		}
		if json.Unmarshal([]byte(p.Annotations["kruise.io/sidecarset-hash"]), &revs) != nil || revs[name].Hash != hash {
			return false
		}
		for _, c := range p.Status.ContainerStatuses {
			if c.Name == "proxy" && c.Image != image {
				return false
			}
		}
	}
	return true
}

// ssOnly is the one finding of the scan, on SidecarSet ss-leak.
func ssOnly(t *testing.T, rep *report.Report) report.Finding {
	t.Helper()
	if len(rep.Findings) != 1 || rep.Findings[0].Object.Kind != "SidecarSet" || rep.Findings[0].Object.Name != "ss-leak" {
		t.Fatalf("want one finding on SidecarSet ss-leak, got:\n%s", summaries(rep))
	}
	return rep.Findings[0]
}

// ssManagerVerbosity rolls the manager Deployment out with --v=v and waits until a pod of it leads.
func ssManagerVerbosity(t *testing.T, k *krEnv, m *kruisemanager.Manager, v int) {
	t.Helper()
	deps := k.cs.AppsV1().Deployments(kruisemanager.Namespace)
	d, err := deps.Get(k.ctx, kruisemanager.Deployment, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	args := d.Spec.Template.Spec.Containers[0].Args
	for i, a := range args {
		if strings.HasPrefix(a, "--v=") {
			args[i] = fmt.Sprintf("--v=%d", v)
		}
	}
	if _, err := deps.Update(k.ctx, d, metav1.UpdateOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("--v=%d", v)
	eventually(t, 2*time.Minute, "a manager pod run with "+want+" to lead", func(ctx context.Context) (bool, error) {
		leader := m.Leader()
		if leader == "" {
			return false, nil
		}
		p, err := k.cs.CoreV1().Pods(kruisemanager.Namespace).Get(ctx, leader, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		for _, a := range p.Spec.Containers[0].Args {
			if a == want {
				return m.WaitLeading(ctx, time.Second) == nil, nil
			}
		}
		return false, nil
	})
}
