package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/scenario/kubelet"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// advRollout is an Advanced StatefulSet or Advanced DaemonSet rolled out to a new template.
type advRollout struct {
	gvr      schema.GroupVersionResource
	name     string
	template map[string]any // the new template
	// rollingUpdate is merged into spec.updateStrategy.rollingUpdate with the new template.
	rollingUpdate map[string]any
	// settled says the stand-in finished what it does with the new template.
	settled func(st kruise.WorkloadStatus) bool
}

// Advanced StatefulSet and Advanced DaemonSet rollouts to a template whose pods cannot pull their
// image, produced by the kruise-manager stand-in's controllers the way v1.9.0's do
// (internal/scenario/kruise_statefulset.go, kruise_daemonset.go): the StatefulSet recreates its
// highest ordinal on the new revision and waits for it (maxUnavailable 1), the DaemonSet replaces
// the pod of one of its two nodes, or of both with maxUnavailable 100%; kwok, as the kubelet,
// leaves each new pod in ImagePullBackOff.
// Neither kind has a progress deadline in v1.9.0, so --min-age is the threshold: within it
// (--min-age 1h) nothing is reported; past it, exactly the three stalled rollouts are, with the
// kubelet's reason. The same broken template paused or held by a partition, and a rollout to a
// template that starts, are no finding.
func TestRolloutStalledAdvanced(t *testing.T) {
	t.Parallel()
	pluginBinary(t)
	k := rolloutCluster(t)
	const ns = "advanced"
	k.namespace(t, ns)
	pull := func(tpl map[string]any) map[string]any {
		tpl["metadata"].(map[string]any)["labels"].(map[string]any)[kubelet.Label] = kubelet.ErrImagePull
		tpl["spec"].(map[string]any)["containers"] = []any{map[string]any{"name": "app", "image": "registry.shop.example/app:2-typo"}}
		return tpl
	}
	good := func(tpl map[string]any) map[string]any {
		tpl["spec"].(map[string]any)["containers"] = []any{map[string]any{"name": "app", "image": "registry.shop.example/app:2"}}
		return tpl
	}
	stsStalled := func(st kruise.WorkloadStatus) bool { return st.UpdatedReplicas == 1 && st.ReadyReplicas == 2 }
	stsHeld := func(st kruise.WorkloadStatus) bool { return st.UpdatedReplicas == 0 && st.ReadyReplicas == 3 }
	stsDone := func(st kruise.WorkloadStatus) bool {
		return st.UpdatedReadyReplicas == 3 && st.CurrentRevision == st.UpdateRevision
	}
	dsStalled := func(st kruise.WorkloadStatus) bool { return st.UpdatedNumberScheduled == 1 && st.NumberReady == 1 }
	dsHeld := func(st kruise.WorkloadStatus) bool { return st.UpdatedNumberScheduled == 0 && st.NumberReady == 2 }
	dsDone := func(st kruise.WorkloadStatus) bool { return st.UpdatedNumberScheduled == 2 && st.NumberReady == 2 }
	dsAllReplaced := func(st kruise.WorkloadStatus) bool { return st.UpdatedNumberScheduled == 2 && st.NumberReady == 0 }
	rollouts := []advRollout{
		{gvr: kruise.StatefulSets, name: "db", template: pull(advTemplate("db", false)), settled: stsStalled},
		{gvr: kruise.StatefulSets, name: "db-held", template: pull(advTemplate("db-held", false)), rollingUpdate: map[string]any{"paused": true}, settled: stsHeld},
		{gvr: kruise.StatefulSets, name: "db-staged", template: pull(advTemplate("db-staged", false)), rollingUpdate: map[string]any{"partition": int64(3)}, settled: stsHeld},
		{gvr: kruise.StatefulSets, name: "db-ok", template: good(advTemplate("db-ok", false)), settled: stsDone},
		{gvr: kruise.DaemonSets, name: "agent", template: pull(advTemplate("agent", true)), settled: dsStalled},
		{gvr: kruise.DaemonSets, name: "agent-all", template: pull(advTemplate("agent-all", true)), rollingUpdate: map[string]any{"maxUnavailable": "100%"}, settled: dsAllReplaced},
		{gvr: kruise.DaemonSets, name: "agent-held", template: pull(advTemplate("agent-held", true)), rollingUpdate: map[string]any{"paused": true}, settled: dsHeld},
		{gvr: kruise.DaemonSets, name: "agent-staged", template: pull(advTemplate("agent-staged", true)), rollingUpdate: map[string]any{"partition": int64(2)}, settled: dsHeld},
		{gvr: kruise.DaemonSets, name: "agent-ok", template: good(advTemplate("agent-ok", true)), settled: dsDone},
	}
	for _, r := range rollouts {
		advCreate(t, k, ns, r)
	}
	for _, r := range rollouts {
		first := stsDone
		if r.gvr == kruise.DaemonSets {
			first = dsDone
		}
		advWait(t, k, ns, r, first)
	}
	for _, r := range rollouts {
		spec := map[string]any{"template": r.template}
		if r.rollingUpdate != nil {
			spec["updateStrategy"] = map[string]any{"rollingUpdate": r.rollingUpdate}
		}
		advPatch(t, k, r.gvr, ns, r.name, map[string]any{"spec": spec})
	}
	for _, r := range rollouts {
		advWait(t, k, ns, r, r.settled)
	}

	if rep := pluginOn(k.c.Kubeconfig).scan(t, roArgs(ns, "--min-age", "1h")...).wantExit(0).agreed(); len(rep.Findings) != 0 {
		t.Fatalf("within the threshold nothing is stalled, got:\n%s", summaries(rep))
	}
	// The stalled pods were created moments ago: the scan reports them once they are 15s old.
	var rep report.Report
	var run *pluginRun
	eventually(t, 2*time.Minute, "rollout-stalled findings past --min-age 15s", func(context.Context) (bool, error) {
		run = pluginOn(k.c.Kubeconfig).scan(t, "-n", ns, "--checks", "rollout-stalled", "-o", "json", "--min-age", "15s")
		stdout, stderr, code := run.out()
		if code != 0 && code != 2 {
			return false, fmt.Errorf("scan: exit %d\n%s", code, stderr)
		}
		rep = report.Report{}
		if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
			return false, fmt.Errorf("scan -o json: %w", err)
		}
		return code == 2 && len(rep.Findings) >= 3, nil
	})
	rep = *run.agreed()
	if len(rep.Findings) != 3 {
		t.Fatalf("want findings on db, agent and agent-all only, got:\n%s", summaries(&rep))
	}
	for _, want := range []struct {
		name, kind string
		evidence   []string
	}{
		{"db", kruise.KindStatefulSet, []string{"StatefulSet advanced/db: 1 of 3 pods to update are on revision db-", "0 of them ready",
			"pod db-2 container app waits with ImagePullBackOff for image registry.shop.example/app:2-typo"}},
		{"agent", kruise.KindDaemonSet, []string{"DaemonSet advanced/agent: 1 of 2 pods to update are on revision", "1 of 2 nodes run a ready pod",
			"container app waits with ImagePullBackOff for image registry.shop.example/app:2-typo"}},
		// Every pod replaced and none ready: the status counts no updated ready pods, numberReady tells.
		{"agent-all", kruise.KindDaemonSet, []string{"DaemonSet advanced/agent-all: 2 of 2 pods to update are on revision",
			"0 of 2 nodes run a ready pod", "container app waits with ImagePullBackOff"}},
	} {
		f := krFind(t, &rep, "rollout-stalled", want.name)
		if f.Object.Kind != want.kind {
			t.Errorf("%s: object %s, want a %s", want.name, f.Object, want.kind)
		}
		assertFinding(t, f, "image-pull-failing", report.SeverityError, want.evidence, nil)
	}
}

