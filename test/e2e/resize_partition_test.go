package e2e

import (
	"encoding/json"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/util/retry"
)

// partitionedCloneSet writes what the OpenKruise v1.9.0 CloneSet controller leaves when a template
// change meets updateStrategy.partition 2 of 3: the template's resizePolicy changed, so the change
// cannot be made in place (inplace_update_defaults.go defaultCalculateInPlaceUpdateSpec) and
// InPlaceIfPossible recreated one pod on the new revision (cloneset_update.go updatePod);
// calculateDiffsWithExpectation (cloneset_sync_utils.go) keeps the other two on currentRevision,
// and would recreate either of them there (scaleUpNumOldRevision; cloneset_scale.go createPods
// builds them from the currentRevision ControllerRevision). shelf-a matches its revision's
// template and differs from the CloneSet's: expected, no finding. shelf-b is still on an older
// revision, whose template set cpu=RestartContainer; the partition keeps it too, and a recreated
// shelf-b would get currentRevision's template, so evicting it helps.
func (e *rzEnv) partitionedCloneSet(t *testing.T) {
	ctx := t.Context()
	e.manager(t, "v1.9.0")
	ns := e.namespace(t, "rz-partition")
	const name = "shelf"
	rev0, rev1, rev2 := name+"-"+utilrand.String(9), name+"-"+utilrand.String(9), name+"-"+utilrand.String(9)
	restartMemory := []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer}}
	restartCPU := []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.RestartContainer}}
	olderSpec, oldSpec, newSpec := rzPodSpec(rzImage(1), restartCPU), rzPodSpec(rzImage(1), nil), rzPodSpec(rzImage(1), restartMemory)
	labels := map[string]any{"app": name}

	created, err := e.dyn.Resource(rzCloneSets).Namespace(ns).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
		"metadata": map[string]any{"name": name, "namespace": ns, "generation": int64(2)},
		"spec": map[string]any{
			"replicas":       int64(3),
			"selector":       map[string]any{"matchLabels": labels},
			"updateStrategy": map[string]any{"type": "InPlaceIfPossible", "partition": int64(2)},
			"template":       map[string]any{"metadata": map[string]any{"labels": labels}, "spec": rzUnstructured(t, &newSpec)},
		},
	}}, metav1.CreateOptions{FieldManager: "kubectl-client-side-apply"})
	if err != nil {
		t.Fatalf("create CloneSet: %v", err)
	}
	ctrl := true
	owner := []metav1.OwnerReference{{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: name, UID: created.GetUID(), Controller: &ctrl, BlockOwnerDeletion: &ctrl}}
	// The revisions as kruise records them (revision getPatch): the template as a patch replacing spec.template.
	for i, r := range []struct {
		name string
		spec corev1.PodSpec
	}{{rev0, olderSpec}, {rev1, oldSpec}, {rev2, newSpec}} {
		tpl := map[string]any{"metadata": map[string]any{"labels": labels}, "spec": rzUnstructured(t, &r.spec), "$patch": "replace"}
		data, err := json.Marshal(map[string]any{"spec": map[string]any{"template": tpl}})
		if err != nil {
			t.Fatal(err)
		}
		_, err = e.cs.AppsV1().ControllerRevisions(ns).Create(ctx, &appsv1.ControllerRevision{
			ObjectMeta: metav1.ObjectMeta{Name: r.name, Namespace: ns, Labels: map[string]string{"app": name}, OwnerReferences: owner},
			Data:       runtime.RawExtension{Raw: data}, Revision: int64(i + 1),
		}, metav1.CreateOptions{FieldManager: "kruise-manager"})
		if err != nil {
			t.Fatalf("create ControllerRevision %s: %v", r.name, err)
		}
	}
	for _, p := range []struct {
		id, rev string
		spec    corev1.PodSpec
	}{{"a", rev1, oldSpec}, {"b", rev0, olderSpec}, {"c", rev2, newSpec}} {
		p.spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "InPlaceUpdateReady"}, {ConditionType: "KruisePodReady"}}
		_, err := e.cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name + "-" + p.id, Namespace: ns, OwnerReferences: owner,
				Labels: map[string]string{"app": name, "controller-revision-hash": p.rev, "apps.kruise.io/cloneset-instance-id": p.id,
					"lifecycle.apps.kruise.io/state": "Normal"}},
			Spec: p.spec,
		}, metav1.CreateOptions{FieldManager: "kruise-manager"})
		if err != nil {
			t.Fatalf("create pod: %v", err)
		}
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		u, err := e.dyn.Resource(rzCloneSets).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		u.Object["status"] = map[string]any{"observedGeneration": u.GetGeneration(), "replicas": int64(3), "readyReplicas": int64(3),
			"availableReplicas": int64(3), "updatedReplicas": int64(1), "updatedReadyReplicas": int64(1), "expectedUpdatedReplicas": int64(1),
			"currentRevision": rev1, "updateRevision": rev2, "collisionCount": int64(0), "labelSelector": "app=" + name}
		_, err = e.dyn.Resource(rzCloneSets).Namespace(ns).UpdateStatus(ctx, u, metav1.UpdateOptions{FieldManager: "kruise-manager"})
		return err
	})
	if err != nil {
		t.Fatalf("update CloneSet status: %v", err)
	}

	r, _ := rzScan(t, e.c.Kubeconfig, ns)
	for _, f := range r.Findings {
		if f.Object.Name != name+"-b" {
			t.Errorf("unexpected finding %s on %s:\n%s", f.RootCause.ID, f.Object.Name, strings.Join(f.RootCause.Evidence, "\n"))
		}
	}
	f := rzFinding(t, r, name+"-b", "resize-policy-immutable")
	rzEvidence(t, f,
		"pod is on revision "+rev0+", kept off cloneset/shelf updateRevision "+rev2+" by partition 2; a recreated pod gets currentRevision "+rev1,
		"container app: pod resizePolicy cpu=RestartContainer; revision "+rev1+" template unset (differs for cpu)",
		"differs from revision "+rev1+" since ")
	if strings.Contains(strings.Join(f.RootCause.Evidence, "\n"), "ControllerRevision "+rev1+" not read") {
		t.Errorf("the ControllerRevision was not read:\n%s", strings.Join(f.RootCause.Evidence, "\n"))
	}
	if len(f.Fixes) != 1 || f.Fixes[0].Action != "evict-pod" || !strings.Contains(f.Fixes[0].Description, "recreates it from revision "+rev1) {
		t.Errorf("fixes = %+v, want evict-pod recreating from %s", f.Fixes, rev1)
	}
}
