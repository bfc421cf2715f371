package kruisemanager

import (
	"context"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilrand "k8s.io/apimachinery/pkg/util/rand"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
)

// syncDaemonSet is the stand-in's Advanced DaemonSet controller: syncDaemonSet
// (pkg/controller/daemonset/daemonset_controller.go, OpenKruise v1.9.0) reduced to the rules a
// rollout follows:
//
//   - one pod per node the template's nodeName, nodeSelector and the taints (beside the
//     tolerations every daemon pod gets) let it run on, created with the revision label (the bare
//     template hash) and a required node affinity to its node for the scheduler; extra, failed and
//     PreparingDelete pods deleted, pods on nodes that no longer fit removed (manage, podsShouldBeOnNode);
//   - create and delete expectations: while a pod the controller created or deleted has not been
//     seen, only the status is written, without observedGeneration;
//   - the rolling update (rollingUpdate with maxSurge 0): unless paused or OnDelete, on the nodes
//     the partition leaves (filterDaemonPodsNodeToUpdate: the highest node names first) old pods
//     are deleted, unavailable ones always, available ones while fewer than maxUnavailable
//     (default 1) nodes are unavailable; manage then creates their replacements;
//   - status as updateDaemonSetStatus counts it, in the form apps.kruise.io/v1alpha1 clients read
//     (the conversion webhook names v1beta1's updateRevision daemonSetHash). v1.9.0's Advanced
//     DaemonSet has no progressDeadlineSeconds and no Progressing condition.
//
// Not modelled: maxSurge, in-place updates, the rolling update's node selector, partitioned
// scaling, required node affinity of the template, minReadySeconds and lifecycle hooks.
func syncDaemonSet(ctx context.Context, c *workloadController, u *unstructured.Unstructured, w *kruise.Workload) error {
	key := w.Namespace + "/" + w.Name
	list, err := c.p.m.kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("list nodes for DaemonSet %s: %w", key, err)
	}
	hash, err := templateHash(u)
	if err != nil {
		return err
	}
	c.templates[hash] = w.Template
	ds := &adsState{c: c, w: w, hash: hash, nodes: list.Items}
	if err := ds.readPods(); err != nil {
		return err
	}
	if ok, _, _ := c.exp.satisfied(key); !ok {
		return c.writeStatus(ctx, u, ds.status(false))
	}
	if err := ds.manage(ctx); err != nil {
		return err
	}
	if ok, _, _ := c.exp.satisfied(key); !ok {
		return c.writeStatus(ctx, u, ds.status(false))
	}
	if !w.Paused && w.UpdateType != kruise.UpdateOnDelete {
		var maxUnavailable *intstr.IntOrString
		if raw, ok, _ := unstructured.NestedFieldNoCopy(u.Object, "spec", "updateStrategy", "rollingUpdate", "maxUnavailable"); ok {
			v := intstr.Parse(fmt.Sprint(raw))
			maxUnavailable = &v
		}
		if err := ds.rollingUpdate(ctx, maxUnavailable); err != nil {
			return err
		}
	}
	return c.writeStatus(ctx, u, ds.status(true))
}

// adsState is one reconcile of an Advanced DaemonSet.
type adsState struct {
	c      *workloadController
	w      *kruise.Workload
	hash   string
	nodes  []corev1.Node
	byNode map[string][]*corev1.Pod
}

func (ds *adsState) readPods() error {
	pods, err := ds.c.ownedPods(ds.w)
	if err != nil {
		return err
	}
	ds.byNode = map[string][]*corev1.Pod{}
	for _, pod := range pods {
		if n := targetNode(pod); n != "" {
			ds.byNode[n] = append(ds.byNode[n], pod)
		}
	}
	for _, pods := range ds.byNode {
		sort.Slice(pods, func(i, j int) bool { return scheduledFirst(pods[i], pods[j]) })
	}
	return nil
}

// manage deletes the pods that should not run and creates the missing ones.
func (ds *adsState) manage(ctx context.Context) error {
	remove, create := ds.podsShouldBeOnNodes()
	return ds.syncNodes(ctx, remove, create)
}

// podsShouldBeOnNodes are the pods to delete and the nodes that need a pod.
func (ds *adsState) podsShouldBeOnNodes() ([]*corev1.Pod, []string) {
	var create []string
	var remove []*corev1.Pod
	for i := range ds.nodes {
		node := &ds.nodes[i]
		shouldRun, keep := daemonShouldRun(node, &ds.w.Template)
		pods := ds.byNode[node.Name]
		switch {
		case shouldRun && len(pods) == 0:
			create = append(create, node.Name)
		case keep:
			var running []*corev1.Pod
			for _, pod := range pods {
				switch {
				case pod.DeletionTimestamp != nil:
				case pod.Status.Phase == corev1.PodFailed || pod.Labels[kruise.LabelLifecycleState] == kruise.StatePreparingDelete:
					remove = append(remove, pod)
				default:
					running = append(running, pod)
				}
			}
			if len(running) > 1 {
				remove = append(remove, running[1:]...)
			}
		case len(pods) > 0:
			for _, pod := range pods {
				if pod.DeletionTimestamp == nil {
					remove = append(remove, pod)
				}
			}
		}
	}
	sort.Strings(create)
	return remove, create
}

