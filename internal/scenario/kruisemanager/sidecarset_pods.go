package kruisemanager

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
)

// updatePods is Processor.updatePods: the pods the strategy picks are updated one by one, and
// each is expected only once its update (and its SidecarSetUpgradable condition) was written.
func (c *sidecarSetController) updatePods(ctx context.Context, ss *sidecarSet, pods []*corev1.Pod) error {
	upgrade, notUpgradable := ss.nextUpgradePods(pods)
	for _, pod := range notUpgradable {
		if err := c.setUpgradable(ctx, ss, pod, false); err != nil {
			return err
		}
	}
	if len(upgrade) == 0 {
		c.p.log.infoV(3, "sidecarset_processor.go:181", `"SidecarSet next update was nil, skip this round" sidecarSet=%q`, ss.Name)
		return nil
	}
	var names []string
	for _, pod := range upgrade {
		names = append(names, pod.Name)
		if err := c.updatePod(ctx, ss, pod); err != nil {
			return err
		}
		if c.p.m.takeSidecarRace(ss.Name) {
			if err := c.deleteBeforeExpectation(ctx, pod); err != nil {
				return err
			}
		}
		c.exp.expectUpdated(ss.Name, ss.revision(), pod)
	}
	c.p.log.infoV(3, "sidecarset_processor.go:194", `"SidecarSet updated pods" sidecarSet=%q podNames=%q`, ss.Name, strings.Join(names, ","))
	return nil
}

// updatePod is updatePodSidecarAndHash: the sidecar containers take the SidecarSet's images,
// the pod its hash and, per changed container, the imageID it ran before
// (UpdatePodAnnotationsInUpgrade), written with one pod update.
func (c *sidecarSetController) updatePod(ctx context.Context, ss *sidecarSet, cached *corev1.Pod) error {
	pods := c.p.m.kube.CoreV1().Pods(cached.Namespace)
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		pod, err := pods.Get(ctx, cached.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		changed := map[string]map[string]string{}
		for _, sc := range ss.Spec.Containers {
			if pc := containerNamed(pod, sc.Name); pc != nil && pc.Image != sc.Image {
				pc.Image = sc.Image
				changed[sc.Name] = map[string]string{"imageID": containerImageID(pod, sc.Name)}
			}
		}
		now := metav1.Now()
		setPodRevision(pod, kruise.AnnotationSidecarHash, ss, ss.revision(), now)
		states := map[string]*sidecarUpdateState{}
		_ = json.Unmarshal([]byte(pod.Annotations[annotationSidecarUpdateState]), &states) // unreadable: start afresh
		st := states[ss.Name]
		if st == nil {
			st = &sidecarUpdateState{Revision: ss.revision(), UpdateTimestamp: now}
			states[ss.Name] = st
		}
		if st.LastContainerStatuses == nil {
			st.LastContainerStatuses = map[string]map[string]string{}
		}
		for n, s := range changed {
			st.LastContainerStatuses[n] = s
		}
		raw, err := json.Marshal(states)
		if err != nil {
			return err
		}
		pod.Annotations[annotationSidecarUpdateState] = string(raw)
		_, err = pods.Update(ctx, pod, metav1.UpdateOptions{FieldManager: managerFieldManager})
		return err
	})
	if err != nil {
		return fmt.Errorf("update sidecars of pod %s/%s: %w", cached.Namespace, cached.Name, err)
	}
	return c.setUpgradable(ctx, ss, cached, true)
}

func containerImageID(pod *corev1.Pod, name string) string {
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == name {
			return cs.ImageID
		}
	}
	return ""
}

// setUpgradable is updatePodSidecarSetUpgradableCondition: the condition's message keeps each
// SidecarSet's verdict, and it is True only while every one is upgradable. The pod is the cached
// one, so an unchanged condition costs no write.
func (c *sidecarSetController) setUpgradable(ctx context.Context, ss *sidecarSet, pod *corev1.Pod, upgradable bool) error {
	verdicts := map[string]bool{}
	var old *corev1.PodCondition
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == conditionSidecarUpgradable {
			old = &pod.Status.Conditions[i]
			_ = json.Unmarshal([]byte(old.Message), &verdicts) // unreadable: start afresh
		}
	}
	verdicts[ss.Name] = upgradable
	cond := corev1.PodCondition{Type: conditionSidecarUpgradable, Status: corev1.ConditionTrue, Reason: "AllSidecarsetUpgradable"}
	for _, ok := range verdicts {
		if !ok {
			cond.Status, cond.Reason = corev1.ConditionFalse, "UpdateImmutableField"
		}
	}
	raw, _ := json.Marshal(verdicts)
	cond.Message = string(raw)
	if old != nil && old.Status == cond.Status && old.Reason == cond.Reason && old.Message == cond.Message {
		return nil
	}
	return c.p.setConditions(ctx, pod, cond)
}

