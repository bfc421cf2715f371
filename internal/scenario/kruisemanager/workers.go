package kruisemanager

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
)

// workloadController is one of the leader's controllers besides the CloneSet one (Advanced
// StatefulSet, Advanced DaemonSet): kruise-manager runs each with its own informer of its kind
// and its own work queue; the leader's pod informer and pod event handlers are shared.
type workloadController struct {
	p *leaderProcess
	// name is the controller's name as its event recorder reports it.
	name  string
	kind  string
	gvr   schema.GroupVersionResource
	sets  cache.SharedIndexInformer
	queue workqueue.TypedRateLimitingInterface[string]
	// exp are the pods created or deleted whose events the controller has not seen yet.
	exp  *scaleExpectations
	sync func(ctx context.Context, c *workloadController, u *unstructured.Unstructured, w *kruise.Workload) error
	// templates remembers each revision's template, as ControllerRevisions keep it (the
	// stand-in writes none): a pod created on an older revision gets that revision's template.
	templates map[string]corev1.PodTemplateSpec
}

func (p *leaderProcess) newWorkloadController(name, kind string, gvr schema.GroupVersionResource,
	sync func(context.Context, *workloadController, *unstructured.Unstructured, *kruise.Workload) error) (*workloadController, error) {
	c := &workloadController{p: p, name: name, kind: kind, gvr: gvr, exp: newScaleExpectations(), sync: sync,
		templates: map[string]corev1.PodTemplateSpec{},
		queue:     workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())}
	c.sets = dynamicinformer.NewFilteredDynamicInformer(p.m.dyn, gvr, metav1.NamespaceAll, 0, cache.Indexers{}, nil).Informer()
	enqueue := func(obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
			c.queue.Add(key)
		}
	}
	if _, err := c.sets.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, obj any) { enqueue(obj) }, DeleteFunc: enqueue,
	}); err != nil {
		return nil, fmt.Errorf("watch %s: %w", gvr.Resource, err)
	}
	return c, nil
}

// run works the queue until ctx ends; the caller waits for the caches first.
func (c *workloadController) run(ctx context.Context) {
	go func() {
		<-ctx.Done()
		c.queue.ShutDown()
	}()
	for c.work(ctx) {
	}
}

func (c *workloadController) work(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	if err := c.reconcile(ctx, key); err != nil {
		if ctx.Err() == nil && !apierrors.IsConflict(err) && !apierrors.IsAlreadyExists(err) {
			c.p.m.logf("kruise-manager: reconcile %s %s: %v", c.kind, key, err)
		}
		c.queue.AddRateLimited(key)
		return true
	}
	c.queue.Forget(key)
	return true
}

func (c *workloadController) reconcile(ctx context.Context, key string) error {
	u, w, err := cachedWorkload(c.sets, c.exp, key)
	if err != nil || w == nil {
		return err
	}
	return c.sync(ctx, c, u, w)
}

// cachedWorkload is the workload the informer holds under key, nil when it is gone (its
// expectations forgotten), being deleted or does not decode: nothing to reconcile.
func cachedWorkload(sets cache.SharedIndexInformer, exp *scaleExpectations, key string) (*unstructured.Unstructured, *kruise.Workload, error) {
	obj, exists, err := sets.GetIndexer().GetByKey(key)
	if err != nil {
		return nil, nil, err
	}
	if !exists {
		exp.forget(key)
		return nil, nil, nil
	}
	u := obj.(*unstructured.Unstructured)
	w, err := kruise.WorkloadFromUnstructured(u)
	if err != nil || w.DeletionTimestamp != nil {
		return nil, nil, nil
	}
	return u, w, nil
}

