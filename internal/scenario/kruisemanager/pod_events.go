package kruisemanager

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
)

// The leader's pod event handlers: each event observes the scale expectations and requeues the
// pod's CloneSet, except the updates CloneSetEventHandlerOptimization filters out, or the pod's
// Advanced StatefulSet or Advanced DaemonSet.

// cloneSetKey returns the CloneSet that controls the pod, as "namespace/name".
func cloneSetKey(pod *corev1.Pod) (string, bool) {
	ref := metav1.GetControllerOf(pod)
	if ref == nil || ref.Kind != kruise.KindCloneSet || !strings.HasPrefix(ref.APIVersion, kruise.Group+"/") {
		return "", false
	}
	return pod.Namespace + "/" + ref.Name, true
}

func (p *leaderProcess) podAdded(obj any) {
	pod := obj.(*corev1.Pod)
	if pod.DeletionTimestamp != nil {
		p.podDeleted(obj)
		return
	}
	if key, ok := cloneSetKey(pod); ok {
		p.exp.observe(key, "create", pod.Name)
		p.queue.Add(key)
	} else if c, key, ok := p.podOwner(pod); ok {
		c.exp.observe(key, "create", pod.Name)
		c.queue.Add(key)
	}
}

func (p *leaderProcess) podDeleted(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	if key, ok := cloneSetKey(pod); ok {
		p.exp.observe(key, "delete", pod.Name)
		p.queue.Add(key)
	} else if c, key, ok := p.podOwner(pod); ok {
		c.exp.observe(key, "delete", pod.Name)
		c.queue.Add(key)
	}
}

func (p *leaderProcess) podUpdated(oldObj, newObj any) {
	oldPod, cur := oldObj.(*corev1.Pod), newObj.(*corev1.Pod)
	if oldPod.ResourceVersion == cur.ResourceVersion {
		return
	}
	if cur.DeletionTimestamp != nil {
		p.podDeleted(cur)
		return
	}
	key, ok := cloneSetKey(cur)
	if !ok {
		if c, key, ok := p.podOwner(cur); ok {
			c.queue.Add(key)
		}
		return
	}
	labelsChanged := !equality.Semantic.DeepEqual(oldPod.Labels, cur.Labels)
	if p.m.eventFilter && !labelsChanged && p.ignoreUpdate(key, oldPod, cur) {
		return
	}
	p.queue.Add(key)
}

// ignoreUpdate looks up the pod's CloneSet and applies ignorePodUpdate.
func (p *leaderProcess) ignoreUpdate(key string, oldPod, cur *corev1.Pod) bool {
	obj, exists, err := p.sets.GetIndexer().GetByKey(key)
	if err != nil || !exists {
		return false
	}
	w, err := kruise.WorkloadFromUnstructured(obj.(*unstructured.Unstructured))
	if err != nil {
		return false
	}
	return ignorePodUpdate(w, oldPod, cur)
}

// ignorePodUpdate is IgnorePodUpdateEvent of kruise v1.4.0-v1.8.x with
// CloneSetEventHandlerOptimization, for an update that changed no label: it matters only if the
// pod's generation, readiness or a preDelete/inPlaceUpdate hook finalizer changed. preNormal hook
// finalizers are missing from that list (openkruise/kruise#2057).
func ignorePodUpdate(w *kruise.Workload, oldPod, cur *corev1.Pod) bool {
	if oldPod.Generation != cur.Generation || PodReady(oldPod) != PodReady(cur) {
		return false
	}
	for _, h := range []*kruise.LifecycleHook{w.Lifecycle.PreDelete, w.Lifecycle.InPlaceUpdate} {
		if h == nil {
			continue
		}
		for _, f := range h.FinalizersHandler {
			if hasString(oldPod.Finalizers, f) != hasString(cur.Finalizers, f) {
				return false
			}
		}
	}
	return true
}
