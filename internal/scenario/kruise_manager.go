package scenario

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
//     overtime" to the leader container's log, which kwok serves through pods/log; scaling that
//     counts pods as v1.9.0's calculateDiffsWithExpectation does (PreparingDelete pods counted,
//     pods chosen by name deleted or held in PreparingDelete by the preDelete hook, the partition's
//     pods recreated on the current revision: see kruise_scale.go).
//   - CloneSetEventHandlerOptimization (v1.4.0-v1.8.x, openkruise/kruise#2057): pod update events
//     that change only a preNormal hook's finalizers are ignored, so the pod is not refreshed.
//   - rollouts of ReCreate CloneSets (kruise_progress.go): old pods marked specified-delete within
//     maxUnavailable, replaced from the update revision; with spec.progressDeadlineSeconds, the
//     Progressing condition as v1.9.0's calculateProgressingStatus sets it, ProgressDeadlineExceeded
//     included.
//   - in-place rollouts (kruise_inplace.go) of images, labels and annotations (env from metadata,
//     InPlaceUpdateEnvFromMetadata) and, with --feature-gates=InPlaceWorkloadVerticalScaling=true,
//     cpu and memory through the pods' resize subresource: PreparingUpdate while an inPlaceUpdate
//     hook is on the pod, then InPlaceUpdateReady=False (unless it only resizes), the
//     inplace-update-state annotation and the new spec, as v1.9.0's updatePod and
//     inplaceupdate.Update do.
//   - the SidecarSet controller (kruise_sidecarset*.go): status counts, in-place sidecar image
//     updates within maxUnavailable, paused and partition, and the update expectations whose leak
//     (a pod deleted during its update, DeletePodInSidecarUpdate) freezes the SidecarSet with
//     "matched pods has some update in flight" until the leader restarts. Pods are created
//     already injected (CreateInjectedPod): the stand-in runs no webhook.
//   - the Advanced StatefulSet and Advanced DaemonSet controllers (kruise_statefulset.go,
//     kruise_daemonset.go, each with its own informer and queue, kruise_workers.go): ordered
//     creation and a rolling update from the highest ordinal down to the partition within
//     maxUnavailable; one pod per fitting node and a rolling update within partition and
//     maxUnavailable; the status counts the check reads. v1.9.0 gives neither a progress deadline.
//
// It never completes an in-place update (kwok restarts no container), and keeps no
// ControllerRevisions or resourceVersion expectations.
type KruiseManager struct {
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
