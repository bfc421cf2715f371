package scenario

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
)

// The kruise-manager the scenario installs: the Helm chart's names, one Deployment of two replicas
// whose leader holds the Lease.
const (
	KruiseNamespace  = "kruise-system"
	KruiseDeployment = "kruise-controller-manager"
	kruiseLease      = "kruise-manager"
	managerContainer = "manager"
	// controller-runtime's leader election defaults, which kruise-manager keeps.
	leaseDuration = 15 * time.Second
	retryPeriod   = 2 * time.Second
	// managerFieldManager is the field manager kruise-manager's writes carry.
	managerFieldManager = "kruise-manager"
	cloneSetController  = "cloneset-controller"
)

// kruiseManagerLabels select the manager's pods (the Helm chart's labels).
var kruiseManagerLabels = map[string]string{"control-plane": "controller-manager"}

// KruiseManager stands in for the leader of kruise-manager v1.7.0: no container runs in the
// scenario cluster (kwok only simulates pods), so this process does, through the API, what the
// leader's CloneSet controller does there, with the behaviour the checks diagnose:
//
//   - leader election: the Lease kruise-system/kruise-manager is held by "<pod>_<uuid>" of a
//     Running manager pod and renewed every 2s; when the leader's pod is deleted the Lease is not
//     released (observed with the real v1.7.0), and another Running replica takes it over once it
//     expires (15s). A new leader starts with empty memory: no expectations.
//   - the CloneSet controller: pods created from the template with kruise's labels, annotations,
//     readiness gates and owner reference, SuccessfulCreate events; lifecycle refresh from
//     PreparingNormal to Normal once the preNormal hook is satisfied (IsPodAllHooked); status as
//     calculateStatus writes it; scale expectations that skip every reconcile while unsatisfied,
//     logging "Not satisfied scale" and, past --expectation-timeout, "Expectation unsatisfied
//     overtime" to the leader container's log, which kwok serves through pods/log.
//   - CloneSetEventHandlerOptimization (v1.4.0-v1.8.x, openkruise/kruise#2057): pod update events
//     that change only a preNormal hook's finalizers are ignored, so the pod is not refreshed.
//
// It does not roll out template changes (the scenario only edits a paused CloneSet) and keeps no
// ControllerRevisions or resourceVersion expectations.
type KruiseManager struct {
	kube    kubernetes.Interface
	dyn     dynamic.Interface
	logFile string
	logf    func(format string, args ...any)
	// eventFilter is CloneSetEventHandlerOptimization=true.
	eventFilter        bool
	expectationTimeout time.Duration

	mu     sync.Mutex
	leader *leaderProcess
}

// newKruiseManager returns the stand-in for a manager run with the given flags.
func newKruiseManager(kube kubernetes.Interface, dyn dynamic.Interface, logFile string, eventFilter bool,
	expectationTimeout time.Duration, logf func(string, ...any)) *KruiseManager {
	return &KruiseManager{kube: kube, dyn: dyn, logFile: logFile, logf: logf, eventFilter: eventFilter, expectationTimeout: expectationTimeout}
}

// Run plays the manager's replicas until ctx ends.
func (m *KruiseManager) Run(ctx context.Context) {
	t := time.NewTicker(retryPeriod)
	defer t.Stop()
	defer m.stopLeader()
	for {
		m.tick(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Leader returns the pod whose process leads, or "".
func (m *KruiseManager) Leader() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.leader == nil {
		return ""
	}
	return m.leader.pod
}

// WaitLeading waits until a leader runs with synced caches.
func (m *KruiseManager) WaitLeading(ctx context.Context, timeout time.Duration) error {
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		m.mu.Lock()
		p := m.leader
		m.mu.Unlock()
		return p != nil && p.synced(), nil
	})
	if err != nil {
		return fmt.Errorf("wait for a kruise-manager leader: %w", err)
	}
	return nil
}

func (m *KruiseManager) tick(ctx context.Context) {
	m.mu.Lock()
	p := m.leader
	m.mu.Unlock()
	if p != nil {
		alive, err := m.podRunning(ctx, p.pod)
		if err != nil {
			return
		}
		if !alive {
			// The container got SIGTERM: the process ends, and with it everything it kept in memory.
			m.logf("kruise-manager: leader pod %s/%s is going away; its Lease stays until it expires", KruiseNamespace, p.pod)
			m.stopLeader()
			return
		}
		if err := m.renew(ctx, p.identity); err != nil {
			m.logf("kruise-manager: renew Lease: %v", err)
		}
		return
	}
	m.tryAcquire(ctx)
}

