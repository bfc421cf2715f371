package kruisemanager

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
)

// reconcile is the CloneSet controller's doReconcile, reduced to what the scenario exercises.
func (p *leaderProcess) reconcile(ctx context.Context, key string) error {
	u, w, err := cachedWorkload(p.sets, p.exp, key)
	if err != nil || w == nil {
		return err
	}
	// Unsatisfied scale expectations skip the reconcile before anything else, status included.
	if ok, waited, dirty := p.exp.satisfied(key); !ok {
		if waited >= p.m.expectationTimeout {
			p.log.info("cloneset_controller.go:232", `"Expectation unsatisfied overtime" cloneSet=%q scaleDirtyPods=%s overTime=%q`, key, dirty, waited.String())
			return nil
		}
		p.log.info("cloneset_controller.go:235", `"Not satisfied scale" cloneSet=%q scaleDirtyPods=%s`, key, dirty)
		p.queue.AddAfter(key, p.m.expectationTimeout-waited)
		return nil
	}

	var active []*corev1.Pod
	objs, err := p.pods.GetIndexer().ByIndex(byController, string(w.UID))
	if err != nil {
		return err
	}
	for _, o := range objs {
		pod := o.(*corev1.Pod)
		if pod.Namespace == w.Namespace && pod.DeletionTimestamp == nil && pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed {
			active = append(active, pod)
		}
	}
	sort.Slice(active, func(i, j int) bool { return active[i].Name < active[j].Name })
	hash, err := templateHash(u)
	if err != nil {
		return err
	}
	updateRevision := w.Name + "-" + hash

	// Lifecycle: PreparingNormal -> Normal (refreshPodState).
	for i, pod := range active {
		if pod.Labels[kruise.LabelLifecycleState] != kruise.StatePreparingNormal || !p.m.leavesPreparingNormal(w, pod) {
			continue
		}
		updated, err := p.setLifecycleState(ctx, pod, kruise.StateNormal)
		if err != nil {
			return err
		}
		active[i] = updated
	}

	replicas := int32(1)
	if w.Replicas != nil {
		replicas = *w.Replicas
	}
	// doReconcile writes the status whatever the sync returned (a refused create included), then
	// returns the sync's error so the key is retried with backoff (cloneset_controller.go, v1.9.0).
	syncErr := p.scale(ctx, w, key, updateRevision, hash, active)
	if syncErr == nil {
		syncErr = p.update(ctx, w, updateRevision, active, replicas)
	}
	if err := p.writeStatus(ctx, u, w, active, replicas, updateRevision); err != nil {
		return errors.Join(syncErr, err)
	}
	return syncErr
}

// templateHash names the template's revision as kruise's ControllerRevision hashes do.
func templateHash(u *unstructured.Unstructured) (string, error) {
	tpl, _, _ := unstructured.NestedMap(u.Object, "spec", "template")
	raw, err := json.Marshal(tpl)
	if err != nil {
		return "", fmt.Errorf("hash template of %s: %w", u.GetName(), err)
	}
	h := fnv.New32a()
	_, _ = h.Write(raw)
	return utilrand.SafeEncodeString(fmt.Sprint(h.Sum32())), nil
}

// leavesPreparingNormal is refreshPodState's condition for PreparingNormal -> Normal: the preNormal
// hook satisfied; without a hook, from v1.9.0 once the pod is bound to a node (util.HasPodScheduled,
// pkg/controller/cloneset/sync/cloneset_update.go, openkruise/kruise#1485), before it at once.
func (m *Manager) leavesPreparingNormal(w *kruise.Workload, pod *corev1.Pod) bool {
	if w.Lifecycle.PreNormal != nil {
		return allHooked(w.Lifecycle.PreNormal, pod)
	}
	return !m.waitScheduled || pod.Spec.NodeName != ""
}

// allHooked is IsPodAllHooked: every hook finalizer on the pod and every hook label equal.
func allHooked(h *kruise.LifecycleHook, pod *corev1.Pod) bool {
	if h == nil {
		return true
	}
	for _, f := range h.FinalizersHandler {
		if !hasString(pod.Finalizers, f) {
			return false
		}
	}
	for k, v := range h.LabelsHandler {
		if pod.Labels[k] != v {
			return false
		}
	}
	return true
}

