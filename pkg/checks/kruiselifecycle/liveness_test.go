package kruiselifecycle

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/checktest"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// A frozen CloneSet whose manager is live keeps its real root cause and fix however long the
// scan took and whatever the Deployment's status says: the leader Lease was renewed between the
// collector's two reads (client-go tools/leaderelection, LeaderElector.tryAcquireOrRenew, renews
// every retryPeriod, 2s in kruise v1.9.0 main.go), so a leader is running.
func TestLiveLeaderKeepsTheRootCause(t *testing.T) {
	w := leakedCloneSet().cloneSet(t)
	// Readiness failing: no available replica, while the leader keeps its Lease.
	env := controlPlane{mgr: checktest.KruiseManager("v1.7.0", 0), lease: checktest.KruiseLeaderLease(time.Second), logsUnread: "no kubelet"}
	s := snapshotOf(env, []*kruise.Workload{w}, normalPods(w, 1, "5d4f8b7c9", time.Hour), nil)
	// The lists took 3m: the local clock is 3m past the first read of the Lease.
	first := env.lease.DeepCopy()
	first.ResourceVersion = "100"
	last := first.DeepCopy()
	last.ResourceVersion = "190"
	last.Spec.RenewTime = &metav1.MicroTime{Time: first.Spec.RenewTime.Add(3 * time.Minute)}
	s.Now = s.Now.Add(3 * time.Minute)
	s.LeaseReads = map[string][]snapshot.LeaseRead{"kruise-system/kruise-manager": {
		{Lease: first, ServerTime: checktest.Now},
		{Lease: last, ServerTime: checktest.Now.Add(3 * time.Minute), Elapsed: 3 * time.Minute},
	}}
	got := ExpectationsUnsatisfied().Run(s, expectationsThreshold)
	expect(t, got, RootCauseScaleExpectationsLeaked, []string{"renewed during the scan"},
		[]string{checks.ActionRestartControllerLeader, checks.ActionRequeueWorkload})
	for _, line := range got[0].RootCause.Evidence {
		if strings.Contains(line, "longer than its leaseDurationSeconds") || strings.Contains(line, "no available replica") {
			t.Errorf("evidence contradicts the live leader: %q", line)
		}
	}
}
