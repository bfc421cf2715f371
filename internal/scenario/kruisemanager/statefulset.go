package kruisemanager

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
)

const revisionLabelKey = "controller-revision-hash"

// syncStatefulSet is the stand-in's Advanced StatefulSet controller: UpdateStatefulSet
// (pkg/controller/statefulset/stateful_set_control.go, OpenKruise v1.9.0) reduced to the rules a
// rollout follows:
//
//   - pods named <set>-<ordinal>, created in ordinal order with the revision label, the pod-name
//     and pod-index labels, hostname and subdomain, and lifecycle state Normal (PreparingNormal
//     while a preNormal hook is not yet on the pod); with podManagementPolicy OrderedReady each
//     step waits for the pod before it to be Running, Ready and Normal (processReplica), scale in
//     takes the highest ordinal first once the pods are healthy (processCondemned);
//   - pods below the partition are created on the current revision (isCurrentRevisionNeeded);
//   - the rolling update (rollingUpdateStatefulsetPods): unless paused or OnDelete, pods from the
//     highest ordinal down to the partition off the update revision are deleted and so recreated
//     on it, while fewer than maxUnavailable (default 1, at least 1) pods are unhealthy;
//   - status as updateStatus and completeRollingUpdate write it: currentRevision follows the
//     update revision only once every pod is updated and ready. v1.9.0's Advanced StatefulSet
//     has no progressDeadlineSeconds and no Progressing condition.
//
// Not modelled: in-place updates, unorderedUpdate, minReadySeconds, volumeClaimTemplates,
// reserveOrdinals, specified-delete and ControllerRevisions.
func syncStatefulSet(ctx context.Context, c *workloadController, u *unstructured.Unstructured, w *kruise.Workload) error {
	pods, err := c.ownedPods(w)
	if err != nil {
		return err
	}
	hash, err := templateHash(u)
	if err != nil {
		return err
	}
	st := &astsState{c: c, w: w, update: w.Name + "-" + hash, current: w.Status.CurrentRevision, replicas: 1}
	c.templates[st.update] = w.Template
	if st.current == "" {
		st.current = st.update
	}
	if w.Replicas != nil {
		st.replicas = int(*w.Replicas)
	}
	if w.Partition != nil {
		st.partition = int(*w.Partition)
	}
	policy, _, _ := unstructured.NestedString(u.Object, "spec", "podManagementPolicy")
	st.monotonic = policy != "Parallel"
	st.serviceName, _, _ = unstructured.NestedString(u.Object, "spec", "serviceName")
	st.slots = make([]*corev1.Pod, st.replicas)
	for _, pod := range pods {
		switch ord := ordinal(w.Name, pod.Name); {
		case ord >= 0 && ord < st.replicas:
			st.slots[ord] = pod
		case ord >= st.replicas:
			st.condemned = append([]*corev1.Pod{pod}, st.condemned...) // descending ordinal
		}
	}
	status := st.status()
	done, err := st.scale(ctx)
	if err == nil && !done && w.UpdateType != kruise.UpdateOnDelete && !w.Paused {
		var maxUnavailable *intstr.IntOrString
		if raw, ok, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "updateStrategy", "rollingUpdate", "maxUnavailable"); ok {
			v := intstr.Parse(fmt.Sprint(raw))
			maxUnavailable = &v
		}
		err = st.rollingUpdate(ctx, maxUnavailable)
	}
	if serr := c.writeStatus(ctx, u, status); serr != nil && err == nil {
		err = serr
	}
	return err
}

// astsState is one reconcile of an Advanced StatefulSet.
type astsState struct {
	c                   *workloadController
	w                   *kruise.Workload
	update, current     string
	replicas, partition int
	monotonic           bool
	serviceName         string
	slots, condemned    []*corev1.Pod
}

// ordinal is the pod's ordinal when its name is <set>-<n>, else -1.
func ordinal(set, pod string) int {
	n, err := strconv.Atoi(strings.TrimPrefix(pod, set+"-"))
	if err != nil || !strings.HasPrefix(pod, set+"-") || n < 0 {
		return -1
	}
	return n
}