func (p *leaderProcess) setLifecycleState(ctx context.Context, pod *corev1.Pod, state string) (*corev1.Pod, error) {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"labels":      map[string]string{kruise.LabelLifecycleState: state},
		"annotations": map[string]string{kruise.AnnotationLifecycleTime: time.Now().UTC().Format(time.RFC3339)},
	}})
	if err != nil {
		return nil, err
	}
	out, err := p.m.kube.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch,
		metav1.PatchOptions{FieldManager: managerFieldManager})
	if err != nil {
		return nil, fmt.Errorf("set lifecycle state of pod %s: %w", pod.Name, err)
	}
	// KruisePodReady stays True (podreadiness, v1.9.0): only a hook's markPodNotReady, which the
	// stand-in does not model, sets it False. The write is a no-op kept for pods created before it.
	if err := p.setConditions(ctx, out, corev1.PodCondition{Type: "KruisePodReady", Status: corev1.ConditionTrue}); err != nil {
		return nil, err
	}
	return out, nil
}

// setConditions patches pod conditions (merged by type), as kruise's controllers do.
func (p *leaderProcess) setConditions(ctx context.Context, pod *corev1.Pod, conds ...corev1.PodCondition) error {
	now := metav1.Now()
	for i := range conds {
		conds[i].LastTransitionTime = now
	}
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": conds}})
	if err != nil {
		return err
	}
	_, err = p.m.kube.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch,
		metav1.PatchOptions{FieldManager: managerFieldManager}, "status")
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("set conditions of pod %s: %w", pod.Name, err)
	}
	return nil
}

// createPod creates one pod of the revision, as createPods in cloneset_scale.go does.
func (p *leaderProcess) createPod(ctx context.Context, w *kruise.Workload, key, revision, hash string) error {
	id := utilrand.String(5)
	tpl := w.Template.DeepCopy()
	yes := true
	pod := &corev1.Pod{ObjectMeta: tpl.ObjectMeta, Spec: tpl.Spec}
	pod.Name, pod.Namespace = w.Name+"-"+id, w.Namespace
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels["controller-revision-hash"] = revision
	pod.Labels["pod-template-hash"] = hash
	pod.Labels["apps.kruise.io/cloneset-instance-id"] = id
	pod.Labels[kruise.LabelLifecycleState] = kruise.StatePreparingNormal
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[kruise.AnnotationLifecycleTime] = time.Now().UTC().Format(time.RFC3339)
	pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: w.APIVersion, Kind: w.Kind, Name: w.Name, UID: w.UID,
		Controller: &yes, BlockOwnerDeletion: &yes}}
	pod.Spec.ReadinessGates = append(pod.Spec.ReadinessGates,
		corev1.PodReadinessGate{ConditionType: kruise.ConditionInPlaceReady}, corev1.PodReadinessGate{ConditionType: "KruisePodReady"})

	p.exp.expect(key, "create", pod.Name)
	created, err := p.m.kube.CoreV1().Pods(w.Namespace).Create(ctx, pod, metav1.CreateOptions{FieldManager: managerFieldManager})
	if err != nil {
		p.exp.observe(key, "create", pod.Name)
		raw, _ := json.Marshal(pod)
		p.event(ctx, w, corev1.EventTypeWarning, "FailedCreate", fmt.Sprintf("failed to create pod: %v, pod: %s", err, raw))
		return fmt.Errorf("create pod for %s: %w", key, err)
	}
	p.event(ctx, w, corev1.EventTypeNormal, "SuccessfulCreate", "succeed to create pod "+created.Name)
	// inplaceupdate's Refresh sets InPlaceUpdateReady on a pod with its gate; the pod readiness
	// controller sets KruisePodReady True on a pod with its gate and no such condition
	// (ReconcilePodReadiness.Reconcile, pkg/controller/podreadiness, v1.9.0), whatever the
	// lifecycle state: a PreparingNormal pod can be Ready, it is only not available.
	return p.setConditions(ctx, created,
		corev1.PodCondition{Type: kruise.ConditionInPlaceReady, Status: corev1.ConditionTrue},
		corev1.PodCondition{Type: "KruisePodReady", Status: corev1.ConditionTrue})
}

func (p *leaderProcess) deletePod(ctx context.Context, w *kruise.Workload, key string, pod *corev1.Pod) error {
	p.exp.expect(key, "delete", pod.Name)
	if err := p.m.kube.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		p.exp.observe(key, "delete", pod.Name)
		return fmt.Errorf("delete pod %s: %w", pod.Name, err)
	}
	p.event(ctx, w, corev1.EventTypeNormal, "SuccessfulDelete", "succeed to delete pod "+pod.Name)
	return nil
}

// event records an event on the CloneSet as kruise's cloneset-controller recorder does.
func (p *leaderProcess) event(ctx context.Context, w *kruise.Workload, typ, reason, msg string) {
	recordEvent(ctx, p.m, cloneSetController, w, typ, reason, msg)
}

