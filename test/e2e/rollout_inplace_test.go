package e2e

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/scenario/kruisemanager"
	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/scenario/kubelet"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// In-place updates that wait on the node, produced as kruise v1.9.0 and the kubelet produce them,
// past a 30s progress deadline:
//   - resize: the template raises a cpu request. With InPlaceWorkloadVerticalScaling the manager
//     updates the pod in place (defaultCalculateInPlaceUpdateSpec and
//     NativeVerticalUpdate.UpdateInplaceUpdateMetadata, pkg/util/inplaceupdate), asking the
//     kubelet through the pod's resize subresource (realControl.updatePodInPlace and
//     GenerateResourcePatch) and leaving InPlaceUpdateReady True, as the resize restarts nothing
//     (defaultCheckPodNeedsBeUnready); kwok, as the kubelet of a node whose other pods hold 15 of
//     its 16 CPUs, reports PodResizePending reason Deferred and keeps the old resources in the
//     containers' status, so the pod stays Updating (defaultCheckContainersInPlaceUpdateCompleted;
//     refreshPodState, pkg/controller/cloneset/sync/cloneset_update.go). The apiserver (1.37)
//     refuses a resize beyond the node's allocatable outright, so Infeasible is not reached here.
//   - relabel: the template changes a label a container's env reads through a fieldRef
//     (InPlaceUpdateEnvFromMetadata): the manager applies the label in place with
//     updateEnvFromMetadata in the inplace-update-state annotation and InPlaceUpdateReady False,
//     and waits for kruise-daemon to restart the container and write
//     apps.kruise.io/runtime-containers-meta, which no kruise-daemon does on kwok's nodes.
//
// The same changes within a 10m deadline, paused, or held by their partition are no finding.
func TestRolloutStalledInPlaceOnNode(t *testing.T) {
	t.Parallel()
	pluginBinary(t)
	k := rolloutCluster(t, "InPlaceWorkloadVerticalScaling")
	const ns = "inplace-node"
	k.namespace(t, ns)
	app := func(cpu string, env ...any) map[string]any {
		c := map[string]any{"name": "app", "image": "nginx:1.27", "resources": map[string]any{
			"requests": map[string]any{"cpu": cpu, "memory": "256Mi"}, "limits": map[string]any{"memory": "256Mi"}}}
		if env != nil {
			c["env"] = env
		}
		return map[string]any{"containers": []any{c}}
	}
	version := map[string]any{"name": "VERSION", "valueFrom": map[string]any{"fieldRef": map[string]any{"fieldPath": "metadata.labels['version']"}}}
	labels := func(key, value string) map[string]any {
		return map[string]any{"labels": map[string]any{key: value}}
	}
	resizeFrom := map[string]any{"metadata": labels(kubelet.FullNodeLabel, "true"), "spec": app("500m")}
	resize := map[string]any{"spec": app("2")}
	relabelFrom := map[string]any{"metadata": labels("version", "v1"), "spec": app("500m", version)}
	relabel := map[string]any{"metadata": labels("version", "v2")}
	paused, staged := map[string]any{"paused": true}, map[string]any{"partition": int64(2)}
	roRollOut(t, k, ns, "InPlaceIfPossible", []roRollout{
		{name: "resize", deadline: 30, base: resizeFrom, template: resize, reason: "ProgressDeadlineExceeded"},
		{name: "relabel", deadline: 30, base: relabelFrom, template: relabel, reason: "ProgressDeadlineExceeded"},
		{name: "resize-fresh", deadline: 600, base: resizeFrom, template: resize, reason: "CloneSetUpdated"},
		{name: "relabel-fresh", deadline: 600, base: relabelFrom, template: relabel, reason: "CloneSetUpdated"},
		{name: "resize-held", deadline: 30, base: resizeFrom, template: resize, strategy: paused, reason: "CloneSetPaused"},
		{name: "relabel-held", deadline: 30, base: relabelFrom, template: relabel, strategy: paused, reason: "CloneSetPaused"},
		{name: "resize-staged", deadline: 30, base: resizeFrom, template: resize, strategy: staged, reason: "ProgressPartitionAvailable"},
		{name: "relabel-staged", deadline: 30, base: relabelFrom, template: relabel, strategy: staged, reason: "ProgressPartitionAvailable"},
	}, func() {})

	resized := roUpdatedPod(t, k, ns, "resize")
	assertInPlaceState(t, resized, "updateResources")
	if c := podCondition(resized, kruise.ConditionInPlaceReady); c == nil || c.Status != corev1.ConditionTrue {
		t.Errorf("a resize that restarts nothing leaves InPlaceUpdateReady True, got %+v", c)
	}
	if got := resized.Spec.Containers[0].Resources.Requests.Cpu().String(); got != "2" {
		t.Errorf("the resize subresource took cpu %s, want 2", got)
	}
	relabeled := roUpdatedPod(t, k, ns, "relabel")
	assertInPlaceState(t, relabeled, "updateEnvFromMetadata")
	if relabeled.Labels["version"] != "v2" {
		t.Errorf("label version=%q, want v2 applied in place", relabeled.Labels["version"])
	}

	t.Run("no kruise-daemon DaemonSet", func(t *testing.T) {
		rep := pluginOn(k.c.Kubeconfig).scan(t, roArgs(ns)...).wantExit(2).agreed()
		if len(rep.Findings) != 2 {
			t.Fatalf("want findings on resize and relabel only, got:\n%s", summaries(rep))
		}
		assertFinding(t, krFind(t, rep, "rollout-stalled", "resize"), "inplace-resize-pending", report.SeverityError, []string{
			"pod " + resized.Name + " in-place update since",
			"waits on a resize: PodResizePending reason Deferred: Node didn't have enough resource: cpu, requested: 2000, used: 15000, capacity: 16000",
			"ProgressDeadlineExceeded"}, nil)
		assertFinding(t, krFind(t, rep, "rollout-stalled", "relabel"), "inplace-daemon-missing", report.SeverityError, []string{
			"pod " + relabeled.Name + " in-place update since",
			"changes env from metadata and waits for kruise-daemon on node " + relabeled.Spec.NodeName +
				", but the pod has no apps.kruise.io/runtime-containers-meta annotation; DaemonSet kruise-daemon was not found"}, nil)
	})
	t.Run("kruise-daemon kept off the node", func(t *testing.T) {
		roDaemonElsewhere(t, k)
		rep := pluginOn(k.c.Kubeconfig).scan(t, roArgs(ns)...).wantExit(2).agreed()
		assertFinding(t, krFind(t, rep, "rollout-stalled", "relabel"), "inplace-daemon-missing", report.SeverityError, []string{
			"waits for kruise-daemon on node " + relabeled.Spec.NodeName,
			"DaemonSet " + kruisemanager.Namespace + "/kruise-daemon: 0 of 0 pods available; its pods were not read: the scan covers namespace " +
				ns + " only"}, nil)
		// A scan of every namespace lists the daemon's pods: none is on the node.
		stdout, stderr, code := pluginOn(k.c.Kubeconfig).scan(t, "-A", "--checks", "rollout-stalled", "-o", "json").out()
		var all report.Report
		if err := json.Unmarshal([]byte(stdout), &all); code != 2 || err != nil {
			t.Fatalf("scan -A: exit %d (%v)\n%s\n%s", code, err, stdout, stderr)
		}
		assertFinding(t, krFind(t, &all, "rollout-stalled", "relabel"), "inplace-daemon-missing", report.SeverityError, []string{
			"DaemonSet " + kruisemanager.Namespace + "/kruise-daemon: 0 of 0 pods available; no kruise-daemon pod is on node " +
				relabeled.Spec.NodeName + ": the DaemonSet has no pods"}, nil)
	})
}

