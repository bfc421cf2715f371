package e2e

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/scenario"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

var roSidecarSets = schema.GroupVersionResource{Group: "apps.kruise.io", Version: "v1alpha1", Resource: "sidecarsets"}

// A SidecarSet whose update stopped on a leaked in-flight expectation, as the v1.9.0 SidecarSet
// controller leaves it (Processor.UpdateSidecarSet, pkg/controller/sidecarset/sidecarset_processor.go):
// status written before the expectation check, then nothing; pods keep the old hash. The test
// writes what the manager would have (no kruise-manager runs), and the leader's log through the
// real pods/log path that kwok serves. Without the log line the finding proposes no write; with
// it, restart-controller-leader, high risk on the single replica; paused, nothing.
func TestRolloutStalledSidecarSet(t *testing.T) {
	t.Parallel()
	pluginBinary(t)
	k := startKruiseCluster(t)
	k.node(t, krKwokNode, true)
	k.manager(t, krLogsNamespace, "v1.9.0", nil, krKwokNode, true)
	const ns = "ss-inflight"
	k.namespace(t, ns)

	ss := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps.kruise.io/v1alpha1", "kind": "SidecarSet",
		"metadata": map[string]any{"name": "mesh", "annotations": map[string]any{"kruise.io/sidecarset-hash": "h2"}},
		"spec": map[string]any{"selector": map[string]any{"matchLabels": map[string]any{"app": "web"}},
			"containers": []any{map[string]any{"name": "proxy", "image": "envoy:1.31"}}},
	}}
	created, err := k.dyn.Resource(roSidecarSets).Create(k.ctx, ss, metav1.CreateOptions{FieldManager: "kubectl-client-side-apply"})
	if err != nil {
		t.Fatal(err)
	}
	created.Object["status"] = map[string]any{"observedGeneration": created.GetGeneration(), "matchedPods": int64(3),
		"updatedPods": int64(1), "readyPods": int64(3), "updatedReadyPods": int64(1), "latestRevision": "mesh-6b7f"}
	if _, err := k.dyn.Resource(roSidecarSets).UpdateStatus(k.ctx, created, metav1.UpdateOptions{FieldManager: "kruise-manager"}); err != nil {
		t.Fatal(err)
	}
	for name, hash := range map[string]string{"web-a": "h2", "web-b": "h1", "web-c": "h1"} {
		entry := fmt.Sprintf(`{"mesh":{"updateTimestamp":%q,"hash":%q,"sidecarSetName":"mesh","sidecarList":["proxy"]}}`,
			time.Now().UTC().Format(time.RFC3339), hash)
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "web"},
			Annotations: map[string]string{"kruise.io/sidecarset-injected-list": "mesh", "kruise.io/sidecarset-hash": entry}},
			Spec: corev1.PodSpec{NodeName: krKwokNode, Containers: []corev1.Container{{Name: "app", Image: "web:1"}, {Name: "proxy", Image: "envoy:1.30"}}}}
		if _, err := k.cs.CoreV1().Pods(ns).Create(k.ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	scan := func(t *testing.T) *report.Report {
		t.Helper()
		stdout, stderr, code := runPlugin(t, k.c.Kubeconfig, "scan", "-n", ns, "--kruise-namespace", krLogsNamespace,
			"--checks", "rollout-stalled", "--min-age", "0s", "-o", "json")
		if code != 0 && code != 2 {
			t.Fatalf("scan: exit %d\n%s\n%s", code, stdout, stderr)
		}
		var rep report.Report
		if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
			t.Fatalf("scan -o json: %v\n%s", err, stdout)
		}
		return &rep
	}
	only := func(t *testing.T, rep *report.Report) report.Finding {
		t.Helper()
		if len(rep.Findings) != 1 || rep.Findings[0].Object.Kind != "SidecarSet" || rep.Findings[0].Object.Name != "mesh" {
			t.Fatalf("want one finding on SidecarSet mesh, got:\n%s", krSummaries(rep))
		}
		return rep.Findings[0]
	}

	t.Run("no log line: stalled, no write", func(t *testing.T) {
		k.writeLog(t, `I1124 10:00:00.000000       1 cloneset_controller.go:235] "unrelated line"`)
		f := only(t, scan(t))
		if f.RootCause.ID != "sidecarset-update-stalled" || len(f.Fixes) != 0 {
			t.Fatalf("got %s with fixes %+v", f.RootCause.ID, f.Fixes)
		}
	})
	t.Run("the leader logs the update in flight: restart-controller-leader", func(t *testing.T) {
		k.writeLog(t, time.Now().UTC().Format("I0102 15:04:05.000000")+`       1 sidecarset_processor.go:108] "Sidecarset matched pods has some update in flight, will sync later" sidecarSet="mesh" pods=["`+ns+`/web-b"]`)
		f := only(t, scan(t))
		if f.RootCause.ID != "sidecarset-update-in-flight" || len(f.Fixes) != 1 || f.Fixes[0].Action != "restart-controller-leader" {
			t.Fatalf("got %s with fixes %+v", f.RootCause.ID, f.Fixes)
		}
		if f.Fixes[0].Risk != report.RiskHigh {
			t.Errorf("the only manager replica: risk %s, want high", f.Fixes[0].Risk)
		}
	})
	t.Run("paused: the user holds it", func(t *testing.T) {
		patch := []byte(`{"spec":{"updateStrategy":{"paused":true}}}`)
		if _, err := k.dyn.Resource(roSidecarSets).Patch(k.ctx, "mesh", types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "kubectl-patch"}); err != nil {
			t.Fatal(err)
		}
		// observedGeneration follows, as the controller writes it on its next reconcile.
		u, err := k.dyn.Resource(roSidecarSets).Get(k.ctx, "mesh", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_ = unstructured.SetNestedField(u.Object, u.GetGeneration(), "status", "observedGeneration")
		if _, err := k.dyn.Resource(roSidecarSets).UpdateStatus(k.ctx, u, metav1.UpdateOptions{FieldManager: "kruise-manager"}); err != nil {
			t.Fatal(err)
		}
		if rep := scan(t); len(rep.Findings) != 0 {
			t.Fatalf("a paused SidecarSet is not stalled:\n%s", krSummaries(rep))
		}
	})
}