// advTemplate is the first template of the workload: app=<name>, image app:1; a DaemonSet's
// runs on the two nodes of pool main.
func advTemplate(name string, daemon bool) map[string]any {
	spec := map[string]any{"containers": []any{map[string]any{"name": "app", "image": "registry.shop.example/app:1"}}}
	if daemon {
		spec["nodeSelector"] = map[string]any{"pool": "main"}
	}
	return map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": name}}, "spec": spec}
}

// advCreate creates the workload as `kubectl apply` would, with the defaults kruise's webhook
// writes: a StatefulSet of three replicas, OrderedReady, RollingUpdate with partition 0 and
// maxUnavailable 1; a DaemonSet with a Standard rolling update, maxUnavailable 1.
func advCreate(t *testing.T, k *krEnv, ns string, r advRollout) {
	t.Helper()
	spec := map[string]any{"selector": map[string]any{"matchLabels": map[string]any{"app": r.name}}, "template": advTemplate(r.name, r.gvr == kruise.DaemonSets)}
	kind, version := kruise.KindDaemonSet, "v1alpha1"
	if r.gvr == kruise.StatefulSets {
		kind, version = kruise.KindStatefulSet, "v1beta1"
		spec["replicas"], spec["serviceName"], spec["podManagementPolicy"] = int64(3), r.name, "OrderedReady"
		spec["updateStrategy"] = map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{
			"partition": int64(0), "maxUnavailable": int64(1), "podUpdatePolicy": "ReCreate"}}
	} else {
		spec["updateStrategy"] = map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{
			"rollingUpdateType": "Standard", "maxUnavailable": int64(1)}}
	}
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": kruise.Group + "/" + version, "kind": kind,
		"metadata": map[string]any{"name": r.name, "namespace": ns}, "spec": spec}}
	if _, err := k.dyn.Resource(r.gvr).Namespace(ns).Create(k.ctx, u, metav1.CreateOptions{FieldManager: "kubectl-client-side-apply"}); err != nil {
		t.Fatal(err)
	}
}

// advWait waits until the stand-in observed the workload's generation and its status satisfies ok.
func advWait(t *testing.T, k *krEnv, ns string, r advRollout, ok func(kruise.WorkloadStatus) bool) {
	t.Helper()
	eventually(t, 3*time.Minute, r.gvr.Resource+" "+r.name+" settled", func(ctx context.Context) (bool, error) {
		u, err := k.dyn.Resource(r.gvr).Namespace(ns).Get(ctx, r.name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		w, err := kruise.WorkloadFromUnstructured(u)
		if err != nil {
			return false, err
		}
		return w.Status.ObservedGeneration == w.Generation && ok(w.Status), nil
	})
}

// advPatch applies a merge patch as `kubectl patch --type merge` does.
func advPatch(t *testing.T, k *krEnv, gvr schema.GroupVersionResource, ns, name string, patch map[string]any) {
	t.Helper()
	raw, err := json.Marshal(patch)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k.dyn.Resource(gvr).Namespace(ns).Patch(k.ctx, name, types.MergePatchType, raw,
		metav1.PatchOptions{FieldManager: "kubectl-patch"}); err != nil {
		t.Fatal(err)
	}
}
