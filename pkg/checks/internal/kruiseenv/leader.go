package kruiseenv

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// Unavailable reports whether the manager cannot be reconciling anything: its leader Lease was
// not renewed within its duration, or, when the Lease cannot tell, its Deployment has no
// available replica. A Lease being renewed is a live leader whatever the Deployment's status
// says (a failing readiness probe does not stop the leader), so it is never called unavailable.
func (e *Env) Unavailable() (bool, []string) {
	if e.Manager == nil {
		return false, nil
	}
	v := e.leaseVerdict()
	if v.live() {
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
	if v.state == leaseExpired {
		why = append(why, v.full)
	}
	return len(why) > 0, why
}

// leaseVerdict judges the leader Lease from the collector's reads of it.
func (e *Env) leaseVerdict() leaseVerdict {
	if e.lease == nil {
		return leaseVerdict{}
	}
	return judgeLease(e.Snapshot.LeaseReads[e.lease.Namespace+"/"+e.lease.Name])
}

// LeaderEvidence names the leader the checks saw and what its Lease says about it.
func (e *Env) LeaderEvidence() string {
	switch {
	case e.Manager == nil:
		return ""
	case e.lease == nil:
		return checks.Evidencef("leader Lease %s/%s not found", e.Manager.LeaseNamespace, e.Manager.LeaseName)
	case e.holder == "":
		return checks.Evidencef("leader Lease %s/%s has no holder", e.lease.Namespace, e.lease.Name)
	}
	return checks.Evidencef("leader: pod %s/%s holds Lease %s/%s, %s", e.Manager.Deployment.Namespace, e.holderPod,
		e.lease.Namespace, e.lease.Name, e.leaseVerdict().short)
}

// RestartFix is the restart-controller-leader fix, when a leader is known. Without another
// Ready replica of the manager it is high risk: every replica serves OpenKruise's pod webhook
// (mpod.kb.io, failurePolicy Fail in config/webhook/manifests.yaml of kruise v1.9.0), so while
// the only one restarts, every pod creation outside namespaces labelled control-plane is
// rejected. The fix engine then applies it only when the action is named.
func (e *Env) RestartFix() (report.Fix, bool) {
	if e.lease == nil || e.holder == "" {
		return report.Fix{}, false
	}
	ns := e.Manager.Deployment.Namespace
	fx := report.Fix{
		Action: checks.ActionRestartControllerLeader,
		Description: fmt.Sprintf("delete the kruise-manager leader pod %s/%s; the next leader starts with no expectations",
			ns, e.holderPod),
		Risk: report.RiskMedium,
		Params: map[string]string{
			"leaseNamespace": e.lease.Namespace, "leaseName": e.lease.Name, "holderIdentity": e.holder,
			// The leader pod runs in the manager's namespace, which --leader-election-namespace may differ from.
			"podNamespace": ns,
		},
	}
	if ready := e.otherReadyReplicas(); len(ready) > 0 {
		fx.Description += fmt.Sprintf("; Ready replica %s keeps serving the pod webhook and takes over", ready[0])
		return fx, true
	}
	fx.Risk = report.RiskHigh
	fx.Description += fmt.Sprintf(". High risk: %s has no other Ready replica, so until the new pod is Ready OpenKruise's pod webhook "+
		"mpod.kb.io (failurePolicy Fail) rejects every pod creation in the cluster outside namespaces labelled control-plane; "+
		"fix applies it only with --action %s", e.ManagerName(), checks.ActionRestartControllerLeader)
	return fx, true
}

// otherReadyReplicas names the manager's Ready pods other than the leader, from the snapshot.
func (e *Env) otherReadyReplicas() []string {
	d := e.Manager.Deployment
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return nil
	}
	var out []string
	for _, p := range e.Snapshot.ControllerPods {
		if p.Namespace != d.Namespace || p.Name == e.holderPod || p.DeletionTimestamp != nil || !sel.Matches(labels.Set(p.Labels)) {
			continue
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				out = append(out, p.Name)
			}
		}
	}
	return out
}