// podRunning reports whether the manager pod's process would still run: the pod exists and is
// not being deleted.
func (m *KruiseManager) podRunning(ctx context.Context, name string) (bool, error) {
	pod, err := m.kube.CoreV1().Pods(KruiseNamespace).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, err
	}
	return pod.DeletionTimestamp == nil, nil
}

func (m *KruiseManager) renew(ctx context.Context, identity string) error {
	lease, err := m.kube.CoordinationV1().Leases(KruiseNamespace).Get(ctx, kruiseLease, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity != identity {
		m.logf("kruise-manager: lost the Lease to %v", lease.Spec.HolderIdentity)
		m.stopLeader()
		return nil
	}
	lease.Spec.RenewTime = &metav1.MicroTime{Time: time.Now()}
	_, err = m.kube.CoordinationV1().Leases(KruiseNamespace).Update(ctx, lease, metav1.UpdateOptions{FieldManager: managerFieldManager})
	return err
}

// tryAcquire takes the Lease for a Running manager pod once nobody holds it validly.
func (m *KruiseManager) tryAcquire(ctx context.Context) {
	leases := m.kube.CoordinationV1().Leases(KruiseNamespace)
	lease, err := leases.Get(ctx, kruiseLease, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		lease = nil
	case err != nil:
		return
	}
	now := time.Now()
	if lease != nil && lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != "" && lease.Spec.RenewTime != nil {
		dur := leaseDuration
		if lease.Spec.LeaseDurationSeconds != nil {
			dur = time.Duration(*lease.Spec.LeaseDurationSeconds) * time.Second
		}
		if now.Before(lease.Spec.RenewTime.Add(dur)) {
			return // a holder, alive or not, still has it
		}
	}
	pod, err := m.candidate(ctx)
	if err != nil || pod == "" {
		return
	}
	identity := pod + "_" + string(uuid.NewUUID())
	secs := int32(leaseDuration / time.Second)
	spec := coordinationv1.LeaseSpec{HolderIdentity: &identity, LeaseDurationSeconds: &secs,
		AcquireTime: &metav1.MicroTime{Time: now}, RenewTime: &metav1.MicroTime{Time: now}}
	if lease == nil {
		zero := int32(0)
		spec.LeaseTransitions = &zero
		_, err = leases.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: kruiseLease, Namespace: KruiseNamespace}, Spec: spec},
			metav1.CreateOptions{FieldManager: managerFieldManager})
	} else {
		n := int32(1)
		if lease.Spec.LeaseTransitions != nil {
			n = *lease.Spec.LeaseTransitions + 1
		}
		spec.LeaseTransitions = &n
		lease.Spec = spec
		_, err = leases.Update(ctx, lease, metav1.UpdateOptions{FieldManager: managerFieldManager})
	}
	if err != nil {
		return
	}
	p, err := m.startLeader(ctx, pod, identity)
	if err != nil {
		m.logf("kruise-manager: start the leader in pod %s: %v", pod, err)
		return
	}
	m.mu.Lock()
	m.leader = p
	m.mu.Unlock()
	m.logf("kruise-manager: pod %s/%s leads (Lease %s/%s, holder %s)", KruiseNamespace, pod, KruiseNamespace, kruiseLease, identity)
}

// candidate is the oldest Running, Ready manager pod that is not being deleted.
func (m *KruiseManager) candidate(ctx context.Context) (string, error) {
	list, err := m.kube.CoreV1().Pods(KruiseNamespace).List(ctx, metav1.ListOptions{LabelSelector: "control-plane=controller-manager"})
	if err != nil {
		return "", err
	}
	var pods []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && podReady(&p) {
			pods = append(pods, p)
		}
	}
	if len(pods) == 0 {
		return "", nil
	}
	sort.Slice(pods, func(i, j int) bool {
		if !pods[i].CreationTimestamp.Equal(&pods[j].CreationTimestamp) {
			return pods[i].CreationTimestamp.Before(&pods[j].CreationTimestamp)
		}
		return pods[i].Name < pods[j].Name
	})
	return pods[0].Name, nil
}

func (m *KruiseManager) stopLeader() {
	m.mu.Lock()
	p := m.leader
	m.leader = nil
	m.mu.Unlock()
	if p != nil {
		p.stop()
	}
}

