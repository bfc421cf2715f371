package kruisemanager

import (
	"context"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// The kruise-manager the scenario installs: the Helm chart's names, one Deployment of two replicas
// whose leader holds the Lease.
const (
	Namespace   = "kruise-system"
	Deployment  = "kruise-controller-manager"
	leaderLease = "kruise-manager"
	Container   = "manager"
	// controller-runtime's leader election defaults, which kruise-manager keeps.
	leaseDuration = 15 * time.Second
	RetryPeriod   = 2 * time.Second
	// managerFieldManager is the field manager kruise-manager's writes carry.
	managerFieldManager = "kruise-manager"
	cloneSetController  = "cloneset-controller"
)

// PodLabels select the manager's pods (the Helm chart's labels).
func PodLabels() map[string]string { return map[string]string{"control-plane": "controller-manager"} }

// Manager is the stand-in for the leader of kruise-manager, as the package doc describes it.
type Manager struct {
	kube    kubernetes.Interface
	dyn     dynamic.Interface
	logFile string
	logf    func(format string, args ...any)
	// eventFilter is CloneSetEventHandlerOptimization=true.
	eventFilter bool
	// verticalScaling is InPlaceWorkloadVerticalScaling=true.
	verticalScaling bool
	// waitScheduled is v1.9.0's CloneSet refreshPodState: a pod without a preNormal hook leaves
	// PreparingNormal only once scheduled.
	waitScheduled      bool
	expectationTimeout time.Duration

	mu     sync.Mutex
	leader *leaderProcess
	// sidecarRaces counts, per SidecarSet, the pod deletions armed by DeletePodInSidecarUpdate.
	sidecarRaces map[string]int
}

// Options are the flags and release behaviours of the manager the stand-in plays, and where its
// leader's log goes.
type Options struct {
	// LogFile is the leader container's log, which kwok serves through pods/log.
	LogFile string
	Logf    func(format string, args ...any)
	// EventFilter is CloneSetEventHandlerOptimization=true.
	EventFilter bool
	// VerticalScaling is InPlaceWorkloadVerticalScaling=true.
	VerticalScaling bool
	// WaitScheduled is v1.9.0's CloneSet refreshPodState: a pod without a preNormal hook leaves
	// PreparingNormal only once scheduled.
	WaitScheduled bool
	// ExpectationTimeout is --expectation-timeout.
	ExpectationTimeout time.Duration
}

// New returns the stand-in for a manager run with opts.
func New(kube kubernetes.Interface, dyn dynamic.Interface, opts Options) *Manager {
	return &Manager{kube: kube, dyn: dyn, logFile: opts.LogFile, logf: opts.Logf, eventFilter: opts.EventFilter,
		verticalScaling: opts.VerticalScaling, waitScheduled: opts.WaitScheduled, expectationTimeout: opts.ExpectationTimeout}
}

// Run plays the manager's replicas until ctx ends.
func (m *Manager) Run(ctx context.Context) {
	t := time.NewTicker(RetryPeriod)
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
func (m *Manager) Leader() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.leader == nil {
		return ""
	}
	return m.leader.pod
}

// WaitLeading waits until a leader runs with synced caches.
func (m *Manager) WaitLeading(ctx context.Context, timeout time.Duration) error {
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
