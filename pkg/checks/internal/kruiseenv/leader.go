package kruiseenv

import (
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// Unavailable reports whether the manager cannot be reconciling anything: its Deployment has no
// available replica, or its leader Lease was not renewed within its lease duration.
func (e *Env) Unavailable() (bool, []string) {
	if e.Manager == nil {
		return false, nil
	}
	var why []string
	d := e.Manager.Deployment
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	if d.Status.AvailableReplicas == 0 {
		why = append(why, checks.Evidencef("%s has no available replica (status.availableReplicas 0, spec.replicas %d, status.replicas %d)",
			e.ManagerName(), want, d.Status.Replicas))
		for _, c := range d.Status.Conditions {
			if c.Type == "Available" && c.Status != corev1.ConditionTrue {
				why = append(why, checks.Evidencef("%s condition Available=%s reason %s: %s", e.ManagerName(), c.Status, c.Reason, checks.Truncate(c.Message, 200)))
			}
		}
	}
	if l := e.lease; l != nil {
		renewed := leaseRenewTime(l)
		if !renewed.IsZero() && l.Spec.LeaseDurationSeconds != nil {
			dur := time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
			if e.Snapshot.Now.Sub(renewed) > dur {
				holder := e.holder
				if holder == "" {
					holder = "nobody"
				}
				why = append(why, checks.Evidencef("leader Lease %s/%s (holder %s) was last renewed %s ago at %s, longer than its leaseDurationSeconds %d",
					l.Namespace, l.Name, holder, checks.Age(e.Snapshot.Now, renewed), renewed.UTC().Format(time.RFC3339), *l.Spec.LeaseDurationSeconds))
			}
		}
	}
	return len(why) > 0, why
}

// leaseRenewTime is when the Lease was last renewed (or acquired).
func leaseRenewTime(l *coordinationv1.Lease) time.Time {
	switch {
	case l.Spec.RenewTime != nil:
		return l.Spec.RenewTime.Time
	case l.Spec.AcquireTime != nil:
		return l.Spec.AcquireTime.Time
	}
	return time.Time{}
}

// LeaderEvidence names the leader the checks saw.
func (e *Env) LeaderEvidence() string {
	switch {
	case e.Manager == nil:
		return ""
	case e.lease == nil:
		return checks.Evidencef("leader Lease %s/%s not found", e.Manager.LeaseNamespace, e.Manager.LeaseName)
	case e.holder == "":
		return checks.Evidencef("leader Lease %s/%s has no holder", e.lease.Namespace, e.lease.Name)
	}
	renewed := leaseRenewTime(e.lease)
	return checks.Evidencef("leader: pod %s/%s holds Lease %s/%s (renewed %s ago)", e.Manager.Deployment.Namespace, e.holderPod,
		e.lease.Namespace, e.lease.Name, checks.Age(e.Snapshot.Now, renewed))
}

// RestartFix is the restart-controller-leader fix, when a leader is known.
func (e *Env) RestartFix() (report.Fix, bool) {
	if e.lease == nil || e.holder == "" {
		return report.Fix{}, false
	}
	return report.Fix{
		Action: checks.ActionRestartControllerLeader,
		Description: fmt.Sprintf("delete the kruise-manager leader pod %s/%s; the next leader starts with no expectations",
			e.Manager.Deployment.Namespace, e.holderPod),
		Risk: report.RiskMedium,
		Params: map[string]string{
			"leaseNamespace": e.lease.Namespace, "leaseName": e.lease.Name, "holderIdentity": e.holder,
			// The leader pod runs in the manager's namespace, which --leader-election-namespace may differ from.
			"podNamespace": e.Manager.Deployment.Namespace,
		},
	}, true
}
