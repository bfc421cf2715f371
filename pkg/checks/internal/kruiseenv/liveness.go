package kruiseenv

import (
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// leaseState is what the reads of the leader Lease say about the leader.
type leaseState int

const (
	// leaseUnjudged: nothing to judge the Lease against (no read, no renewTime or duration, no
	// apiserver time); the Deployment's status decides alone.
	leaseUnjudged leaseState = iota
	// leaseRenewing: the record changed between two reads, so a leader is renewing it.
	leaseRenewing
	// leaseFresh: renewed within its duration before the apiserver's time of the last read.
	leaseFresh
	// leaseExpired: not renewed within its duration.
	leaseExpired
)

// leaseVerdict is the state with the evidence for it: a short form for the leader line, and the
// full line an unavailable verdict quotes.
type leaseVerdict struct {
	state       leaseState
	short, full string
}

// live reports whether a leader is renewing the Lease, which is a live leader whatever the
// Deployment's status says.
func (v leaseVerdict) live() bool { return v.state == leaseRenewing || v.state == leaseFresh }

// judgeLease judges the leader Lease the way client-go's leader election does
// (k8s.io/client-go/tools/leaderelection: setObservedRecord stamps a record with the observer's
// own clock when it changes, isLeaseValid compares that clock with itself): a record that
// changed between two reads is live; one unchanged across more than its duration is expired;
// otherwise renewTime is compared with the apiserver's clock when it answered, never with the
// local clock after the scan (a slow scan or a clock ahead of the cluster would age every Lease).
func judgeLease(reads []snapshot.LeaseRead) leaseVerdict {
	if len(reads) == 0 {
		return leaseVerdict{short: "renewal not judged: the Lease's reads were not recorded"}
	}
	first, last := reads[0], reads[len(reads)-1]
	l := last.Lease
	name := fmt.Sprintf("leader Lease %s/%s (holder %s)", l.Namespace, l.Name, holderOf(l))
	apart := (last.Elapsed - first.Elapsed).Round(time.Millisecond)
	if len(reads) > 1 && changed(first.Lease, l) {
		line := fmt.Sprintf("renewed during the scan: its record changed between two reads %s apart (renewTime %s, then %s)",
			apart, stamp(renewTime(first.Lease)), stamp(renewTime(l)))
		return leaseVerdict{state: leaseRenewing, short: line, full: name + " was " + line}
	}
	renewed := renewTime(l)
	if renewed.IsZero() || l.Spec.LeaseDurationSeconds == nil {
		return leaseVerdict{short: "renewal not judged: the Lease has no renewTime or leaseDurationSeconds"}
	}
	secs := *l.Spec.LeaseDurationSeconds
	dur := time.Duration(secs) * time.Second
	if len(reads) > 1 && apart > dur {
		line := fmt.Sprintf("not renewed in the %s between two reads, longer than its leaseDurationSeconds %d", apart, secs)
		return leaseVerdict{state: leaseExpired, short: line, full: name + " was " + line}
	}
	if last.ServerTime.IsZero() {
		return leaseVerdict{short: "renewal not judged: the apiserver's answer carried no Date and the record did not change during the scan"}
	}
	// Date is whole seconds, so age is at most a second short: never an expiry that is not there.
	age := last.ServerTime.Sub(renewed)
	if age > dur {
		line := fmt.Sprintf("last renewed %s before the apiserver's time when the scan read it, at %s, longer than its leaseDurationSeconds %d",
			checks.Age(last.ServerTime, renewed), stamp(renewed), secs)
		return leaseVerdict{state: leaseExpired, short: line, full: name + " was " + line}
	}
	line := fmt.Sprintf("renewed %s before the apiserver's time when the scan read it, within its leaseDurationSeconds %d",
		max(age, 0).Round(time.Second), secs)
	return leaseVerdict{state: leaseFresh, short: line, full: name + " was " + line}
}

// changed reports whether the Lease's record moved between two reads.
func changed(a, b *coordinationv1.Lease) bool {
	if a.ResourceVersion != "" && b.ResourceVersion != "" {
		return a.ResourceVersion != b.ResourceVersion
	}
	return !renewTime(a).Equal(renewTime(b)) || holderOf(a) != holderOf(b)
}

// renewTime is when the Lease was last renewed (or acquired).
func renewTime(l *coordinationv1.Lease) time.Time {
	switch {
	case l.Spec.RenewTime != nil:
		return l.Spec.RenewTime.Time
	case l.Spec.AcquireTime != nil:
		return l.Spec.AcquireTime.Time
	}
	return time.Time{}
}

func holderOf(l *coordinationv1.Lease) string {
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
		return "nobody"
	}
	return *l.Spec.HolderIdentity
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }
