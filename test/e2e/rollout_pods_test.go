package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/scenario/kubelet"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// roNewPod returns the pod of CloneSet name on its update revision (the one the rollout created).
func roNewPod(t *testing.T, k *krEnv, ns, name string) *corev1.Pod {
	t.Helper()
	rev, _, _ := unstructured.NestedString(k.getCloneSet(t, ns, name).Object, "status", "updateRevision")
	pods, err := k.cs.CoreV1().Pods(ns).List(k.ctx, metav1.ListOptions{LabelSelector: "app=" + name + ",controller-revision-hash=" + rev})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 1 {
		t.Fatalf("want one pod of %s on revision %s, got %d", name, rev, len(pods.Items))
	}
	return &pods.Items[0]
}

// roNeighbours are the healthy neighbours of a stalled rollout: the same template within a 10m
// deadline (still progressing), paused, and held by its partition (2 of 2).
func roNeighbours(template map[string]any) []roRollout {
	return []roRollout{
		{name: "fresh", deadline: 600, template: template, reason: "CloneSetUpdated"},
		{name: "held", deadline: 30, template: template, strategy: map[string]any{"paused": true}, reason: "CloneSetPaused"},
		{name: "staged", deadline: 30, template: template, strategy: map[string]any{"partition": int64(2)}, reason: "ProgressPartitionAvailable"},
	}
}

// roReady wants the pod's Ready condition as the kubelet words it.
func roReady(t *testing.T, p *corev1.Pod, status corev1.ConditionStatus, reason, message string) {
	t.Helper()
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			if c.Status != status || c.Reason != reason || c.Message != message {
				t.Fatalf("pod %s Ready=%s reason %q message %q, want %s %q %q", p.Name, c.Status, c.Reason, c.Message, status, reason, message)
			}
			return
		}
	}
	t.Fatalf("pod %s has no Ready condition", p.Name)
}

// New-revision pods that run and never become Ready, as the kubelet leaves them (kwok's stages:
// Ready only when every container is ready and every spec.readinessGates condition is True,
// GeneratePodReadyCondition's reasons): a readiness probe that fails (ContainersNotReady), and a
// readiness gate no controller sets (ReadinessGatesNotReady; e.g. a load balancer controller's
// target-health gate with the controller not installed). The stand-in counts such a pod updated
// but not ready (calculateStatus with IsPodUpdateReady, cloneset_status.go and
// core/cloneset_core.go, kruise v1.9.0), so the update waits within maxUnavailable and
// calculateProgressingStatus sets ProgressDeadlineExceeded past 30s. The same template within a
// 10m deadline, paused, or held by its partition is no finding.
func TestRolloutStalledPodsNotReady(t *testing.T) {
	t.Parallel()
	pluginBinary(t)
	k := rolloutCluster(t)
	const ns, gate = "not-ready", "target-health.elbv2.k8s.aws/k8s-notready-web-6f1e2d"
	k.namespace(t, ns)
	probe := map[string]any{"metadata": map[string]any{"labels": map[string]any{kubelet.Label: kubelet.ReadinessProbeFailing}},
		"spec": map[string]any{"containers": []any{map[string]any{"name": "app", "image": "nginx:1.28",
			"readinessProbe": map[string]any{"httpGet": map[string]any{"path": "/healthz", "port": int64(8080)}}}}}}
	gated := map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "app", "image": "nginx:1.28"}},
		"readinessGates": []any{map[string]any{"conditionType": gate}}}}
	roRollOut(t, k, ns, "", append([]roRollout{
		{name: "probe", deadline: 30, template: probe, reason: "ProgressDeadlineExceeded"},
		{name: "gated", deadline: 30, template: gated, reason: "ProgressDeadlineExceeded"},
	}, roNeighbours(probe)...), func() {})

	// What the kubelet reports on the new pods is what the check reads.
	roReady(t, roNewPod(t, k, ns, "probe"), corev1.ConditionFalse, "ContainersNotReady", "containers with unready status: [app]")
	roReady(t, roNewPod(t, k, ns, "gated"), corev1.ConditionFalse, "ReadinessGatesNotReady",
		`corresponding condition of pod readiness gate "`+gate+`" does not exist.`)

	// Warnings: below the default --fail-on error.
	rep := pluginOn(k.c.Kubeconfig).scan(t, roArgs(ns)...).wantExit(0).agreed()
	if len(rep.Findings) != 2 {
		t.Fatalf("want findings on probe and gated only, got:\n%s", summaries(rep))
	}
	assertFinding(t, krFind(t, rep, "rollout-stalled", "probe"), "pods-not-ready", report.SeverityWarning,
		[]string{"is not Ready (phase Running): container app not ready", "1 of 2 pods to update are on revision", "0 of them ready",
			"ProgressDeadlineExceeded"}, nil)
	assertFinding(t, krFind(t, rep, "rollout-stalled", "gated"), "pods-not-ready", report.SeverityWarning,
		[]string{"is not Ready (phase Running): readiness gate " + gate + " not True", "0 of them ready"}, nil)
	for _, f := range rep.Findings {
		if strings.Contains(strings.Join(f.RootCause.Evidence, "\n"), "container app not ready") && f.Object.Name == "gated" {
			t.Errorf("gated: its containers are ready, the gate is not:\n%s", strings.Join(f.RootCause.Evidence, "\n"))
		}
	}
}

// A new pod held in PreparingNormal by a preNormal hook nobody satisfies: the team adds a hook
// for its service registration (lifecycle.preNormal labelsHandler) and rolls out before the
// registrar that sets the label runs. v1.9.0 moves a pod to Normal only when IsPodAllHooked
// (refreshPodState, pkg/controller/cloneset/sync/cloneset_update.go); the pod runs and is Ready
// (the pod readiness controller sets KruisePodReady True whatever the state), but a pod not
// Normal is not available (IsPodAvailable, cloneset_sync_utils.go), so the update stops at
// maxUnavailable and the deadline passes. rollout-stalled does not judge the pod itself: it
// reports blocked-by-stuck-pod and points at stuck-preparing-normal's finding on that pod. The
// same rollout within a 10m deadline, paused or partitioned is no finding.
//
// A new pod stuck Terminating is not staged: the stand-in, as v1.9.0, stops counting a pod once
// it has a deletionTimestamp and creates its replacement, so a Terminating new pod holds a
// rollout only alongside another cause (unit test TestTerminatingPodBlocksRollout).
func TestRolloutStalledBlockedByPreparingNormal(t *testing.T) {
	t.Parallel()
	pluginBinary(t)
	k := rolloutCluster(t)
	const ns, label = "prenormal", "example.com/registered"
	k.namespace(t, ns)
	image := map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "app", "image": "nginx:1.28"}}}}
	rollouts := append([]roRollout{{name: "registered", deadline: 30, template: image, reason: "ProgressDeadlineExceeded"}},
		roNeighbours(image)...)
	roRollOut(t, k, ns, "", rollouts, func() {
		for _, r := range rollouts {
			roPatch(t, k, ns, r.name, map[string]any{"spec": map[string]any{"lifecycle": map[string]any{
				"preNormal": map[string]any{"labelsHandler": map[string]any{label: "true"}}}}})
		}
	})
	stuck := roNewPod(t, k, ns, "registered")
	if s := stuck.Labels["lifecycle.apps.kruise.io/state"]; s != "PreparingNormal" {
		t.Fatalf("pod %s lifecycle state %q, want PreparingNormal", stuck.Name, s)
	}
	roReady(t, stuck, corev1.ConditionTrue, "", "")

	t.Run("rollout-stalled alone, each rollout's own deadline", func(t *testing.T) {
		rep := pluginOn(k.c.Kubeconfig).scan(t, roArgs(ns)...).wantExit(0).agreed()
		if len(rep.Findings) != 1 {
			t.Fatalf("want a finding on registered only, got:\n%s", summaries(rep))
		}
		f := krFind(t, rep, "rollout-stalled", "registered")
		assertFinding(t, f, "blocked-by-stuck-pod", report.SeverityWarning,
			[]string{"pod " + stuck.Name + " is PreparingNormal since", "stuck-preparing-normal judges it", "ProgressDeadlineExceeded"}, nil)
		if len(f.BlockedBy) != 1 || f.BlockedBy[0].Kind != "Pod" || f.BlockedBy[0].Name != stuck.Name || f.BlockedBy[0].FindingID != "" {
			t.Fatalf("blockedBy %+v, want pod %s without a finding (stuck-preparing-normal did not run)", f.BlockedBy, stuck.Name)
		}
	})
	t.Run("with stuck-preparing-normal: blockedBy names its finding", func(t *testing.T) {
		// The pod is past 20s in PreparingNormal; stuck-preparing-normal's own threshold is 10m.
		rep := pluginOn(k.c.Kubeconfig).scan(t, roArgs(ns, "--checks", "stuck-preparing-normal", "--min-age", "20s", "--fail-on", "never")...).wantExit(0).agreed()
		pod := krFind(t, rep, "stuck-preparing-normal", stuck.Name)
		assertFinding(t, pod, "prenormal-hook-pending", pod.Severity, []string{label}, nil)
		f := krFind(t, rep, "rollout-stalled", "registered")
		if f.RootCause.ID != "blocked-by-stuck-pod" || len(f.BlockedBy) != 1 || f.BlockedBy[0].Name != stuck.Name {
			t.Fatalf("got %s blockedBy %+v", f.RootCause.ID, f.BlockedBy)
		}
		if f.BlockedBy[0].FindingID != pod.ID {
			t.Fatalf("blockedBy findingId %q, want the pod's finding %s", f.BlockedBy[0].FindingID, pod.ID)
		}
		for _, x := range rep.Findings {
			if x.Check == "rollout-stalled" && x.Object.Kind == "Pod" {
				t.Errorf("rollout-stalled reports the pod another check owns: %s", x.Summary)
			}
		}
	})
}

// A rollout whose new pods the apiserver refuses: a ResourceQuota on requests.cpu that the new
// template's request exceeds. v1.9.0's createPods records FailedCreate on the CloneSet and
// returns the error (cloneset_scale.go), doReconcile still writes the status and retries with
// backoff (cloneset_controller.go), and calculateProgressingStatus sets ProgressDeadlineExceeded:
// there is no new-revision pod to blame, so the finding is pod-creation-refused, with the
// counts, the condition, the newest FailedCreate quoted and the quota named. The same template
// within a 10m deadline, paused, or held by its partition is no finding.
func TestRolloutStalledQuotaRefusesPods(t *testing.T) {
	t.Parallel()
	pluginBinary(t)
	k := rolloutCluster(t)
	const ns = "quota"
	k.namespace(t, ns)
	big := map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "app", "image": "nginx:1.27",
		"resources": map[string]any{"requests": map[string]any{"cpu": "2"}}}}}}
	roRollOut(t, k, ns, "", append([]roRollout{{name: "refused", deadline: 30, template: big, reason: "ProgressDeadlineExceeded"}},
		roNeighbours(big)...), func() {
		q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "compute"},
			Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse("1")}}}
		if _, err := k.cs.CoreV1().ResourceQuotas(ns).Create(k.ctx, q, metav1.CreateOptions{FieldManager: "kubectl-create"}); err != nil {
			t.Fatal(err)
		}
		// The quota admits or refuses only once kube-controller-manager has written its status.
		eventually(t, time.Minute, "quota compute has status", func(ctx context.Context) (bool, error) {
			got, err := k.cs.CoreV1().ResourceQuotas(ns).Get(ctx, "compute", metav1.GetOptions{})
			return err == nil && len(got.Status.Hard) > 0, err
		})
	})

	events, err := k.cs.CoreV1().Events(ns).List(k.ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=refused,reason=FailedCreate"})
	if err != nil {
		t.Fatal(err)
	}
	if len(events.Items) == 0 || !strings.Contains(events.Items[0].Message, "exceeded quota: compute") {
		t.Fatalf("want FailedCreate events on refused quoting the quota, got %+v", events.Items)
	}

	rep := pluginOn(k.c.Kubeconfig).scan(t, roArgs(ns)...).wantExit(2).agreed()
	if len(rep.Findings) != 1 {
		t.Fatalf("want a finding on refused only, got:\n%s", summaries(rep))
	}
	f := krFind(t, rep, "rollout-stalled", "refused")
	assertFinding(t, f, "pod-creation-refused", report.SeverityError,
		[]string{"0 of 2 pods to update are on revision", "condition Progressing=False reason ProgressDeadlineExceeded",
			"no pod of revision", "FailedCreate", "refused by ResourceQuota compute: requests.cpu: requested 2, used 0, hard 1"}, nil)
	if len(f.BlockedBy) != 0 {
		t.Errorf("blockedBy %+v: no pod is there to wait on", f.BlockedBy)
	}
	// The refusal itself, quoted from the CloneSet's newest FailedCreate without the pod's JSON, is
	// the cause: the summary says so and the message repeats the quota's words.
	quoted := slices.ContainsFunc(f.RootCause.Evidence, func(e string) bool {
		return strings.Contains(e, "exists; the newest create the apiserver refused: event Warning FailedCreate from cloneset-controller") &&
			strings.Contains(e, "is forbidden: exceeded quota: compute") && !strings.Contains(e, `"spec"`)
	})
	if !quoted || !strings.HasSuffix(f.Summary, "the apiserver refuses its new pods (ResourceQuota compute)") || !strings.Contains(f.RootCause.Message, "exceeded quota: compute") {
		t.Errorf("the finding does not quote the quota's refusal:\n%s\n%s\n%s", f.Summary, strings.Join(f.RootCause.Evidence, "\n"), f.RootCause.Message)
	}
}