func (ds *adsState) syncNodes(ctx context.Context, remove []*corev1.Pod, create []string) error {
	for _, node := range create {
		name := ds.w.Name + "-" + utilrand.String(5)
		pod := ds.c.newPod(ds.w, name, ds.hash, ds.hash)
		pod.Spec.Affinity = nodeNameAffinity(pod.Spec.Affinity, node)
		pod.Spec.Tolerations = append(pod.Spec.Tolerations, daemonTolerations...)
		if err := ds.c.createPod(ctx, ds.w, pod, "Created pod: "+name); err != nil {
			return err
		}
	}
	for _, pod := range remove {
		if err := ds.c.deletePod(ctx, ds.w, pod, "Deleted pod: "+pod.Name); err != nil {
			return err
		}
	}
	return nil
}

// rollingUpdate deletes the old pods the partition and maxUnavailable let go; manage creates
// their replacements.
func (ds *adsState) rollingUpdate(ctx context.Context, raw *intstr.IntOrString) error {
	old, err := ds.oldPodsToDelete(raw)
	if err != nil {
		return err
	}
	return ds.syncNodes(ctx, old, nil)
}

// oldPodsToDelete are the old pods unavailable on the nodes to update, and as many available
// ones as maxUnavailable (default 1, of the nodes that should run a pod) leaves room for.
func (ds *adsState) oldPodsToDelete(raw *intstr.IntOrString) ([]*corev1.Pod, error) {
	var nodes []string
	for i := range ds.nodes {
		if run, _ := daemonShouldRun(&ds.nodes[i], &ds.w.Template); run {
			nodes = append(nodes, ds.nodes[i].Name)
		}
	}
	maxUnavailable, err := intstr.GetScaledValueFromIntOrPercent(intstr.ValueOrDefault(raw, intstr.FromInt32(0)), len(nodes), true)
	if err != nil {
		return nil, fmt.Errorf("maxUnavailable of %s/%s: %w", ds.w.Namespace, ds.w.Name, err)
	}
	if len(nodes) > 0 && maxUnavailable == 0 {
		maxUnavailable = 1
	}
	numUnavailable := 0
	var allowed, candidates []*corev1.Pod
	for _, node := range ds.toUpdate(nodes) {
		newPod, oldPod, ok := ds.podsOn(node)
		switch {
		case !ok, (oldPod == nil) == (newPod == nil):
			numUnavailable++
		case newPod != nil:
			if !PodReady(newPod) {
				numUnavailable++
			}
		case !PodReady(oldPod):
			allowed = append(allowed, oldPod)
		case numUnavailable < maxUnavailable:
			candidates = append(candidates, oldPod)
		}
	}
	n := min(max(maxUnavailable-numUnavailable, 0), len(candidates))
	return append(allowed, candidates[:n]...), nil
}

// toUpdate is filterDaemonPodsNodeToUpdate: the nodes already updated or updating first, then
// the rest from the highest name down, as many as the partition leaves.
func (ds *adsState) toUpdate(nodes []string) []string {
	sort.Sort(sort.Reverse(sort.StringSlice(nodes)))
	var updated, updating, rest []string
	for _, node := range nodes {
		newPod, oldPod, ok := ds.podsOn(node)
		switch {
		case !ok || newPod != nil:
			updated = append(updated, node)
		case oldPod == nil || oldPod.Labels[kruise.LabelLifecycleState] == kruise.StatePreparingDelete:
			updating = append(updating, node)
		default:
			rest = append(rest, node)
		}
	}
	sorted := append(append(updated, updating...), rest...)
	partition := 0
	if ds.w.Partition != nil {
		partition = int(*ds.w.Partition)
	}
	return sorted[:max(min(len(nodes)-partition, len(sorted)), 0)]
}

// podsOn is findUpdatedPodsOnNode: the node's one new and one old pod, not ok when it has more.
func (ds *adsState) podsOn(node string) (newPod, oldPod *corev1.Pod, ok bool) {
	for _, pod := range ds.byNode[node] {
		if pod.DeletionTimestamp != nil {
			continue
		}
		if pod.Labels[revisionLabelKey] == ds.hash {
			if newPod != nil {
				return nil, nil, false
			}
			newPod = pod
		} else {
			if oldPod != nil {
				return nil, nil, false
			}
			oldPod = pod
		}
	}
	return newPod, oldPod, true
}

// status is what updateDaemonSetStatus counts, per node from its first pod.
func (ds *adsState) status(observed bool) map[string]any {
	var desired, current, misscheduled, ready, updated int64
	for i := range ds.nodes {
		run, _ := daemonShouldRun(&ds.nodes[i], &ds.w.Template)
		pods := ds.byNode[ds.nodes[i].Name]
		switch {
		case run:
			desired++
			if len(pods) > 0 {
				current++
				if PodReady(pods[0]) {
					ready++
				}
				if pods[0].Labels[revisionLabelKey] == ds.hash {
					updated++
				}
			}
		case len(pods) > 0:
			misscheduled++
		}
	}
	gen := ds.w.Status.ObservedGeneration
	if observed {
		gen = ds.w.Generation
	}
	return map[string]any{"observedGeneration": gen, "desiredNumberScheduled": desired, "currentNumberScheduled": current,
		"numberMisscheduled": misscheduled, "numberReady": ready, "updatedNumberScheduled": updated, "numberAvailable": ready,
		"numberUnavailable": desired - ready, "daemonSetHash": ds.hash}
}

func nowRFC3339() string { return time.Now().UTC().Format(time.RFC3339) }