// recordEvent records an event on the workload from the named controller.
func recordEvent(ctx context.Context, m *Manager, controller string, w *kruise.Workload, typ, reason, msg string) {
	now := metav1.Now()
	e := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", w.Name, now.UnixNano()), Namespace: w.Namespace},
		InvolvedObject: corev1.ObjectReference{APIVersion: w.APIVersion, Kind: w.Kind, Namespace: w.Namespace,
			Name: w.Name, UID: w.UID, ResourceVersion: w.ResourceVersion},
		Reason: reason, Message: msg, Type: typ, Count: 1, FirstTimestamp: now, LastTimestamp: now,
		Source: corev1.EventSource{Component: controller}, ReportingController: controller,
	}
	if _, err := m.kube.CoreV1().Events(w.Namespace).Create(ctx, e, metav1.CreateOptions{}); err != nil && ctx.Err() == nil {
		m.logf("kruise-manager: record event %s on %s/%s: %v", reason, w.Namespace, w.Name, err)
	}
}

// writeStatus writes the status calculateStatus computes, when it changed.
func (p *leaderProcess) writeStatus(ctx context.Context, u *unstructured.Unstructured, w *kruise.Workload, active []*corev1.Pod,
	replicas int32, updateRevision string) error {
	var ready, available, updated, updatedReady, updatedAvailable int64
	for _, pod := range active {
		r := podUpdateReady(pod)
		a := r && pod.Labels[kruise.LabelLifecycleState] == kruise.StateNormal
		if r {
			ready++
			if a {
				available++
			}
		}
		if pod.Labels["controller-revision-hash"] == updateRevision {
			updated++
			if r {
				updatedReady++
			}
			if a {
				updatedAvailable++
			}
		}
	}
	n := int64(len(active))
	current := w.Status.CurrentRevision
	if current == "" || (updated == n && n == int64(replicas)) {
		current = updateRevision
	}
	expectedUpdated := int64(replicas)
	if w.Partition != nil {
		expectedUpdated = max(0, int64(replicas)-int64(*w.Partition))
	}
	selector, err := metav1.LabelSelectorAsSelector(w.Selector)
	if err != nil {
		return fmt.Errorf("selector of %s/%s: %w", w.Namespace, w.Name, err)
	}
	status := map[string]any{
		"observedGeneration": w.Generation, "replicas": n, "readyReplicas": ready, "availableReplicas": available,
		"updatedReplicas": updated, "updatedReadyReplicas": updatedReady, "expectedUpdatedReplicas": expectedUpdated,
		"updateRevision": updateRevision, "currentRevision": current, "collisionCount": int64(0),
		"labelSelector": selector.String(),
	}
	old, _, _ := unstructured.NestedMap(u.Object, "status")
	if conds, ok := old["conditions"]; ok {
		status["conditions"] = conds
	}
	if msg := inPlaceOnlyRefusal(w, active, updateRevision); msg != "" {
		status["conditions"] = setFailedUpdate(status["conditions"], msg)
	}
	conds, requeue := progressing(w, w.ProgressDeadlineSeconds, status["conditions"], progressCounts{replicas: n, updated: updated,
		updatedAvailable: updatedAvailable, expectedUpdated: expectedUpdated, currentRevision: current, updateRevision: updateRevision}, time.Now())
	if requeue >= 0 {
		p.queue.AddAfter(w.Namespace+"/"+w.Name, requeue)
	}
	if len(conds) > 0 {
		status["conditions"] = conds
	} else {
		delete(status, "conditions")
	}
	if equality.Semantic.DeepEqual(runtime.DeepCopyJSONValue(old), runtime.DeepCopyJSONValue(status)) {
		return nil
	}
	out := u.DeepCopy()
	out.Object["status"] = status
	_, err = p.m.dyn.Resource(kruise.CloneSets).Namespace(w.Namespace).UpdateStatus(ctx, out, metav1.UpdateOptions{FieldManager: managerFieldManager})
	if err != nil {
		return fmt.Errorf("update status of %s/%s: %w", w.Namespace, w.Name, err)
	}
	return nil
}

// podReady says whether the pod's Ready condition is True (podutil.IsPodReady).
func PodReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// podUpdateReady is IsPodUpdateReady (pkg/controller/cloneset/core/cloneset_core.go, v1.9.0, with
// minReadySeconds 0): Running, Ready, and InPlaceUpdateReady not set other than True.
func podUpdateReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == kruise.ConditionInPlaceReady && c.Status != corev1.ConditionTrue {
			return false
		}
	}
	return p.Status.Phase == corev1.PodRunning && PodReady(p)
}

func hasString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
