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

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// rzRollout is the state a CloneSet controller leaves mid-rollout or after it: its revisions
// (ControllerRevisions, in order), the pods on them, and the status it computes.
type rzRollout struct {
	name      string
	partition int64
	// revisions are the pod specs of the revisions, oldest first; the last is the template.
	revisions []corev1.PodSpec
	// pods are the revision index of each pod, named <name>-a, -b, ...
	pods []int
	// current is the index of status.currentRevision.
	current int
	// mutated changes what was stored of the pod at index i (a mutating webhook at its creation).
	mutated func(i int, s *corev1.PodSpec)
}

// create writes the rollout as the OpenKruise v1.9.0 CloneSet controller would have: the
// CloneSet, one ControllerRevision per revision (revision getPatch: the template as a patch
// replacing spec.template, owned by the CloneSet), the pods labelled with their revision, and
// the status calculateStatus computes. It returns the revision names.
func (e *rzEnv) create(t *testing.T, ns string, r rzRollout) []string {
	t.Helper()
	ctx := t.Context()
	labels := map[string]any{"app": r.name}
	spec := map[string]any{
		"replicas":       int64(len(r.pods)),
		"selector":       map[string]any{"matchLabels": labels},
		"updateStrategy": map[string]any{"type": "InPlaceIfPossible"},
		"template":       map[string]any{"metadata": map[string]any{"labels": labels}, "spec": rzUnstructured(t, &r.revisions[len(r.revisions)-1])},
	}
	if r.partition > 0 {
		spec["updateStrategy"].(map[string]any)["partition"] = r.partition
	}
	created, err := e.dyn.Resource(rzCloneSets).Namespace(ns).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet", "metadata": map[string]any{"name": r.name, "namespace": ns}, "spec": spec,
	}}, metav1.CreateOptions{FieldManager: "kubectl-client-side-apply"})
	if err != nil {
		t.Fatalf("create CloneSet: %v", err)
	}
	ctrl := true
	owner := []metav1.OwnerReference{{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: r.name, UID: created.GetUID(), Controller: &ctrl, BlockOwnerDeletion: &ctrl}}
	var revs []string
	for i, s := range r.revisions {
		name := r.name + "-" + utilrand.String(9)
		revs = append(revs, name)
		tpl := map[string]any{"metadata": map[string]any{"labels": labels}, "spec": rzUnstructured(t, &s), "$patch": "replace"}
		data, err := json.Marshal(map[string]any{"spec": map[string]any{"template": tpl}})
		if err != nil {
			t.Fatal(err)
		}
		_, err = e.cs.AppsV1().ControllerRevisions(ns).Create(ctx, &appsv1.ControllerRevision{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app": r.name}, OwnerReferences: owner},
			Data:       runtime.RawExtension{Raw: data}, Revision: int64(i + 1),
		}, metav1.CreateOptions{FieldManager: "kruise-manager"})
		if err != nil {
			t.Fatalf("create ControllerRevision %s: %v", name, err)
		}
	}
	update := len(r.revisions) - 1
	var updated int64
	for i, rev := range r.pods {
		id := string(rune('a' + i))
		podSpec := *r.revisions[rev].DeepCopy()
		if r.mutated != nil {
			r.mutated(i, &podSpec)
		}
		podSpec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "InPlaceUpdateReady"}, {ConditionType: "KruisePodReady"}}
		_, err := e.cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: r.name + "-" + id, Namespace: ns, OwnerReferences: owner,
				Labels: map[string]string{"app": r.name, "controller-revision-hash": revs[rev], "apps.kruise.io/cloneset-instance-id": id,
					"lifecycle.apps.kruise.io/state": "Normal"}},
			Spec: podSpec,
		}, metav1.CreateOptions{FieldManager: "kruise-manager"})
		if err != nil {
			t.Fatalf("create pod: %v", err)
		}
		if rev == update {
			updated++
		}
	}
	n := int64(len(r.pods))
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		u, err := e.dyn.Resource(rzCloneSets).Namespace(ns).Get(ctx, r.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		u.Object["status"] = map[string]any{"observedGeneration": u.GetGeneration(), "replicas": n, "readyReplicas": n,
			"availableReplicas": n, "updatedReplicas": updated, "updatedReadyReplicas": updated, "expectedUpdatedReplicas": n - r.partition,
			"currentRevision": revs[r.current], "updateRevision": revs[update], "collisionCount": int64(0), "labelSelector": "app=" + r.name}
		_, err = e.dyn.Resource(rzCloneSets).Namespace(ns).UpdateStatus(ctx, u, metav1.UpdateOptions{FieldManager: "kruise-manager"})
		return err
	})
	if err != nil {
		t.Fatalf("update CloneSet status: %v", err)
	}
	return revs
}