// roUpdatedPod returns the CloneSet's pod on its update revision, which the test's rollouts
// update one at a time (maxUnavailable 1 of 2).
func roUpdatedPod(t *testing.T, k *krEnv, ns, name string) *corev1.Pod {
	t.Helper()
	cs := k.getCloneSet(t, ns, name)
	rev, _, _ := unstructured.NestedString(cs.Object, "status", "updateRevision")
	pods, err := k.cs.CoreV1().Pods(ns).List(k.ctx, metav1.ListOptions{LabelSelector: "app=" + name + ",controller-revision-hash=" + rev})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 1 {
		t.Fatalf("CloneSet %s: %d pods on revision %s, want 1", name, len(pods.Items), rev)
	}
	return &pods.Items[0]
}

// assertInPlaceState checks the pod is in the middle of an in-place update of the kind named
// (a field of apps.kruise.io/inplace-update-state set true).
func assertInPlaceState(t *testing.T, p *corev1.Pod, kind string) {
	t.Helper()
	var state map[string]any
	if err := json.Unmarshal([]byte(p.Annotations[kruise.AnnotationInPlaceState]), &state); err != nil || state[kind] != true {
		t.Errorf("pod %s inplace-update-state %q: want %s true", p.Name, p.Annotations[kruise.AnnotationInPlaceState], kind)
	}
	if s := p.Labels[kruise.LabelLifecycleState]; s != kruise.StateUpdating {
		t.Errorf("pod %s lifecycle state %s, want Updating", p.Name, s)
	}
}

func podCondition(p *corev1.Pod, typ corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == typ {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// roDaemonElsewhere installs kruise-daemon the way the kruise chart does, its node affinity
// keeping it off virtual nodes (the chart's type NotIn virtual-kubelet, here also kwok's nodes),
// and waits until kube-controller-manager has counted the nodes it runs on: none.
func roDaemonElsewhere(t *testing.T, k *krEnv) {
	t.Helper()
	labels := map[string]string{"control-plane": "daemon"}
	affinity := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: kubelet.NodeLabel, Operator: corev1.NodeSelectorOpNotIn, Values: []string{"virtual-kubelet", kubelet.NodeLabelValue}}}}}}}}
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "kruise-daemon", Namespace: kruisemanager.Namespace, Labels: labels},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Affinity: affinity, HostNetwork: true,
				Containers: []corev1.Container{{Name: "daemon", Image: "openkruise/kruise-manager:v1.9.0", Command: []string{"/kruise-daemon"}}}}}}}
	if _, err := k.cs.AppsV1().DaemonSets(kruisemanager.Namespace).Create(k.ctx, ds, metav1.CreateOptions{FieldManager: "helm"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, "kube-controller-manager to observe DaemonSet kruise-daemon", func(ctx context.Context) (bool, error) {
		got, err := k.cs.AppsV1().DaemonSets(kruisemanager.Namespace).Get(ctx, "kruise-daemon", metav1.GetOptions{})
		return err == nil && got.Status.ObservedGeneration == got.Generation, err
	})
}