// PodWatchOutage cuts the leader's pod watch the way a broken connection does, runs fn, then lets
// the watch recover: the informer re-lists, and whatever was created and deleted in between is
// never seen (openkruise/kruise#1765). It returns once the re-list happened.
func (m *KruiseManager) PodWatchOutage(ctx context.Context, fn func(context.Context) error) error {
	m.mu.Lock()
	p := m.leader
	m.mu.Unlock()
	if p == nil {
		return errors.New("pod watch outage: no kruise-manager leader")
	}
	before := p.pods.LastSyncResourceVersion()
	p.podsLW.cut()
	err := fn(ctx)
	p.podsLW.restore()
	if err != nil {
		return err
	}
	// The reflector backs off up to a few seconds between failed lists.
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 90*time.Second, true, func(context.Context) (bool, error) {
		return p.podsLW.recovered() && p.pods.LastSyncResourceVersion() != before, nil
	})
	if err != nil {
		return fmt.Errorf("wait for the kruise-manager pod watch to re-list: %w", err)
	}
	return nil
}

// ---- one leader process ----

// leaderProcess is the leading manager container: its informers, work queue and memory.
type leaderProcess struct {
	m        *KruiseManager
	pod      string
	identity string
	cancel   context.CancelFunc
	done     chan struct{}
	podsLW   *outageListWatch
	pods     cache.SharedIndexInformer
	sets     cache.SharedIndexInformer
	queue    workqueue.TypedRateLimitingInterface[string]
	exp      *scaleExpectations
	log      *managerLog
	hasSync  func() bool
}

const byController = "controller"

func (m *KruiseManager) startLeader(parent context.Context, pod, identity string) (*leaderProcess, error) {
	log := &managerLog{path: m.logFile}
	if err := log.reset(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(parent)
	p := &leaderProcess{m: m, pod: pod, identity: identity, cancel: cancel, done: make(chan struct{}), log: log,
		exp:   newScaleExpectations(),
		queue: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())}
	log.info("leaderelection.go:254", "attempting to acquire leader lease %s/%s...", KruiseNamespace, kruiseLease)
	log.info("leaderelection.go:268", "successfully acquired lease %s/%s", KruiseNamespace, kruiseLease)

	p.podsLW = &outageListWatch{lw: cache.NewListWatchFromClient(m.kube.CoreV1().RESTClient(), "pods", metav1.NamespaceAll, fields.Everything())}
	p.pods = cache.NewSharedIndexInformer(p.podsLW, &corev1.Pod{}, 0, cache.Indexers{byController: func(obj any) ([]string, error) {
		if ref := metav1.GetControllerOf(obj.(*corev1.Pod)); ref != nil {
			return []string{string(ref.UID)}, nil
		}
		return nil, nil
	}})
	p.sets = dynamicinformer.NewFilteredDynamicInformer(m.dyn, kruise.CloneSets, metav1.NamespaceAll, 0, cache.Indexers{}, nil).Informer()
	if _, err := p.sets.AddEventHandler(cache.ResourceEventHandlerFuncs{
		// Every CloneSet event requeues it: the controller's update predicate returns true.
		AddFunc:    func(obj any) { p.enqueueObject(obj) },
		UpdateFunc: func(_, obj any) { p.enqueueObject(obj) },
		DeleteFunc: func(obj any) { p.enqueueObject(obj) },
	}); err != nil {
		cancel()
		return nil, err
	}
	if _, err := p.pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    p.podAdded,
		UpdateFunc: p.podUpdated,
		DeleteFunc: p.podDeleted,
	}); err != nil {
		cancel()
		return nil, err
	}
	p.hasSync = func() bool { return p.pods.HasSynced() && p.sets.HasSynced() }
	go p.pods.Run(ctx.Done())
	go p.sets.Run(ctx.Done())
	go func() {
		defer close(p.done)
		if !cache.WaitForCacheSync(ctx.Done(), p.hasSync) {
			return
		}
		log.info("controller.go:219", `"Starting workers" controller="cloneset" worker count=1`)
		go func() {
			<-ctx.Done()
			p.queue.ShutDown()
		}()
		for p.work(ctx) {
		}
	}()
	return p, nil
}

func (p *leaderProcess) synced() bool { return p.hasSync() }