// scale creates missing pods and removes those beyond replicas; done says the reconcile ends here.
func (st *astsState) scale(ctx context.Context) (bool, error) {
	firstUnhealthy := ""
	for _, pod := range append(append([]*corev1.Pod{}, st.slots...), reversed(st.condemned)...) {
		if pod != nil && !astsHealthy(pod) && firstUnhealthy == "" {
			firstUnhealthy = pod.Name
		}
	}
	for i, pod := range st.slots {
		switch {
		case pod == nil:
			if err := st.create(ctx, i); err != nil {
				return true, err
			}
			if st.monotonic {
				return true, nil
			}
			continue
		case pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded:
			if pod.DeletionTimestamp == nil {
				if err := st.remove(ctx, pod); err != nil {
					return true, err
				}
			}
			if st.monotonic {
				return true, nil
			}
			continue
		case pod.DeletionTimestamp != nil:
			if st.monotonic {
				return true, nil
			}
			continue
		}
		if pod.Labels[kruise.LabelLifecycleState] == kruise.StatePreparingNormal && allHooked(st.w.Lifecycle.PreNormal, pod) {
			if _, err := st.c.p.setLifecycleState(ctx, pod, kruise.StateNormal); err != nil {
				return true, err
			}
		}
		if st.monotonic && !astsHealthy(pod) {
			return true, nil
		}
	}
	for _, pod := range st.condemned {
		if pod.DeletionTimestamp != nil || (!isRunningAndReady(pod) && pod.Name != firstUnhealthy) {
			if st.monotonic {
				return true, nil
			}
			continue
		}
		if err := st.remove(ctx, pod); err != nil || st.monotonic {
			return true, err
		}
	}
	return false, nil
}

// rollingUpdate deletes the pods to update, so that scale recreates them on the update revision.
func (st *astsState) rollingUpdate(ctx context.Context, raw *intstr.IntOrString) error {
	maxUnavailable, err := intstr.GetScaledValueFromIntOrPercent(intstr.ValueOrDefault(raw, intstr.FromInt32(1)), st.replicas, false)
	if err != nil {
		return fmt.Errorf("maxUnavailable of %s/%s: %w", st.w.Namespace, st.w.Name, err)
	}
	for _, pod := range st.toUpdate(max(maxUnavailable, 1)) {
		if err := st.remove(ctx, pod); err != nil {
			return err
		}
	}
	return nil
}

// toUpdate are the pods the rolling update deletes now: from the highest ordinal down to the
// partition, those off the update revision, until maxUnavailable pods are unavailable.
func (st *astsState) toUpdate(maxUnavailable int) []*corev1.Pod {
	unavailable := map[string]bool{}
	for _, pod := range st.slots {
		if pod != nil && !astsHealthy(pod) {
			unavailable[pod.Name] = true
		}
	}
	var out []*corev1.Pod
	for i := len(st.slots) - 1; i >= st.partition; i-- {
		pod := st.slots[i]
		if pod == nil || pod.Labels[revisionLabelKey] == st.update {
			continue
		}
		if len(unavailable) >= maxUnavailable && !unavailable[pod.Name] {
			break
		}
		if pod.DeletionTimestamp == nil {
			out = append(out, pod)
		}
		unavailable[pod.Name] = true
	}
	return out
}

// create makes the pod of an ordinal on the revision isCurrentRevisionNeeded picks.
func (st *astsState) create(ctx context.Context, ord int) error {
	rev := st.revisionFor(ord)
	name := fmt.Sprintf("%s-%d", st.w.Name, ord)
	pod := st.c.newPod(st.w, name, rev, rev)
	pod.Labels["statefulset.kubernetes.io/pod-name"] = name
	pod.Labels["apps.kubernetes.io/pod-index"] = strconv.Itoa(ord)
	pod.Spec.Hostname, pod.Spec.Subdomain = name, st.serviceName
	state := kruise.StateNormal
	if h := st.w.Lifecycle.PreNormal; h != nil && !allHooked(h, pod) {
		state = kruise.StatePreparingNormal
	}
	setLifecycle(pod, state)
	return st.c.createPod(ctx, st.w, pod, fmt.Sprintf("create Pod %s in StatefulSet %s successful", name, st.w.Name))
}