// podSidecarSets are the SidecarSets the pod's injected list names that still match its
// containers (getPodMatchedSidecarSets).
func (c *sidecarSetController) podSidecarSets(pod *corev1.Pod) []*sidecarSet {
	var out []*sidecarSet
	for _, name := range strings.Split(pod.Annotations[kruise.AnnotationSidecarInjects], ",") {
		obj, exists, err := c.sets.GetIndexer().GetByKey(strings.TrimSpace(name))
		if err != nil || !exists {
			continue
		}
		if ss, err := decodeSidecarSet(obj.(*unstructured.Unstructured)); err == nil && ss.injected(pod) {
			out = append(out, ss)
		}
	}
	return out
}

func (c *sidecarSetController) podAdded(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	for _, ss := range c.podSidecarSets(pod) {
		c.queue.Add(ss.Name)
	}
}

// podDeleted forgets the pod's update expectations; a deletion requeues nothing.
func (c *sidecarSetController) podDeleted(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	for _, ss := range c.podSidecarSets(pod) {
		c.exp.deleteObject(ss.Name, pod)
	}
	c.deleteHandled(pod)
}

// podUpdated requeues the SidecarSets for which the change matters: deletion started,
// readiness, the sidecars' consistency (5s later) or labels under an updateStrategy selector.
func (c *sidecarSetController) podUpdated(oldObj, newObj any) {
	oldPod, cur := oldObj.(*corev1.Pod), newObj.(*corev1.Pod)
	if oldPod.ResourceVersion == cur.ResourceVersion {
		return
	}
	for _, ss := range c.podSidecarSets(cur) {
		if ss.Spec.UpdateStrategy.Type == sidecarNotUpdate {
			continue
		}
		switch {
		case (oldPod.DeletionTimestamp == nil && cur.DeletionTimestamp != nil) ||
			(oldPod.DeletionTimestamp == nil && PodReady(oldPod) != PodReady(cur)):
			c.queue.Add(ss.Name)
		case oldPod.DeletionTimestamp != nil:
		case ss.consistent(oldPod) != ss.consistent(cur):
			c.queue.AddAfter(ss.Name, 5*time.Second)
		case ss.Spec.UpdateStrategy.Selector != nil && !equality.Semantic.DeepEqual(oldPod.Labels, cur.Labels):
			c.queue.Add(ss.Name)
		}
	}
}

// DeletePodInSidecarUpdate arms the race of openkruise/kruise#2253 for the SidecarSet: the next
// pod its controller updates is deleted right after the update was written (a scale-in, an
// eviction, a person), and the leader handles the delete event before it records the pod's
// update expectation. The expectation then names a pod that no longer exists and is never
// cleared: the SidecarSet updates nothing more, logging "update in flight" every second, until
// the leader restarts.
func (m *Manager) DeletePodInSidecarUpdate(sidecarSet string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.sidecarRaces == nil {
		m.sidecarRaces = map[string]int{}
	}
	m.sidecarRaces[sidecarSet]++
}

func (m *Manager) takeSidecarRace(sidecarSet string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.sidecarRaces[sidecarSet] == 0 {
		return false
	}
	m.sidecarRaces[sidecarSet]--
	return true
}

// deleteBeforeExpectation deletes the pod and waits until this controller handled its delete event.
func (c *sidecarSetController) deleteBeforeExpectation(ctx context.Context, pod *corev1.Pod) error {
	handled := make(chan struct{})
	c.mu.Lock()
	c.deleted[podKey(pod)] = handled
	c.mu.Unlock()
	grace := int64(0)
	uid := pod.UID
	if err := c.p.m.kube.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &grace,
		Preconditions: &metav1.Preconditions{UID: &uid}}); err != nil {
		return fmt.Errorf("delete pod %s/%s during its sidecar update: %w", pod.Namespace, pod.Name, err)
	}
	select {
	case <-handled:
		c.p.m.logf("kruise-manager: pod %s/%s was deleted during its sidecar update, before the controller expected it", pod.Namespace, pod.Name)
		return nil
	case <-time.After(time.Minute):
		return fmt.Errorf("the delete event of pod %s/%s was not handled", pod.Namespace, pod.Name)
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *sidecarSetController) deleteHandled(pod *corev1.Pod) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ch, ok := c.deleted[podKey(pod)]; ok {
		close(ch)
		delete(c.deleted, podKey(pod))
	}
}