// rolloutCluster is the scenario's cluster (kwok's pod stages, the scheduler and
// kube-controller-manager) with its nodes and the kruise-manager stand-in running, with the
// kruise feature gates named besides the chart's, which rolls out CloneSets and sets their
// Progressing condition as v1.9.0 does (internal/scenario).
func rolloutCluster(t *testing.T, kruiseFeatureGates ...string) *krEnv {
	t.Helper()
	c, files := scenarioCluster(t)
	env := scenario.Env{Kube: c.Clientset(), Dynamic: c.Dynamic(), Files: files, Logf: t.Logf, KruiseFeatureGates: kruiseFeatureGates}
	if _, err := scenario.StartKruiseManager(t.Context(), env); err != nil {
		t.Fatalf("start the kruise-manager stand-in: %v", err)
	}
	return &krEnv{c: c, cs: c.Clientset(), dyn: c.Dynamic(), ctx: t.Context(), logFile: files.ManagerLog}
}

// roPatch applies a merge patch to a CloneSet as `kubectl patch` does.
func roPatch(t *testing.T, k *krEnv, ns, name string, patch map[string]any) {
	t.Helper()
	raw, err := json.Marshal(patch)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k.dyn.Resource(krCloneSets).Namespace(ns).Patch(k.ctx, name, types.MergePatchType, raw,
		metav1.PatchOptions{FieldManager: "kubectl-patch"}); err != nil {
		t.Fatal(err)
	}
}

// roWaitProgressing waits until the stand-in has observed the CloneSet's generation and set its
// Progressing condition to reason.
func roWaitProgressing(t *testing.T, k *krEnv, ns, name, reason string) {
	t.Helper()
	if err := scenario.WaitProgressing(k.ctx, k.dyn, ns, name, reason); err != nil {
		t.Fatal(err)
	}
}

