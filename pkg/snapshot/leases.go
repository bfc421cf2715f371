package snapshot

import (
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
)

// Abandonment of a leader Lease: not renewed for far longer than its duration, by both
// measures. A live leader renews every few seconds (client-go's leader election renews within
// its renew deadline, well inside the duration), so an hour without renewal is no slow leader.
const (
	abandonedAfter      = time.Hour
	abandonedDurations  = 10
	defaultLeaseSeconds = 15
)

// LeaseAbandoned reports whether the Lease was last renewed (or acquired) so long before now
// that no leader holds it any more, and how long ago that was.
func LeaseAbandoned(l *coordinationv1.Lease, now time.Time) (time.Duration, bool) {
	var last time.Time
	switch {
	case l.Spec.RenewTime != nil:
		last = l.Spec.RenewTime.Time
	case l.Spec.AcquireTime != nil:
		last = l.Spec.AcquireTime.Time
	default:
		return 0, false
	}
	duration := time.Duration(defaultLeaseSeconds) * time.Second
	if l.Spec.LeaseDurationSeconds != nil && *l.Spec.LeaseDurationSeconds > 0 {
		duration = time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
	}
	ago := now.Sub(last)
	return ago, ago > abandonedAfter && ago > abandonedDurations*duration
}

// LeaseHolderPod is the pod a leader Lease names as its holder: client-go's leader election
// (and controller-runtime's) records the hostname, which in a pod is the pod's name, then "_"
// and a unique suffix. "" when the Lease has no holder.
func LeaseHolderPod(l *coordinationv1.Lease) string {
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	name, _, _ := strings.Cut(*l.Spec.HolderIdentity, "_")
	return name
}
