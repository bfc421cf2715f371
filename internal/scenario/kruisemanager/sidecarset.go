package kruisemanager

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
)

// sidecarSetController is the leader's SidecarSet controller (pkg/controller/sidecarset,
// OpenKruise v1.9.0): it counts the matched pods into the SidecarSet's status, updates the
// sidecar images of matched pods in place within maxUnavailable, honours paused, partition and
// NotUpdate, and keeps its update expectations in memory, returning with "matched pods has some
// update in flight" while any is unsatisfied (Processor.UpdateSidecarSet).
type sidecarSetController struct {
	p     *leaderProcess
	sets  cache.SharedIndexInformer
	queue workqueue.TypedRateLimitingInterface[string]
	exp   *updateExpectations

	mu sync.Mutex
	// deleted are the pods whose delete event someone waits to see handled (sidecarset_race.go).
	deleted map[string]chan struct{}
}

// newSidecarSetController watches SidecarSets and registers the pod event handlers on the
// leader's pod informer (sidecarset_pod_event_handler.go); startLeader runs its informer and
// worker.
func newSidecarSetController(p *leaderProcess) (*sidecarSetController, error) {
	c := &sidecarSetController{p: p, exp: newUpdateExpectations(), deleted: map[string]chan struct{}{},
		queue: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())}
	c.sets = dynamicinformer.NewFilteredDynamicInformer(p.m.dyn, kruise.SidecarSets, metav1.NamespaceAll, 0, cache.Indexers{}, nil).Informer()
	if _, err := c.sets.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { c.enqueue(obj) },
		// The controller's predicate passes spec changes (generation); the hash annotations come
		// with them from the SidecarSet webhook, which the stand-in plays after the fact.
		UpdateFunc: func(oldObj, obj any) {
			o, n := oldObj.(*unstructured.Unstructured), obj.(*unstructured.Unstructured)
			if o.GetGeneration() != n.GetGeneration() || o.GetAnnotations()[kruise.AnnotationSidecarHash] != n.GetAnnotations()[kruise.AnnotationSidecarHash] {
				c.enqueue(obj)
			}
		},
		DeleteFunc: func(obj any) { c.enqueue(obj) },
	}); err != nil {
		return nil, fmt.Errorf("watch SidecarSets: %w", err)
	}
	if _, err := p.pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.podAdded, UpdateFunc: c.podUpdated, DeleteFunc: c.podDeleted,
	}); err != nil {
		return nil, fmt.Errorf("watch pods for SidecarSets: %w", err)
	}
	return c, nil
}

func (c *sidecarSetController) enqueue(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
		c.queue.Add(key)
	}
}

// run works the queue until ctx ends; the caller waits for the caches first.
func (c *sidecarSetController) run(ctx context.Context) {
	c.p.log.info("controller.go:219", `"Starting workers" controller="sidecarset" worker count=1`)
	go func() {
		<-ctx.Done()
		c.queue.ShutDown()
	}()
	for c.work(ctx) {
	}
}

func (c *sidecarSetController) work(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	after, err := c.reconcile(ctx, key)
	switch {
	case err != nil:
		if ctx.Err() == nil && !apierrors.IsConflict(err) {
			c.p.m.logf("kruise-manager: reconcile SidecarSet %s: %v", key, err)
		}
		c.queue.AddRateLimited(key)
	case after > 0:
		c.queue.Forget(key)
		c.queue.AddAfter(key, after)
	default:
		c.queue.Forget(key)
	}
	return true
}