// roRollout is a CloneSet of two replicas rolled out to a new template.
type roRollout struct {
	name      string
	deadline  int64 // spec.progressDeadlineSeconds
	lifecycle map[string]any
	base      map[string]any // merged into spec.template the pods start from
	template  map[string]any // merged into spec.template
	strategy  map[string]any // spec.updateStrategy set with the template
	reason    string         // the Progressing reason the rollout reaches
}

// roRollOut creates the CloneSets (from base when set), waits until each is available, runs
// settled, then changes every template and waits until each Progressing condition has its reason.
func roRollOut(t *testing.T, k *krEnv, ns, updateType string, rollouts []roRollout, settled func()) {
	t.Helper()
	for _, r := range rollouts {
		replicas, spec := int64(2), map[string]any{"progressDeadlineSeconds": r.deadline}
		if r.base != nil {
			// Created without pods, so that they all start from base.
			replicas, spec["replicas"], spec["template"] = 0, int64(2), r.base
		}
		k.cloneSet(t, ns, r.name, replicas, r.lifecycle, updateType)
		roPatch(t, k, ns, r.name, map[string]any{"spec": spec})
	}
	for _, r := range rollouts {
		roWaitProgressing(t, k, ns, r.name, "CloneSetAvailable")
	}
	settled()
	for _, r := range rollouts {
		spec := map[string]any{"template": r.template}
		if r.strategy != nil {
			spec["updateStrategy"] = r.strategy
		}
		roPatch(t, k, ns, r.name, map[string]any{"spec": spec})
	}
	for _, r := range rollouts {
		roWaitProgressing(t, k, ns, r.name, r.reason)
	}
}

// roScan runs scan -n ns --checks rollout-stalled with args and wants exit code want.
func roScan(t *testing.T, k *krEnv, ns string, want int, args ...string) *report.Report {
	t.Helper()
	args = append([]string{"scan", "-n", ns, "--checks", "rollout-stalled", "-o", "json"}, args...)
	stdout, stderr, code := runPlugin(t, k.c.Kubeconfig, args...)
	if code != want {
		t.Fatalf("scan: exit %d, want %d\n%s\n%s", code, want, stdout, stderr)
	}
	var rep report.Report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("scan -o json: %v\n%s", err, stdout)
	}
	return &rep
}

// CloneSet rollouts to a template whose pods the kubelet cannot start, produced by the controllers
// that produce them: the stand-in replaces one pod at a time (ReCreate, maxUnavailable 1 of 2)
// and, past spec.progressDeadlineSeconds, sets Progressing=False/ProgressDeadlineExceeded as
// calculateProgressingStatus does; kwok, as the kubelet, leaves the new pod waiting in
// ImagePullBackOff or CrashLoopBackOff. The scan runs without --min-age, so each rollout's own
// deadline is the threshold. The same broken template rolling out within a 10m deadline, paused,
// or held by its partition is no finding.
func TestRolloutStalledCloneSetPods(t *testing.T) {
	t.Parallel()
	pluginBinary(t)
	k := rolloutCluster(t)
	const ns = "rollouts"
	k.namespace(t, ns)
	broken := func(kubelet, image string) map[string]any {
		return map[string]any{"metadata": map[string]any{"labels": map[string]any{scenario.KubeletLabel: kubelet}},
			"spec": map[string]any{"containers": []any{map[string]any{"name": "app", "image": image}}}}
	}
	pull := broken(scenario.KubeletErrImagePull, "nginx:1.28-typo")
	crash := broken(scenario.KubeletCrashLoopBackOff, "nginx:1.28")
	roRollOut(t, k, ns, "", []roRollout{
		{name: "pull", deadline: 30, template: pull, reason: "ProgressDeadlineExceeded"},
		{name: "crash", deadline: 30, template: crash, reason: "ProgressDeadlineExceeded"},
		{name: "fresh", deadline: 600, template: crash, reason: "CloneSetUpdated"},
		{name: "held", deadline: 30, template: pull, strategy: map[string]any{"paused": true}, reason: "CloneSetPaused"},
		{name: "staged", deadline: 30, template: pull, strategy: map[string]any{"partition": int64(2)}, reason: "ProgressPartitionAvailable"},
	}, func() {})

	rep := roScan(t, k, ns, 2)
	if len(rep.Findings) != 2 {
		t.Fatalf("want findings on pull and crash only, got:\n%s", krSummaries(rep))
	}
	assertFinding(t, krFind(t, rep, "rollout-stalled", "pull"), "image-pull-failing", report.SeverityError,
		[]string{"waits with ImagePullBackOff for image nginx:1.28-typo", `Back-off pulling image "nginx:1.28-typo"`, "0 of them ready"}, nil)
	assertFinding(t, krFind(t, rep, "rollout-stalled", "crash"), "crash-looping", report.SeverityError,
		[]string{"is in CrashLoopBackOff after 5 restarts; last exit code 1 reason Error", "ProgressDeadlineExceeded"}, nil)
}