// revisionFor is isCurrentRevisionNeeded: with a rolling update, the current revision for the
// ordinals below the partition (every lower slot holds a pod or the one being created for it).
func (st *astsState) revisionFor(ord int) string {
	if st.w.UpdateType != kruise.UpdateOnDelete && ord < st.partition {
		return st.current
	}
	return st.update
}

// remove deletes the pod, or moves it to PreparingDelete while the preDelete hook holds it.
func (st *astsState) remove(ctx context.Context, pod *corev1.Pod) error {
	if hookHolds(st.w.Lifecycle.PreDelete, pod) {
		if pod.Labels[kruise.LabelLifecycleState] == kruise.StatePreparingDelete {
			return nil
		}
		_, err := st.c.p.setLifecycleState(ctx, pod, kruise.StatePreparingDelete)
		return err
	}
	return st.c.deletePod(ctx, st.w, pod, fmt.Sprintf("delete Pod %s in StatefulSet %s successful", pod.Name, st.w.Name))
}

// status is updateStatus over the pods with completeRollingUpdate.
func (st *astsState) status() map[string]any {
	var replicas, ready, available, current, updated, updatedReady, updatedAvailable int64
	for _, pod := range append(append([]*corev1.Pod{}, st.slots...), st.condemned...) {
		if pod == nil || pod.Status.Phase == "" {
			continue
		}
		replicas++
		rev := pod.Labels[revisionLabelKey]
		if isRunningAndReady(pod) {
			ready++
			avail := astsAvailable(pod)
			if avail {
				available++
			}
			if rev == st.update {
				updatedReady++
				if avail {
					updatedAvailable++
				}
			}
		}
		if pod.DeletionTimestamp == nil {
			if rev == st.current {
				current++
			}
			if rev == st.update {
				updated++
			}
		}
	}
	currentRevision := st.current
	if st.w.UpdateType != kruise.UpdateOnDelete && updated == replicas && ready == replicas {
		current, currentRevision = updated, st.update
	}
	selector, _ := metav1.LabelSelectorAsSelector(st.w.Selector)
	sel := ""
	if selector != nil {
		sel = selector.String()
	}
	return map[string]any{
		"observedGeneration": st.w.Generation, "replicas": replicas, "readyReplicas": ready, "availableReplicas": available,
		"currentReplicas": current, "updatedReplicas": updated, "updatedReadyReplicas": updatedReady,
		"updatedAvailableReplicas": updatedAvailable, "currentRevision": currentRevision, "updateRevision": st.update,
		"collisionCount": int64(0), "labelSelector": sel,
	}
}

// isRunningAndReady is the StatefulSet's: Running with condition Ready.
func isRunningAndReady(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodRunning && PodReady(pod)
}

// astsAvailable is isRunningAndAvailable without minReadySeconds: Normal, Running and Ready.
func astsAvailable(pod *corev1.Pod) bool {
	state := pod.Labels[kruise.LabelLifecycleState]
	return (state == "" || state == kruise.StateNormal) && isRunningAndReady(pod)
}

// astsHealthy is isHealthy: available and not terminating.
func astsHealthy(pod *corev1.Pod) bool { return astsAvailable(pod) && pod.DeletionTimestamp == nil }

// setLifecycle is SetPodLifecycle: the state label and its timestamp.
func setLifecycle(pod *corev1.Pod, state string) {
	pod.Labels[kruise.LabelLifecycleState] = state
	pod.Annotations[kruise.AnnotationLifecycleTime] = nowRFC3339()
}

func reversed(pods []*corev1.Pod) []*corev1.Pod {
	out := make([]*corev1.Pod, len(pods))
	for i, p := range pods {
		out[len(pods)-1-i] = p
	}
	return out
}