// ownedPods are the pods the workload controls, sorted by name, terminating ones included.
func (c *workloadController) ownedPods(w *kruise.Workload) ([]*corev1.Pod, error) {
	objs, err := c.p.pods.GetIndexer().ByIndex(byController, string(w.UID))
	if err != nil {
		return nil, err
	}
	var out []*corev1.Pod
	for _, o := range objs {
		if pod := o.(*corev1.Pod); pod.Namespace == w.Namespace {
			out = append(out, pod)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// newPod is a pod of the workload's template at revision (labelled with it), controlled by it.
func (c *workloadController) newPod(w *kruise.Workload, name, revision, revisionLabel string) *corev1.Pod {
	tpl, ok := c.templates[revision]
	if !ok {
		tpl = w.Template
	}
	tpl = *tpl.DeepCopy()
	yes := true
	pod := &corev1.Pod{ObjectMeta: tpl.ObjectMeta, Spec: tpl.Spec}
	pod.Name, pod.Namespace = name, w.Namespace
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Labels[revisionLabelKey] = revisionLabel
	pod.OwnerReferences = []metav1.OwnerReference{{APIVersion: w.APIVersion, Kind: w.Kind, Name: w.Name, UID: w.UID,
		Controller: &yes, BlockOwnerDeletion: &yes}}
	return pod
}

func (c *workloadController) createPod(ctx context.Context, w *kruise.Workload, pod *corev1.Pod, msg string) error {
	key := w.Namespace + "/" + w.Name
	c.exp.expect(key, "create", pod.Name)
	if _, err := c.p.m.kube.CoreV1().Pods(w.Namespace).Create(ctx, pod, metav1.CreateOptions{FieldManager: managerFieldManager}); err != nil {
		c.exp.observe(key, "create", pod.Name)
		if !apierrors.IsAlreadyExists(err) {
			c.event(ctx, w, corev1.EventTypeWarning, "FailedCreate", fmt.Sprintf("%s: %v", msg, err))
		}
		return fmt.Errorf("create pod %s for %s %s: %w", pod.Name, c.kind, key, err)
	}
	c.event(ctx, w, corev1.EventTypeNormal, "SuccessfulCreate", msg)
	return nil
}

func (c *workloadController) deletePod(ctx context.Context, w *kruise.Workload, pod *corev1.Pod, msg string) error {
	key := w.Namespace + "/" + w.Name
	c.exp.expect(key, "delete", pod.Name)
	if err := c.p.m.kube.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
		c.exp.observe(key, "delete", pod.Name)
		if apierrors.IsNotFound(err) {
			return nil
		}
		c.event(ctx, w, corev1.EventTypeWarning, "FailedDelete", fmt.Sprintf("failed to delete pod %s: %v", pod.Name, err))
		return fmt.Errorf("delete pod %s: %w", pod.Name, err)
	}
	c.event(ctx, w, corev1.EventTypeNormal, "SuccessfulDelete", msg)
	return nil
}

func (c *workloadController) event(ctx context.Context, w *kruise.Workload, typ, reason, msg string) {
	recordEvent(ctx, c.p.m, c.name, w, typ, reason, msg)
}

// writeStatus replaces the workload's status when it differs from what the object carries,
// keeping the conditions it has.
func (c *workloadController) writeStatus(ctx context.Context, u *unstructured.Unstructured, status map[string]any) error {
	old, _, _ := unstructured.NestedMap(u.Object, "status")
	if conds, ok := old["conditions"]; ok {
		status["conditions"] = conds
	}
	if equality.Semantic.DeepEqual(runtime.DeepCopyJSONValue(old), runtime.DeepCopyJSONValue(status)) {
		return nil
	}
	out := u.DeepCopy()
	out.Object["status"] = status
	if _, err := c.p.m.dyn.Resource(c.gvr).Namespace(u.GetNamespace()).UpdateStatus(ctx, out,
		metav1.UpdateOptions{FieldManager: managerFieldManager}); err != nil {
		return fmt.Errorf("update status of %s %s/%s: %w", c.kind, u.GetNamespace(), u.GetName(), err)
	}
	return nil
}

// podOwner returns the workload controller and key of the pod's controlling owner, if one of
// the workload controllers runs its kind.
func (p *leaderProcess) podOwner(pod *corev1.Pod) (*workloadController, string, bool) {
	ref := metav1.GetControllerOf(pod)
	if ref == nil {
		return nil, "", false
	}
	for _, c := range p.workloads {
		if ref.Kind == c.kind && strings.HasPrefix(ref.APIVersion, kruise.Group+"/") {
			return c, pod.Namespace + "/" + ref.Name, true
		}
	}
	return nil, "", false
}

// startWorkloadControllers makes the leader's Advanced StatefulSet and Advanced DaemonSet
// controllers; startLeader runs their informers and workers.
func (p *leaderProcess) startWorkloadControllers() error {
	for _, c := range []struct {
		name, kind string
		gvr        schema.GroupVersionResource
		sync       func(context.Context, *workloadController, *unstructured.Unstructured, *kruise.Workload) error
	}{
		{"statefulset-controller", kruise.KindStatefulSet, kruise.StatefulSets, syncStatefulSet},
		{"daemonset-controller", kruise.KindDaemonSet, kruise.DaemonSets, syncDaemonSet},
	} {
		wc, err := p.newWorkloadController(c.name, c.kind, c.gvr, c.sync)
		if err != nil {
			return err
		}
		p.workloads = append(p.workloads, wc)
	}
	return nil
}