// In-place rollouts that stop, as the stand-in produces them the way v1.9.0's updatePod and
// inplaceupdate.Update do: a pod an inPlaceUpdate hook is on waits in PreparingUpdate while the
// hook's owner never releases it; a pod updated in place (new image in its spec,
// InPlaceUpdateReady=False, the inplace-update-state annotation) whose containers the kubelet
// (kwok) never restarts keeps reporting the old image. Both pass a 30s progress deadline. The
// same image change within a 10m deadline, paused, or held by its partition is no finding.
func TestRolloutStalledInPlace(t *testing.T) {
	t.Parallel()
	pluginBinary(t)
	k := rolloutCluster(t)
	const ns, drain = "inplace", "example.com/drain"
	k.namespace(t, ns)
	image := map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "app", "image": "nginx:1.28"}}}}
	hook := map[string]any{"inPlaceUpdate": map[string]any{"finalizersHandler": []any{drain}}}
	roRollOut(t, k, ns, "InPlaceIfPossible", []roRollout{
		{name: "hooked", deadline: 30, lifecycle: hook, template: image, reason: "ProgressDeadlineExceeded"},
		{name: "unfinished", deadline: 30, template: image, reason: "ProgressDeadlineExceeded"},
		{name: "fresh", deadline: 600, template: image, reason: "CloneSetUpdated"},
		{name: "held", deadline: 30, template: image, strategy: map[string]any{"paused": true}, reason: "CloneSetPaused"},
		{name: "staged", deadline: 30, template: image, strategy: map[string]any{"partition": int64(2)}, reason: "ProgressPartitionAvailable"},
	}, func() {
		// The hook's owner registers its finalizer on the running pods, and never takes it off.
		pods, err := k.cs.CoreV1().Pods(ns).List(k.ctx, metav1.ListOptions{LabelSelector: "app=hooked"})
		if err != nil {
			t.Fatal(err)
		}
		for i := range pods.Items {
			k.hookActs(t, &pods.Items[i], []string{drain}, nil)
		}
	})

	rep := roScan(t, k, ns, 2)
	if len(rep.Findings) != 2 {
		t.Fatalf("want findings on hooked and unfinished only, got:\n%s", krSummaries(rep))
	}
	assertFinding(t, krFind(t, rep, "rollout-stalled", "hooked"), "inplace-update-hook-pending", report.SeverityError,
		[]string{"is PreparingUpdate since", "held by the inPlaceUpdate hook's finalizer " + drain}, nil)
	assertFinding(t, krFind(t, rep, "rollout-stalled", "unfinished"), "inplace-update-incomplete", report.SeverityError,
		[]string{"InPlaceUpdateReady=False reason StartInPlaceUpdate", "containers still on the old image: app runs nginx:1.27, spec asks nginx:1.28"}, nil)
}