// reconcile is Processor.UpdateSidecarSet; it returns when to look again.
func (c *sidecarSetController) reconcile(ctx context.Context, name string) (time.Duration, error) {
	obj, exists, err := c.sets.GetIndexer().GetByKey(name)
	if err != nil || !exists {
		return 0, err
	}
	u := obj.(*unstructured.Unstructured)
	ss, err := decodeSidecarSet(u)
	if err != nil {
		return 0, nil
	}
	if admitted, err := c.admit(ctx, ss); admitted || err != nil {
		return 0, err
	}
	var pods []*corev1.Pod
	for _, o := range c.p.pods.GetStore().List() {
		if pod := o.(*corev1.Pod); ss.matches(pod) {
			pods = append(pods, pod)
		}
	}
	// The status is written before the expectations are looked at: a leak leaves it as it is.
	st := ss.status(pods, latestRevision(ss))
	if err := c.writeStatus(ctx, u, ss, st); err != nil {
		return 0, err
	}
	ss.Status = st
	rev := ss.revision()
	for _, pod := range pods {
		c.exp.observeUpdated(ss.Name, rev, pod)
	}
	if ok, inFlight := c.exp.satisfied(ss.Name, rev); !ok {
		raw, _ := json.Marshal(inFlight)
		c.p.log.infoV(3, "sidecarset_processor.go:108", `"Sidecarset matched pods has some update in flight, will sync later" sidecarSet=%q pods=%s`, ss.Name, raw)
		return time.Second, nil
	}
	switch {
	case ss.Spec.UpdateStrategy.Type == sidecarNotUpdate:
		return 0, nil
	case ss.Spec.UpdateStrategy.Paused:
		c.p.log.infoV(3, "sidecarset_processor.go:119", `"SidecarSet was paused" sidecarSet=%q`, ss.Name)
		return 0, nil
	case st.UpdatedPods >= st.MatchedPods:
		c.p.log.infoV(3, "sidecarset_processor.go:154", `"SidecarSet matched pods were latest, and don't need update" sidecarSet=%q matchedPodCount=%d`, ss.Name, len(pods))
		return 0, nil
	}
	return 0, c.updatePods(ctx, ss, pods)
}

// admit plays the SidecarSet webhook (pkg/webhook/sidecarset/mutating, v1.9.0), which writes
// the hash annotations at admission: the stand-in runs no webhook, so it writes them before the
// controller acts on a changed spec, and reports whether it did.
func (c *sidecarSetController) admit(ctx context.Context, ss *sidecarSet) (bool, error) {
	hash, noImage, err := sidecarHashes(ss.Spec.Containers)
	if err != nil {
		return false, err
	}
	if ss.Annotations[kruise.AnnotationSidecarHash] == hash && ss.Annotations[annotationSidecarHashNoImage] == noImage {
		return false, nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
		kruise.AnnotationSidecarHash: hash, annotationSidecarHashNoImage: noImage}}})
	if err != nil {
		return false, err
	}
	if _, err := c.p.m.dyn.Resource(kruise.SidecarSets).Patch(ctx, ss.Name, types.MergePatchType, patch,
		metav1.PatchOptions{FieldManager: managerFieldManager}); err != nil && !apierrors.IsNotFound(err) {
		return false, fmt.Errorf("write the hash of SidecarSet %s: %w", ss.Name, err)
	}
	return true, nil
}

// latestRevision names the revision as kruise names its ControllerRevision
// ("<name>-<hash>"); the stand-in keeps no ControllerRevisions.
func latestRevision(ss *sidecarSet) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(ss.revision()))
	return ss.Name + "-" + utilrand.SafeEncodeString(fmt.Sprint(h.Sum32()))
}

// writeStatus is updateSidecarSetStatus: written when a count, the revision or the observed
// generation changed.
func (c *sidecarSetController) writeStatus(ctx context.Context, u *unstructured.Unstructured, ss *sidecarSet, st sidecarSetStatus) error {
	old := ss.Status
	if st.ObservedGeneration <= old.ObservedGeneration && st.MatchedPods == old.MatchedPods && st.UpdatedPods == old.UpdatedPods &&
		st.ReadyPods == old.ReadyPods && st.UpdatedReadyPods == old.UpdatedReadyPods && st.LatestRevision == old.LatestRevision {
		return nil
	}
	out := u.DeepCopy()
	out.Object["status"] = map[string]any{"observedGeneration": st.ObservedGeneration, "matchedPods": int64(st.MatchedPods),
		"updatedPods": int64(st.UpdatedPods), "readyPods": int64(st.ReadyPods), "updatedReadyPods": int64(st.UpdatedReadyPods),
		"latestRevision": st.LatestRevision, "collisionCount": int64(0)}
	if _, err := c.p.m.dyn.Resource(kruise.SidecarSets).UpdateStatus(ctx, out, metav1.UpdateOptions{FieldManager: managerFieldManager}); err != nil {
		return fmt.Errorf("update status of SidecarSet %s: %w", ss.Name, err)
	}
	c.p.log.infoV(3, "sidecarset_processor.go:262", `"SidecarSet updated status success" sidecarSet=%q matchedPods=%d updatedPods=%d readyPods=%d updateReadyPods=%d`,
		ss.Name, st.MatchedPods, st.UpdatedPods, st.ReadyPods, st.UpdatedReadyPods)
	return nil
}