func (p *leaderProcess) stop() {
	p.cancel()
	p.queue.ShutDown()
	<-p.done
}

func (p *leaderProcess) enqueueObject(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	if key, err := cache.MetaNamespaceKeyFunc(obj); err == nil {
		p.queue.Add(key)
	}
}

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
	if oldPod.Generation != cur.Generation || podReady(oldPod) != podReady(cur) {
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

func (p *leaderProcess) work(ctx context.Context) bool {
	key, quit := p.queue.Get()
	if quit {
		return false
	}
	defer p.queue.Done(key)
	if err := p.reconcile(ctx, key); err != nil {
		// A conflict means the cache is behind a write; the retry reads the newer object.
		if ctx.Err() == nil && !apierrors.IsConflict(err) {
			p.m.logf("kruise-manager: reconcile CloneSet %s: %v", key, err)
		}
		p.queue.AddRateLimited(key)
		return true
	}
	p.queue.Forget(key)
	return true
}

// reconcile is the CloneSet controller's doReconcile, reduced to what the scenario exercises.
func (p *leaderProcess) reconcile(ctx context.Context, key string) error {
	obj, exists, err := p.sets.GetIndexer().GetByKey(key)
	if err != nil {
		return err
	}
	if !exists {
		p.exp.forget(key)
		return nil
	}
	u := obj.(*unstructured.Unstructured)
	w, err := kruise.WorkloadFromUnstructured(u)
	if err != nil || w.DeletionTimestamp != nil {
		return nil
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

	// Lifecycle: PreparingNormal -> Normal once the preNormal hook is satisfied (refreshPodState).
	for i, pod := range active {
		if pod.Labels[kruise.LabelLifecycleState] != kruise.StatePreparingNormal || !allHooked(w.Lifecycle.PreNormal, pod) {
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
	switch diff := int(replicas) - len(active); {
	case diff > 0:
		for range diff {
			if err := p.createPod(ctx, w, key, updateRevision, hash); err != nil {
				return err
			}
		}
	case diff < 0:
		for _, pod := range active[len(active)+diff:] {
			if err := p.deletePod(ctx, w, key, pod); err != nil {
				return err
			}
		}
	}
	return p.writeStatus(ctx, u, w, active, replicas, updateRevision)
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
	// kruise's pod readiness controller follows the lifecycle state with KruisePodReady.
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
		p.event(ctx, w, corev1.EventTypeWarning, "FailedCreate", fmt.Sprintf("failed to create pod: %v", err))
		return fmt.Errorf("create pod for %s: %w", key, err)
	}
	p.event(ctx, w, corev1.EventTypeNormal, "SuccessfulCreate", "succeed to create pod "+created.Name)
	return p.setConditions(ctx, created,
		corev1.PodCondition{Type: kruise.ConditionInPlaceReady, Status: corev1.ConditionTrue},
		corev1.PodCondition{Type: "KruisePodReady", Status: corev1.ConditionFalse})
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
	now := metav1.Now()
	e := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", w.Name, now.UnixNano()), Namespace: w.Namespace},
		InvolvedObject: corev1.ObjectReference{APIVersion: w.APIVersion, Kind: w.Kind, Namespace: w.Namespace,
			Name: w.Name, UID: w.UID, ResourceVersion: w.ResourceVersion},
		Reason: reason, Message: msg, Type: typ, Count: 1, FirstTimestamp: now, LastTimestamp: now,
		Source: corev1.EventSource{Component: cloneSetController}, ReportingController: cloneSetController,
	}
	if _, err := p.m.kube.CoreV1().Events(w.Namespace).Create(ctx, e, metav1.CreateOptions{}); err != nil && ctx.Err() == nil {
		p.m.logf("kruise-manager: record event %s on %s/%s: %v", reason, w.Namespace, w.Name, err)
	}
}

// writeStatus writes the status calculateStatus computes, when it changed.
func (p *leaderProcess) writeStatus(ctx context.Context, u *unstructured.Unstructured, w *kruise.Workload, active []*corev1.Pod,
	replicas int32, updateRevision string) error {
	var ready, available, updated, updatedReady int64
	for _, pod := range active {
		r := podReady(pod)
		if r {
			ready++
			if pod.Labels[kruise.LabelLifecycleState] == kruise.StateNormal {
				available++
			}
		}
		if pod.Labels["controller-revision-hash"] == updateRevision {
			updated++
			if r {
				updatedReady++
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

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func hasString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// ---- scale expectations ----

// scaleExpectations are kruise's ScaleExpectations: the pods each CloneSet created or deleted and
// has not seen the event of yet, kept only in the leader's memory.
type scaleExpectations struct {
	mu sync.Mutex
	m  map[string]*scaleEntry
}

type scaleEntry struct {
	pods  map[string]map[string]bool // action -> pod names
	since time.Time
}

func newScaleExpectations() *scaleExpectations {
	return &scaleExpectations{m: map[string]*scaleEntry{}}
}

func (e *scaleExpectations) expect(key, action, name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.m[key]
	if s == nil {
		s = &scaleEntry{pods: map[string]map[string]bool{}}
		e.m[key] = s
	}
	if len(s.pods) == 0 {
		s.since = time.Now()
	}
	if s.pods[action] == nil {
		s.pods[action] = map[string]bool{}
	}
	s.pods[action][name] = true
}

func (e *scaleExpectations) observe(key, action, name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.m[key]
	if s == nil || s.pods[action] == nil {
		return
	}
	delete(s.pods[action], name)
	if len(s.pods[action]) == 0 {
		delete(s.pods, action)
	}
	if len(s.pods) == 0 {
		delete(e.m, key)
	}
}

func (e *scaleExpectations) forget(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.m, key)
}

// satisfied reports whether nothing is expected for the key; otherwise how long it has waited and
// the dirty pods as kruise logs them ({"create":["name"]}).
func (e *scaleExpectations) satisfied(key string) (bool, time.Duration, string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.m[key]
	if s == nil {
		return true, 0, ""
	}
	dirty := map[string][]string{}
	for action, names := range s.pods {
		for n := range names {
			dirty[action] = append(dirty[action], n)
		}
		sort.Strings(dirty[action])
	}
	raw, _ := json.Marshal(dirty)
	return false, time.Since(s.since), string(raw)
}

// ---- the leader container's log ----

// managerLog is the leader container's log as the container runtime writes it (CRI format; klog
// writes to stderr), which kwok serves through the kubelet API.
type managerLog struct {
	mu   sync.Mutex
	path string
}

// reset starts a new container's log.
func (l *managerLog) reset() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := os.WriteFile(l.path, nil, 0o600); err != nil {
		return fmt.Errorf("kruise-manager log: %w", err)
	}
	return nil
}

// info appends a klog line: "I<mmdd hh:mm:ss.uuuuuu> <pid> <file>] <message>".
func (l *managerLog) info(file, format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now().UTC()
	line := fmt.Sprintf("I%02d%02d %02d:%02d:%02d.%06d       1 %s] %s", now.Month(), now.Day(), now.Hour(), now.Minute(), now.Second(),
		now.Nanosecond()/1000, file, fmt.Sprintf(format, args...))
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "%s stderr F %s\n", now.Format(time.RFC3339Nano), line)
}

// ---- a pod watch that can break ----

// outageListWatch lists and watches pods, and can fail like a dropped connection: cut stops every
// open watch and fails new lists and watches until restore.
type outageListWatch struct {
	lw cache.ListerWatcher

	mu      sync.Mutex
	down    bool
	watches []watch.Interface
	// ok counts lists and watches that succeeded since the last restore.
	ok int
}

var errOutage = errors.New("connection refused (pod watch outage)")

func (o *outageListWatch) List(opts metav1.ListOptions) (runtime.Object, error) {
	o.mu.Lock()
	down := o.down
	o.mu.Unlock()
	if down {
		return nil, errOutage
	}
	obj, err := o.lw.List(opts)
	if err == nil {
		o.mu.Lock()
		o.ok++
		o.mu.Unlock()
	}
	return obj, err
}

func (o *outageListWatch) Watch(opts metav1.ListOptions) (watch.Interface, error) {
	o.mu.Lock()
	down := o.down
	o.mu.Unlock()
	if down {
		return nil, errOutage
	}
	w, err := o.lw.Watch(opts)
	if err != nil {
		return nil, err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.watches = append(o.watches, w)
	o.ok++
	return w, nil
}

func (o *outageListWatch) cut() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.down = true
	for _, w := range o.watches {
		w.Stop()
	}
	o.watches = nil
}

func (o *outageListWatch) restore() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.down, o.ok = false, 0
}

func (o *outageListWatch) recovered() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return !o.down && o.ok > 0
}
