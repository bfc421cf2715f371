package kruiseenv

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/checktest"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// leaseAt is the kruise-manager's leader Lease as the apiserver stores it at resourceVersion rv,
// last renewed at renewed. kruise v1.9.0 main.go runs controller-runtime's leader election with
// leaseDuration 15s and retryPeriod 2s (defaultLeaseDuration, defaultRetryPeriod); client-go's
// LeaderElector.tryAcquireOrRenew writes renewTime from the leader's clock on every renewal, and
// each write gives the Lease a new resourceVersion.
func leaseAt(rv string, renewed time.Time) *coordinationv1.Lease {
	l := checktest.KruiseLeaderLease(0)
	l.ResourceVersion = rv
	l.Spec.RenewTime = &metav1.MicroTime{Time: renewed}
	return l
}

// read is one collector read of the Lease: what it returned, the apiserver's Date, and when on
// the scan's monotonic clock.
func read(l *coordinationv1.Lease, server time.Time, elapsed time.Duration) snapshot.LeaseRead {
	return snapshot.LeaseRead{Lease: l, ServerTime: server, Elapsed: elapsed}
}

// envWithReads is the Env of a scan whose local clock read now when the lists ended, and which
// read the leader Lease as reads say. Times are injected: nothing sleeps.
func envWithReads(mgr *appsv1.Deployment, now time.Time, reads ...snapshot.LeaseRead) *Env {
	c := cluster(mgr, reads[0].Lease)
	c.LeaseReads = map[string][]snapshot.LeaseRead{"kruise-system/kruise-manager": reads}
	s := c.Snapshot()
	s.Now = now
	return New(s)
}

func TestLeaderLivenessIgnoresTheLocalClock(t *testing.T) {
	server := checktest.Now // the apiserver's clock at the first read
	tests := []struct {
		name string
		env  *Env
		// down is the verdict wanted; frag must be in the leader line (and in why when down).
		down bool
		frag string
	}{
		{
			// The scan took 40s (a large cluster, a slow link): the Lease, renewed every 2s, is
			// 40s older than the local clock when the lists ended, and was renewed between reads.
			name: "scan longer than the Lease, renewed between the reads",
			env: envWithReads(checktest.KruiseManager("v1.9.0", 1), server.Add(41*time.Second),
				read(leaseAt("100", server.Add(-time.Second)), server, 0),
				read(leaseAt("120", server.Add(39*time.Second)), server.Add(40*time.Second), 40*time.Second)),
			frag: "renewed during the scan: its record changed between two reads 40s apart",
		},
		{
			// The workstation's clock is 2m ahead of the cluster; the scan was quick, so both reads
			// saw the same record, renewed 1s before the apiserver's time.
			name: "local clock 2m ahead of the cluster",
			env: envWithReads(checktest.KruiseManager("v1.9.0", 1), server.Add(2*time.Minute),
				read(leaseAt("100", server.Add(-time.Second)), server, 0),
				read(leaseAt("100", server.Add(-time.Second)), server, 300*time.Millisecond)),
			frag: "renewed 1s before the apiserver's time when the scan read it, within its leaseDurationSeconds 15",
		},
		{
			// A failing readiness probe leaves the Deployment with no available replica while the
			// leader keeps renewing: it reconciles, so it is not unavailable.
			name: "renewed Lease, Deployment reports no available replica",
			env: envWithReads(checktest.KruiseManager("v1.9.0", 0), server.Add(5*time.Minute),
				read(leaseAt("100", server.Add(-time.Second)), server, 0),
				read(leaseAt("101", server.Add(time.Second)), server.Add(2*time.Second), 2*time.Second)),
			frag: "renewed during the scan",
		},
		{
			// Really expired at the apiserver's time, even with a local clock 1m behind it (the old
			// comparison with the local clock saw it 20s old).
			name: "expired at the apiserver's time, local clock behind",
			env: envWithReads(checktest.KruiseManager("v1.9.0", 1), server.Add(-time.Minute),
				read(leaseAt("100", server.Add(-80*time.Second)), server, 0),
				read(leaseAt("100", server.Add(-80*time.Second)), server.Add(time.Second), time.Second)),
			down: true, frag: "last renewed 81s before the apiserver's time when the scan read it",
		},
		{
			// client-go's rule (LeaderElector.isLeaseValid): a record unchanged for longer than its
			// duration, measured on the observer's own clock, is expired; no Date needed.
			name: "unchanged across more than its duration, no Date header",
			env: envWithReads(checktest.KruiseManager("v1.9.0", 1), server,
				read(leaseAt("100", server.Add(-time.Second)), time.Time{}, 0),
				read(leaseAt("100", server.Add(-time.Second)), time.Time{}, 20*time.Second)),
			down: true, frag: "not renewed in the 20s between two reads, longer than its leaseDurationSeconds 15",
		},
		{
			// Without the apiserver's time and without a change, nothing proves the leader dead.
			name: "no Date header, reads close together",
			env: envWithReads(checktest.KruiseManager("v1.9.0", 1), server.Add(time.Hour),
				read(leaseAt("100", server.Add(-time.Hour)), time.Time{}, 0),
				read(leaseAt("100", server.Add(-time.Hour)), time.Time{}, time.Second)),
			frag: "renewal not judged",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			down, why := tt.env.Unavailable()
			leader := tt.env.LeaderEvidence()
			if down != tt.down {
				t.Fatalf("unavailable = %v %q, want %v", down, why, tt.down)
			}
			if !strings.Contains(leader, tt.frag) || (down && !strings.Contains(strings.Join(why, "\n"), tt.frag)) {
				t.Errorf("leader line %q, why %q: want %q", leader, why, tt.frag)
			}
			if down {
				return
			}
			// A live leader's evidence never says it is gone.
			for _, line := range append(why, leader) {
				for _, bad := range []string{"longer than its leaseDurationSeconds", "no available replica", " ago"} {
					if strings.Contains(line, bad) {
						t.Errorf("evidence %q contradicts a live leader (%q)", line, bad)
					}
				}
			}
		})
	}
}
