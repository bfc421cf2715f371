package terminating

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// Taint that lets PodGC force-delete terminating pods of a node (non-graceful node shutdown).
const taintOutOfService = "node.kubernetes.io/out-of-service"

// defaultNodeLeaseDuration is the kubelet's default node Lease duration.
const defaultNodeLeaseDuration = 40 * time.Second

func readyCondition(n *corev1.Node) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == corev1.NodeReady {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

// readyLine renders a node's Ready condition.
func (a *pass) readyLine(n *corev1.Node) string {
	c := readyCondition(n)
	if c == nil {
		return fmt.Sprintf("node %s has no Ready condition", n.Name)
	}
	s := fmt.Sprintf("node %s Ready=%s since %s (%s ago)", n.Name, c.Status, c.LastTransitionTime.UTC().Format(time.RFC3339),
		checks.Age(a.now, c.LastTransitionTime.Time))
	if c.Reason != "" {
		s += ", reason " + c.Reason
	}
	if c.Message != "" {
		s += ": " + oneLine(c.Message, 120)
	}
	return s
}

// heartbeat says whether the node's kubelet (or kwok) stopped renewing its Lease past the
// threshold, with the evidence. Without Leases, Ready=Unknown is the node controller's own
// verdict that heartbeats stopped.
func (a *pass) heartbeat(n *corev1.Node) (stale bool, ev []string) {
	ready := readyCondition(n)
	if ready != nil && !ready.LastHeartbeatTime.IsZero() {
		ev = append(ev, fmt.Sprintf("last status heartbeat %s (%s ago)", ready.LastHeartbeatTime.UTC().Format(time.RFC3339),
			checks.Age(a.now, ready.LastHeartbeatTime.Time)))
	}
	lease, ok := a.s.NodeLease(n.Name)
	if !ok && !a.s.NodeLeaseAbsent(n.Name) {
		ev = append(ev, "node Leases were not read")
		return ready != nil && ready.Status == corev1.ConditionUnknown, ev
	}
	if !ok {
		return true, append(ev, fmt.Sprintf("no Lease %s/%s", corev1.NamespaceNodeLease, n.Name))
	}
	if lease.Spec.RenewTime == nil {
		return true, append(ev, fmt.Sprintf("Lease %s/%s was never renewed", corev1.NamespaceNodeLease, n.Name))
	}
	dur := defaultNodeLeaseDuration
	if lease.Spec.LeaseDurationSeconds != nil && *lease.Spec.LeaseDurationSeconds > 0 {
		dur = time.Duration(*lease.Spec.LeaseDurationSeconds) * time.Second
	}
	age := a.now.Sub(lease.Spec.RenewTime.Time)
	ev = append(ev, fmt.Sprintf("Lease %s/%s last renewed %s (%s ago), leaseDurationSeconds %d", corev1.NamespaceNodeLease, n.Name,
		lease.Spec.RenewTime.UTC().Format(time.RFC3339), checks.Age(a.now, lease.Spec.RenewTime.Time), int(dur.Seconds())))
	return age > dur && age >= a.threshold, ev
}

func taintsLine(n *corev1.Node) string {
	if len(n.Spec.Taints) == 0 {
		return fmt.Sprintf("node %s has no taints", n.Name)
	}
	var ts []string
	for _, t := range n.Spec.Taints {
		s := t.Key
		if t.Value != "" {
			s += "=" + t.Value
		}
		ts = append(ts, s+":"+string(t.Effect))
	}
	return fmt.Sprintf("node %s taints: %s", n.Name, strings.Join(ts, ", "))
}

func hasTaint(n *corev1.Node, key string) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == key {
			return true
		}
	}
	return false
}

// forceDeleteRisk raises the risk of a force delete for pods whose old copy could do harm if
// it still runs: a stable identity (StatefulSet) or volumes shared beyond the node.
func forceDeleteRisk(p *corev1.Pod, base, raised report.Risk) (report.Risk, []string) {
	var why []string
	if ref := snapshot.ControllerOf(p); ref != nil && ref.Kind == "StatefulSet" {
		why = append(why, fmt.Sprintf("it is owned by %s %s, whose replacement pod takes the same name and identity while the old one may still run", ref.Kind, ref.Name))
	}
	if vols := sharedVolumes(p); len(vols) > 0 {
		why = append(why, fmt.Sprintf("it mounts %s, which the old pod may still write while a replacement attaches it", strings.Join(vols, ", ")))
	}
	if len(why) > 0 {
		return raised, why
	}
	return base, nil
}

// sharedVolumes names the pod's volumes that live beyond its node (claims, CSI, network storage).
func sharedVolumes(p *corev1.Pod) []string {
	var out []string
	for _, v := range p.Spec.Volumes {
		s := v.VolumeSource
		switch {
		case s.EmptyDir != nil, s.ConfigMap != nil, s.Secret != nil, s.Projected != nil, s.DownwardAPI != nil,
			s.HostPath != nil, s.Image != nil:
			continue
		case s.PersistentVolumeClaim != nil:
			out = append(out, fmt.Sprintf("volume %s (claim %s)", v.Name, s.PersistentVolumeClaim.ClaimName))
		case s.CSI != nil:
			out = append(out, fmt.Sprintf("volume %s (CSI %s)", v.Name, s.CSI.Driver))
		case s.Ephemeral != nil:
			out = append(out, fmt.Sprintf("volume %s (ephemeral claim)", v.Name))
		default:
			out = append(out, fmt.Sprintf("volume %s (network storage)", v.Name))
		}
	}
	return out
}

