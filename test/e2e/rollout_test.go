package e2e

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/scenario"
	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/scenario/kruisemanager"
	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/scenario/kubelet"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// rolloutCluster is the scenario's cluster (kwok's pod stages, the scheduler and
// kube-controller-manager) with its nodes and the kruise-manager stand-in running, with the
// kruise feature gates named besides the chart's, which rolls out CloneSets and sets their
// Progressing condition as v1.9.0 does (internal/scenario).
func rolloutCluster(t *testing.T, kruiseFeatureGates ...string) *krEnv {
	t.Helper()
	k, _ := rolloutClusterManager(t, kruiseFeatureGates...)
	return k
}

// rolloutClusterManager is rolloutCluster with the stand-in, for tests that arm its races.
func rolloutClusterManager(t *testing.T, kruiseFeatureGates ...string) (*krEnv, *kruisemanager.Manager) {
	t.Helper()
	c, files := scenarioCluster(t)
	// The rollouts are v1.9.0's: its Deployment image, and its stand-in behaviour where releases differ.
	env := scenario.Env{Kube: c.Clientset(), Dynamic: c.Dynamic(), Files: files, Logf: t.Logf, KruiseFeatureGates: kruiseFeatureGates,
		KruiseVersion: "v1.9.0"}
	m, err := scenario.StartKruiseManager(t.Context(), env)
	if err != nil {
		t.Fatalf("start the kruise-manager stand-in: %v", err)
	}
	return &krEnv{c: c, cs: c.Clientset(), dyn: c.Dynamic(), ctx: t.Context(), logFile: files.ManagerLog}, m
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

// roArgs are the arguments of scan -n ns --checks rollout-stalled, then args.
func roArgs(ns string, args ...string) []string {
	return append([]string{"-n", ns, "--checks", "rollout-stalled", "-o", "json"}, args...)
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
	broken := func(meets, image string) map[string]any {
		return map[string]any{"metadata": map[string]any{"labels": map[string]any{kubelet.Label: meets}},
			"spec": map[string]any{"containers": []any{map[string]any{"name": "app", "image": image}}}}
	}
	pull := broken(kubelet.ErrImagePull, "nginx:1.28-typo")
	crash := broken(kubelet.CrashLoopBackOff, "nginx:1.28")
	roRollOut(t, k, ns, "", []roRollout{
		{name: "pull", deadline: 30, template: pull, reason: "ProgressDeadlineExceeded"},
		{name: "crash", deadline: 30, template: crash, reason: "ProgressDeadlineExceeded"},
		{name: "fresh", deadline: 600, template: crash, reason: "CloneSetUpdated"},
		{name: "held", deadline: 30, template: pull, strategy: map[string]any{"paused": true}, reason: "CloneSetPaused"},
		{name: "staged", deadline: 30, template: pull, strategy: map[string]any{"partition": int64(2)}, reason: "ProgressPartitionAvailable"},
	}, func() {})

	// A stall is dated from the newest change of the pods it waits on, which the stand-in may
	// make a moment after it set the condition: the scan sees both rollouts stalled once their
	// own 30s deadline has passed since then.
	var run *pluginRun
	var rep *report.Report
	eventually(t, time.Minute, "pull and crash to be past their deadline", func(context.Context) (bool, error) {
		run = pluginOn(k.c.Kubeconfig).scan(t, roArgs(ns)...).wantExit(0, 2)
		rep = run.report()
		return run.code == 2 && len(rep.Findings) >= 2, nil
	})
	rep = run.agreed()
	if len(rep.Findings) != 2 {
		t.Fatalf("want findings on pull and crash only, got:\n%s", summaries(rep))
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

	rep := pluginOn(k.c.Kubeconfig).scan(t, roArgs(ns)...).wantExit(2).agreed()
	if len(rep.Findings) != 2 {
		t.Fatalf("want findings on hooked and unfinished only, got:\n%s", summaries(rep))
	}
	assertFinding(t, krFind(t, rep, "rollout-stalled", "hooked"), "inplace-update-hook-pending", report.SeverityError,
		[]string{"is PreparingUpdate since", "held by the inPlaceUpdate hook's finalizer " + drain}, nil)
	assertFinding(t, krFind(t, rep, "rollout-stalled", "unfinished"), "inplace-update-incomplete", report.SeverityError,
		[]string{"InPlaceUpdateReady=False reason StartInPlaceUpdate", "containers still on the old image: app runs nginx:1.27, spec asks nginx:1.28"}, nil)
}
