package audit

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// LeaseName is the Lease replicas campaign for.
const LeaseName = "workloaddoctor"

// Election holds a Lease for this replica while it can, and campaigns again when it loses it:
// a replica cut off from the apiserver longer than the lease stops writing but keeps running.
type Election struct {
	kube      kubernetes.Interface
	namespace string
	identity  string
	lease     time.Duration
	log       *slog.Logger
	onChange  func(leading bool)
	leading   atomic.Bool
}

// NewElection returns the election for the Lease in namespace; lease is how long a silent leader
// keeps it (renewals come well within, see Run). onChange, when set, hears every change.
func NewElection(kube kubernetes.Interface, namespace, identity string, lease time.Duration, log *slog.Logger, onChange func(bool)) (*Election, error) {
	if namespace == "" || identity == "" {
		return nil, fmt.Errorf("leader election needs a namespace and an identity")
	}
	if lease < 3*time.Second {
		return nil, fmt.Errorf("leader election lease %s is shorter than 3s", lease)
	}
	return &Election{kube: kube, namespace: namespace, identity: identity, lease: lease, log: log, onChange: onChange}, nil
}

// Leading says whether this replica holds the Lease now.
func (e *Election) Leading() bool { return e.leading.Load() }

// Run campaigns until ctx ends; on a clean stop it releases the Lease so a standby takes over
// at once instead of after the lease.
func (e *Election) Run(ctx context.Context) error {
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: e.namespace, Name: LeaseName},
		Client:     e.kube.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: e.identity},
	}
	cfg := leaderelection.LeaderElectionConfig{
		Lock: lock, Name: LeaseName, ReleaseOnCancel: true,
		// The ratios of client-go's and controller-runtime's defaults (15s, 10s, 2s).
		LeaseDuration: e.lease, RenewDeadline: e.lease * 2 / 3, RetryPeriod: e.lease / 7,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) { e.set(true) },
			OnStoppedLeading: func() { e.set(false) },
		},
	}
	for ctx.Err() == nil {
		le, err := leaderelection.NewLeaderElector(cfg)
		if err != nil {
			return fmt.Errorf("leader election: %w", err)
		}
		// Run returns when ctx ends or the Lease is lost; then campaign again.
		le.Run(ctx)
	}
	return nil
}

func (e *Election) set(leading bool) {
	if e.leading.Swap(leading) == leading {
		return
	}
	if leading {
		e.log.Info("leading: this replica writes reports", slog.String("identity", e.identity))
	} else {
		e.log.Warn("not leading: this replica stops writing and campaigns again", slog.String("identity", e.identity))
	}
	if e.onChange != nil {
		e.onChange(leading)
	}
}