func forceDeleteFix(desc string, risk report.Risk) report.Fix {
	return report.Fix{Action: checks.ActionForceDelete, Description: desc, Risk: risk}
}

// nodeMissing reports a pod bound to a node that does not exist.
func (a *pass) nodeMissing(t *target) (checks.Draft, bool) {
	p, full, owners := t.pod, t.full, t.owners
	name := p.Spec.NodeName
	if !full || !a.s.NodeAbsent(name) {
		return checks.Draft{}, false
	}
	grace := graceSeconds(p)
	ev := []string{fmt.Sprintf("spec.nodeName %s: no such Node", name)}
	msg := fmt.Sprintf("The pod is bound to node %s, which no longer exists, so no kubelet will ever confirm that its containers stopped.", name)
	if grace > 0 {
		ev = append(ev, "PodGC (kube-controller-manager) force-deletes pods bound to a missing node after about 40s; this pod still has its grace period, so PodGC has not acted on it")
		msg += " PodGC should have force-deleted it and has not: is kube-controller-manager running with the podgc controller?"
	} else {
		ev = append(ev, "the pod was already deleted with grace period 0 (by PodGC or a force delete); only finalizers hold it")
	}
	for _, o := range owners.get() {
		ev = append(ev, o.line())
	}
	var fixes []report.Fix
	var missing []string
	for _, o := range owners.missing() {
		fixes = append(fixes, removeFinalizerFix(o, report.RiskMedium))
		missing = append(missing, o.Finalizer)
	}
	if len(missing) > 0 {
		msg += fmt.Sprintf(" Finalizer %s has no running owner and will hold the pod even after a force delete.", strings.Join(missing, ", "))
	}
	if grace > 0 {
		risk, why := forceDeleteRisk(p, report.RiskLow, report.RiskMedium)
		desc := fmt.Sprintf("Delete the pod with grace period 0, as PodGC would: node %s no longer exists.", name)
		if len(why) > 0 {
			desc += " Careful: " + strings.Join(why, "; ") + " (a machine can outlive its Node object)."
		}
		fixes = append(fixes, forceDeleteFix(desc, risk))
	}
	return checks.Draft{
		RootCause: RootCauseNodeMissing,
		Summary:   fmt.Sprintf("Terminating for %s on node %s, which no longer exists", checks.Age(a.now, p.DeletionTimestamp.Time), name),
		Message:   msg,
		Evidence:  ev,
		Fixes:     fixes,
	}, true
}

// nodeNotReady reports a pod whose kubelet stopped heartbeating while the grace period ran.
func (a *pass) nodeNotReady(t *target) (checks.Draft, bool) {
	p, full := t.pod, t.full
	name := p.Spec.NodeName
	if !full || name == "" || graceSeconds(p) == 0 {
		return checks.Draft{}, false // with grace 0 the kubelet's part is done; finalizers hold the pod
	}
	node, ok := a.s.Node(name)
	if !ok {
		return checks.Draft{}, false
	}
	ready := readyCondition(node)
	if ready != nil && ready.Status == corev1.ConditionTrue {
		return checks.Draft{}, false
	}
	stale, hb := a.heartbeat(node)
	if !stale {
		return checks.Draft{}, false
	}
	ev := append([]string{a.readyLine(node)}, hb...)
	ev = append(ev, taintsLine(node))
	if hasTaint(node, taintOutOfService) {
		ev = append(ev, "taint "+taintOutOfService+" is set: PodGC force-deletes terminating pods on such nodes and has not, so PodGC is not running")
	}
	status := "NotReady"
	if ready != nil {
		status = "Ready=" + string(ready.Status)
	}
	risk, why := forceDeleteRisk(p, report.RiskMedium, report.RiskHigh)
	desc := fmt.Sprintf("Delete the pod with grace period 0: node %s's kubelet is gone and cannot confirm it stopped. "+
		"If the node is only partitioned, the old containers keep running until it returns.", name)
	if len(why) > 0 {
		desc += " High risk: " + strings.Join(why, "; ") + "."
	}
	return checks.Draft{
		RootCause: RootCauseNodeNotReady,
		Summary:   fmt.Sprintf("Terminating for %s on node %s (%s, no heartbeat)", checks.Age(a.now, p.DeletionTimestamp.Time), name, status),
		Message: fmt.Sprintf("The pod waits for the kubelet on node %s to confirm its containers stopped, but the node is %s "+
			"and has stopped renewing its Lease: the kubelet is down or cut off, so the pod stays Terminating until the node "+
			"returns or the pod is force-deleted.", name, status),
		Evidence: ev,
		Fixes:    []report.Fix{forceDeleteFix(desc, risk)},
	}, true
}
