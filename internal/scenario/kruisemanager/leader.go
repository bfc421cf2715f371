package kruisemanager

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
)

// leaderProcess is the leading manager container: its informers, work queue and memory.
type leaderProcess struct {
	m        *Manager
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
	// workloads are the controllers of the other workload kinds the leader runs.
	workloads []*workloadController
	sidecars  *sidecarSetController
}

const byController = "controller"

func (m *Manager) startLeader(parent context.Context, pod, identity string) (*leaderProcess, error) {
	log := &managerLog{path: m.logFile, verbosity: m.podVerbosity(parent, pod)}
	if err := log.reset(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(parent)
	p := &leaderProcess{m: m, pod: pod, identity: identity, cancel: cancel, done: make(chan struct{}), log: log,
		exp:   newScaleExpectations(),
		queue: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())}
	log.info("leaderelection.go:254", "attempting to acquire leader lease %s/%s...", Namespace, leaderLease)
	log.info("leaderelection.go:268", "successfully acquired lease %s/%s", Namespace, leaderLease)

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
	if err := p.startWorkloadControllers(); err != nil {
		cancel()
		return nil, err
	}
	sidecars, err := newSidecarSetController(p)
	if err != nil {
		cancel()
		return nil, err
	}
	p.sidecars = sidecars
	p.hasSync = func() bool {
		synced := p.pods.HasSynced() && p.sets.HasSynced() && p.sidecars.sets.HasSynced()
		for _, c := range p.workloads {
			synced = synced && c.sets.HasSynced()
		}
		return synced
	}
	go p.pods.Run(ctx.Done())
	go p.sets.Run(ctx.Done())
	for _, c := range p.workloads {
		go c.sets.Run(ctx.Done())
	}
	go p.sidecars.sets.Run(ctx.Done())
	go func() {
		defer close(p.done)
		if !cache.WaitForCacheSync(ctx.Done(), p.hasSync) {
			return
		}
		var wg sync.WaitGroup
		defer wg.Wait()
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.sidecars.run(ctx)
		}()
		for _, c := range p.workloads {
			log.info("controller.go:219", `"Starting workers" controller=%q worker count=1`, c.name)
			wg.Add(1)
			go func() {
				defer wg.Done()
				c.run(ctx)
			}()
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

// stopLeader ends the leading process, and with it everything it kept in memory.
func (m *Manager) stopLeader() {
	m.mu.Lock()
	p := m.leader
	m.leader = nil
	m.mu.Unlock()
	if p != nil {
		p.stop()
	}
}

// work reconciles the next CloneSet of the queue; it returns false once the queue shuts down.
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