// partitionedCloneSet is a template change meeting updateStrategy.partition 2 of 3 under the
// OpenKruise v1.9.0 CloneSet controller: the template's resizePolicy changed, which cannot be
// done in place (inplace_update_defaults.go defaultCalculateInPlaceUpdateSpec), so
// InPlaceIfPossible recreated one pod on the new revision (cloneset_update.go updatePod);
// calculateDiffsWithExpectation (cloneset_sync_utils.go) keeps the other two off it and would
// recreate either from currentRevision (scaleUpNumOldRevision; cloneset_scale.go createPods builds
// them from that ControllerRevision). shelf-a matches its revision's template and differs from the
// CloneSet's: expected, no finding. shelf-b is still on an older revision whose template set
// cpu=RestartContainer; the partition keeps it too, and a recreated shelf-b would get
// currentRevision's template, so evicting it helps. ledger is fully updated, but ledger-a was
// created while a mutating webhook, since removed, set cpu=RestartContainer: real drift, whose
// revision is read metadata-only to date it.
func (e *rzEnv) partitionedCloneSet(t *testing.T) {
	e.manager(t, "v1.9.0")
	ns := e.namespace(t, "rz-partition")
	restartMemory := []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer}}
	restartCPU := []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.RestartContainer}}
	shelf := e.create(t, ns, rzRollout{name: "shelf", partition: 2, current: 1, pods: []int{1, 0, 2},
		revisions: []corev1.PodSpec{rzPodSpec(rzImage(1), restartCPU), rzPodSpec(rzImage(1), nil), rzPodSpec(rzImage(1), restartMemory)}})
	ledger := e.create(t, ns, rzRollout{name: "ledger", current: 0, pods: []int{0, 0}, revisions: []corev1.PodSpec{rzPodSpec(rzImage(1), nil)},
		mutated: func(i int, s *corev1.PodSpec) {
			if i == 0 {
				s.Containers[0].ResizePolicy = restartCPU
			}
		}})

	r, _ := rzReport(t, pluginOn(e.c.Kubeconfig).scan(t, rzArgs(ns)...))
	for _, f := range r.Findings {
		if f.Object.Name != "shelf-b" && f.Object.Name != "ledger-a" {
			t.Errorf("unexpected finding %s on %s:\n%s", f.RootCause.ID, f.Object.Name, strings.Join(f.RootCause.Evidence, "\n"))
		}
	}
	f := rzFinding(t, r, "shelf-b", "resize-policy-immutable")
	rzEvidence(t, f,
		"pod is on revision "+shelf[0]+", kept off cloneset/shelf updateRevision "+shelf[2]+" by partition 2; a recreated pod gets currentRevision "+shelf[1],
		"container app: pod resizePolicy cpu=RestartContainer; revision "+shelf[1]+" template unset (differs for cpu)",
		"differs from revision "+shelf[1]+" since ")
	rzEvicts(t, f, shelf[1])
	f = rzFinding(t, r, "ledger-a", "resize-policy-immutable")
	rzEvidence(t, f, "pod is on cloneset/ledger updateRevision "+ledger[0], "differs from revision "+ledger[0]+" since ")
	rzEvicts(t, f, ledger[0])
}

// rzEvicts asserts the finding offers evict-pod recreating the pod from the revision, and that
// the revision was read (a revision not read is said in the evidence).
func rzEvicts(t *testing.T, f report.Finding, revision string) {
	t.Helper()
	if strings.Contains(strings.Join(f.RootCause.Evidence, "\n"), "ControllerRevision "+revision+" not read") {
		t.Errorf("ControllerRevision %s was not read:\n%s", revision, strings.Join(f.RootCause.Evidence, "\n"))
	}
	if len(f.Fixes) != 1 || f.Fixes[0].Action != "evict-pod" || !strings.Contains(f.Fixes[0].Description, "recreates it from revision "+revision) {
		t.Errorf("fixes = %+v, want evict-pod recreating from %s", f.Fixes, revision)
	}
}
