package checks

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/knowledge"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// KWOK names (domain.md, "KWOK").
const (
	stKwokFinalizer      = "kwok.x-k8s.io/fake"
	stKwokNodeAnnotation = "kwok.x-k8s.io/node"
	stKwokNodeFake       = "fake"
)

// Taint that lets PodGC force-delete terminating pods of a node (non-graceful node shutdown).
const stTaintOutOfService = "node.kubernetes.io/out-of-service"

// stDefaultNodeLeaseDuration is the kubelet's default node Lease duration.
const stDefaultNodeLeaseDuration = 40 * time.Second

// stKubeletTroubleReasons are the kubelet's events about a pod it cannot stop.
var stKubeletTroubleReasons = map[string]bool{
	"FailedKillPod": true, "FailedPreStopHook": true, "ExceededGracePeriod": true, "FailedUnMount": true,
}

func stReadyCondition(n *corev1.Node) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == corev1.NodeReady {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

// readyLine renders a node's Ready condition.
func (a *termAnalysis) readyLine(n *corev1.Node) string {
	c := stReadyCondition(n)
	if c == nil {
		return fmt.Sprintf("node %s has no Ready condition", n.Name)
	}
	s := fmt.Sprintf("node %s Ready=%s since %s (%s ago)", n.Name, c.Status, c.LastTransitionTime.UTC().Format(time.RFC3339),
		Age(a.now, c.LastTransitionTime.Time))
	if c.Reason != "" {
		s += ", reason " + c.Reason
	}
	if c.Message != "" {
		s += ": " + stOneLine(c.Message, 120)
	}
	return s
}

// heartbeat says whether the node's kubelet (or kwok) stopped renewing its Lease past the
// threshold, with the evidence. Without Leases, Ready=Unknown is the node controller's own
// verdict that heartbeats stopped.
func (a *termAnalysis) heartbeat(n *corev1.Node) (stale bool, ev []string) {
	ready := stReadyCondition(n)
	if ready != nil && !ready.LastHeartbeatTime.IsZero() {
		ev = append(ev, fmt.Sprintf("last status heartbeat %s (%s ago)", ready.LastHeartbeatTime.UTC().Format(time.RFC3339),
			Age(a.now, ready.LastHeartbeatTime.Time)))
	}
	if !a.read(snapshot.InputNodeLeases) {
		ev = append(ev, "node Leases were not read")
		return ready != nil && ready.Status == corev1.ConditionUnknown, ev
	}
	lease, ok := a.s.NodeLease(n.Name)
	if !ok {
		return true, append(ev, fmt.Sprintf("no Lease %s/%s", corev1.NamespaceNodeLease, n.Name))
	}
	if lease.Spec.RenewTime == nil {
		return true, append(ev, fmt.Sprintf("Lease %s/%s was never renewed", corev1.NamespaceNodeLease, n.Name))
	}
	dur := stDefaultNodeLeaseDuration
	if lease.Spec.LeaseDurationSeconds != nil && *lease.Spec.LeaseDurationSeconds > 0 {
		dur = time.Duration(*lease.Spec.LeaseDurationSeconds) * time.Second
	}
	age := a.now.Sub(lease.Spec.RenewTime.Time)
	ev = append(ev, fmt.Sprintf("Lease %s/%s last renewed %s (%s ago), leaseDurationSeconds %d", corev1.NamespaceNodeLease, n.Name,
		lease.Spec.RenewTime.UTC().Format(time.RFC3339), Age(a.now, lease.Spec.RenewTime.Time), int(dur.Seconds())))
	return age > dur && age >= a.threshold, ev
}

func stTaintsLine(n *corev1.Node) string {
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

func stHasTaint(n *corev1.Node, key string) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == key {
			return true
		}
	}
	return false
}

// stForceDeleteRisk raises the risk of a force delete for pods whose old copy could do harm if
// it still runs: a stable identity (StatefulSet) or volumes shared beyond the node.
func stForceDeleteRisk(p *corev1.Pod, base, raised report.Risk) (report.Risk, []string) {
	var why []string
	if ref := snapshot.ControllerOf(p); ref != nil && ref.Kind == "StatefulSet" {
		why = append(why, fmt.Sprintf("it is owned by %s %s, whose replacement pod takes the same name and identity while the old one may still run", ref.Kind, ref.Name))
	}
	if vols := stSharedVolumes(p); len(vols) > 0 {
		why = append(why, fmt.Sprintf("it mounts %s, which the old pod may still write while a replacement attaches it", strings.Join(vols, ", ")))
	}
	if len(why) > 0 {
		return raised, why
	}
	return base, nil
}

// stSharedVolumes names the pod's volumes that live beyond its node (claims, CSI, network storage).
func stSharedVolumes(p *corev1.Pod) []string {
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

func stForceDeleteFix(desc string, risk report.Risk) report.Fix {
	return report.Fix{Action: ActionForceDelete, Description: desc, Risk: risk}
}

// nodeMissing reports a pod bound to a node that does not exist.
func (a *termAnalysis) nodeMissing(p *corev1.Pod, full bool, owners *stOwnerCache) (Draft, bool) {
	name := p.Spec.NodeName
	if !full || name == "" || !a.read(snapshot.InputNodes) {
		return Draft{}, false
	}
	if _, ok := a.s.Node(name); ok {
		return Draft{}, false
	}
	grace := stGraceSeconds(p)
	ev := []string{fmt.Sprintf("spec.nodeName %s: no such Node (%d nodes listed)", name, len(a.s.Nodes))}
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
		fixes = append(fixes, stRemoveFinalizerFix(o, report.RiskMedium))
		missing = append(missing, o.Finalizer)
	}
	if len(missing) > 0 {
		msg += fmt.Sprintf(" Finalizer %s has no running owner and will hold the pod even after a force delete.", strings.Join(missing, ", "))
	}
	if grace > 0 {
		risk, why := stForceDeleteRisk(p, report.RiskLow, report.RiskMedium)
		desc := fmt.Sprintf("Delete the pod with grace period 0, as PodGC would: node %s no longer exists.", name)
		if len(why) > 0 {
			desc += " Careful: " + strings.Join(why, "; ") + " (a machine can outlive its Node object)."
		}
		fixes = append(fixes, stForceDeleteFix(desc, risk))
	}
	return Draft{
		RootCause: RCNodeMissing,
		Summary:   fmt.Sprintf("Terminating for %s on node %s, which no longer exists", Age(a.now, p.DeletionTimestamp.Time), name),
		Message:   msg,
		Evidence:  ev,
		Fixes:     fixes,
	}, true
}

// nodeNotReady reports a pod whose kubelet stopped heartbeating while the grace period ran.
func (a *termAnalysis) nodeNotReady(p *corev1.Pod, full bool) (Draft, bool) {
	name := p.Spec.NodeName
	if !full || name == "" || stGraceSeconds(p) == 0 {
		return Draft{}, false // with grace 0 the kubelet's part is done; finalizers hold the pod
	}
	node, ok := a.s.Node(name)
	if !ok {
		return Draft{}, false
	}
	ready := stReadyCondition(node)
	if ready != nil && ready.Status == corev1.ConditionTrue {
		return Draft{}, false
	}
	stale, hb := a.heartbeat(node)
	if !stale {
		return Draft{}, false
	}
	ev := append([]string{a.readyLine(node)}, hb...)
	ev = append(ev, stTaintsLine(node))
	if stHasTaint(node, stTaintOutOfService) {
		ev = append(ev, "taint "+stTaintOutOfService+" is set: PodGC force-deletes terminating pods on such nodes and has not, so PodGC is not running")
	}
	status := "NotReady"
	if ready != nil {
		status = "Ready=" + string(ready.Status)
	}
	risk, why := stForceDeleteRisk(p, report.RiskMedium, report.RiskHigh)
	desc := fmt.Sprintf("Delete the pod with grace period 0: node %s's kubelet is gone and cannot confirm it stopped. "+
		"If the node is only partitioned, the old containers keep running until it returns.", name)
	if len(why) > 0 {
		desc += " High risk: " + strings.Join(why, "; ") + "."
	}
	return Draft{
		RootCause: RCNodeNotReady,
		Summary:   fmt.Sprintf("Terminating for %s on node %s (%s, no heartbeat)", Age(a.now, p.DeletionTimestamp.Time), name, status),
		Message: fmt.Sprintf("The pod waits for the kubelet on node %s to confirm its containers stopped, but the node is %s "+
			"and has stopped renewing its Lease: the kubelet is down or cut off, so the pod stays Terminating until the node "+
			"returns or the pod is force-deleted.", name, status),
		Evidence: ev,
		Fixes:    []report.Fix{stForceDeleteFix(desc, risk)},
	}, true
}

// stKwokController is the kwok controller the cluster runs as a Deployment, if any.
type stKwokController struct {
	Deployment *appsv1.Deployment
	Container  corev1.Container
}

// args returns the container's command line, where kwok's flags may be.
func (k *stKwokController) args() []string {
	return append(append([]string{}, k.Container.Command...), k.Container.Args...)
}

// findKwokController finds kwok's Deployment the way the known-finalizer table locates kwok:
// its default place, else any Deployment running the kwok image.
func (a *termAnalysis) findKwokController() *stKwokController {
	if !a.kwokLooked {
		a.kwokLooked = true
		a.kwok = a.lookupKwokController()
	}
	return a.kwok
}

func (a *termAnalysis) lookupKwokController() *stKwokController {
	row, ok := knowledge.LookupFinalizer(stKwokFinalizer)
	if !ok {
		return nil
	}
	for _, d := range a.tableDeployments(row) {
		for _, c := range d.Spec.Template.Spec.Containers {
			if knowledge.ImageRepository(c.Image) == row.ImageRepository {
				return &stKwokController{Deployment: d, Container: c}
			}
		}
		if len(d.Spec.Template.Spec.Containers) > 0 {
			return &stKwokController{Deployment: d, Container: d.Spec.Template.Spec.Containers[0]}
		}
	}
	return nil
}

// stBoolFlag reads a boolean flag: "--name" and "--name=true" are true.
func stBoolFlag(args []string, name string) (value, set bool) {
	for _, a := range args {
		switch {
		case a == "--"+name:
			value, set = true, true
		case strings.HasPrefix(a, "--"+name+"="):
			if b, err := strconv.ParseBool(strings.TrimPrefix(a, "--"+name+"=")); err == nil {
				value, set = b, true
			}
		}
	}
	return value, set
}

// stKwokManages says whether kwok manages the node and how that is known: the controller's node
// selection flags, or the annotation kwok's shipped manifests select nodes by.
func stKwokManages(n *corev1.Node, ctrl *stKwokController) (bool, string) {
	if n == nil {
		return false, ""
	}
	if ctrl != nil {
		args := ctrl.args()
		dep := ctrl.Deployment.Namespace + "/" + ctrl.Deployment.Name
		if single := knowledge.FlagValue(args, "manage-single-node", ""); single != "" {
			if single == n.Name {
				return true, fmt.Sprintf("kwok Deployment %s runs with --manage-single-node=%s", dep, single)
			}
		} else if all, _ := stBoolFlag(args, "manage-all-nodes"); all {
			return true, fmt.Sprintf("kwok Deployment %s runs with --manage-all-nodes=true", dep)
		}
		if sel := knowledge.FlagValue(args, "manage-nodes-with-annotation-selector", ""); sel != "" {
			if s, err := labels.Parse(sel); err == nil && s.Matches(labels.Set(n.Annotations)) {
				return true, fmt.Sprintf("node annotations match kwok Deployment %s --manage-nodes-with-annotation-selector=%s", dep, sel)
			}
		}
		if sel := knowledge.FlagValue(args, "manage-nodes-with-label-selector", ""); sel != "" {
			if s, err := labels.Parse(sel); err == nil && s.Matches(labels.Set(n.Labels)) {
				return true, fmt.Sprintf("node labels match kwok Deployment %s --manage-nodes-with-label-selector=%s", dep, sel)
			}
		}
	}
	if n.Annotations[stKwokNodeAnnotation] == stKwokNodeFake {
		return true, fmt.Sprintf("node %s has annotation %s=%s, the selector of kwok's shipped manifests", n.Name, stKwokNodeAnnotation, stKwokNodeFake)
	}
	return false, ""
}

// kwokStageNotRun reports a pod on a kwok node that kwok has not finished deleting.
func (a *termAnalysis) kwokStageNotRun(p *corev1.Pod, full bool) (Draft, bool) {
	hasFin := stHasString(p.Finalizers, stKwokFinalizer)
	var node *corev1.Node
	if full && p.Spec.NodeName != "" {
		node, _ = a.s.Node(p.Spec.NodeName)
	}
	ctrl := a.findKwokController()
	managed, how := stKwokManages(node, ctrl)
	grace := stGraceSeconds(p)
	// kwok's finalizer marks a kwok pod by itself; without it, a kwok node and a grace period
	// kwok never ended do.
	if !hasFin && !(managed && grace > 0) {
		return Draft{}, false
	}
	var ev []string
	if hasFin {
		line := "finalizer " + stKwokFinalizer + " is still on the pod"
		if mgrs := stFinalizerManagers(p, stKwokFinalizer); len(mgrs) > 0 {
			line += " (added by field manager " + strings.Join(stManagerNames(mgrs), ", ") + ")"
		}
		ev = append(ev, line)
	}
	if grace > 0 {
		ev = append(ev, fmt.Sprintf("deletionGracePeriodSeconds %d: kwok has not deleted the pod with grace period 0, as its pod-delete stage does", grace))
	}
	if managed {
		ev = append(ev, how)
	}
	alive := false
	if node != nil {
		ev = append(ev, a.readyLine(node))
		stale, hb := a.heartbeat(node)
		ev = append(ev, hb...)
		alive = !stale
	}
	var refs []string
	msg := fmt.Sprintf("kwok simulates this pod's node and plays its kubelet: its pod stages remove %s and delete the pod. That stage has not run.", stKwokFinalizer)
	if ctrl == nil {
		if a.read(snapshot.InputControllers) {
			ev = append(ev, "no kwok controller Deployment found (kwok may run outside the cluster), so its version is unknown")
		} else {
			ev = append(ev, "Deployments were not read, so kwok's version is unknown")
		}
	} else {
		dep := ctrl.Deployment.Namespace + "/" + ctrl.Deployment.Name
		ev = append(ev, fmt.Sprintf("kwok controller: %s, image %s", stDeploymentStatus(ctrl.Deployment), ctrl.Container.Image))
		v, err := knowledge.ImageVersion(ctrl.Container.Image)
		switch {
		case err != nil:
			ev = append(ev, "kwok version unknown: "+err.Error())
		default:
			if bug, affected := knowledge.Affected(knowledge.BugKwokStageNotRun, v, nil); affected {
				ev = append(ev, fmt.Sprintf("kwok %s is in the range of %s (%s): %s", v, strings.Join(bug.Reference, ", "), bug.Affected, bug.Summary))
				refs = append(refs, bug.Reference...)
				msg = fmt.Sprintf("kwok %s (Deployment %s) has a known bug, %s: a stale re-listed copy of the pod cancels the "+
					"delayed stage that removes %s, so the pod stays Terminating. Fixed in %s; a restarted kwok also re-plays "+
					"the stages, since the jobs live in its memory.", v, dep, bug.Reference[0], stKwokFinalizer, bug.Affected.Fixed)
			} else if bug.ID != "" {
				ev = append(ev, fmt.Sprintf("kwok %s is outside the range of %s (%s)", v, bug.Reference[0], bug.Affected))
			}
		}
	}
	if node != nil && !alive {
		msg += " Node " + node.Name + " is not heartbeating either: kwok itself may not be running."
	} else if node != nil && len(refs) == 0 {
		msg += " kwok is alive (the node heartbeats), so check that its pod stages match this pod (--config, Stage objects) and its log."
	}
	var fixes []report.Fix
	if hasFin {
		fixes = append(fixes, report.Fix{Action: ActionRemoveFinalizer, Risk: report.RiskLow,
			Description: fmt.Sprintf("Remove finalizer %s. Nothing is skipped: the pod is simulated. kwok (or the apiserver, once the grace period is 0) then completes the deletion.", stKwokFinalizer),
			Params:      map[string]string{"finalizer": stKwokFinalizer}})
	} else {
		msg += " Restarting kwok re-plays its stages."
	}
	nodeName := p.Spec.NodeName
	if nodeName == "" {
		nodeName = "unknown"
	}
	return Draft{
		RootCause:  RCKwokStageNotRun,
		Summary:    fmt.Sprintf("Terminating for %s on kwok node %s: kwok has not finished the deletion", Age(a.now, p.DeletionTimestamp.Time), nodeName),
		Message:    msg,
		Evidence:   ev,
		References: refs,
		Fixes:      fixes,
	}, true
}

// kubeletKillFailing reports a pod whose live kubelet has not confirmed its containers stopped.
func (a *termAnalysis) kubeletKillFailing(p *corev1.Pod, full bool, owners *stOwnerCache) (Draft, bool) {
	grace := stGraceSeconds(p)
	if grace == 0 {
		return Draft{}, false
	}
	if !full && len(p.Finalizers) > 0 {
		return Draft{}, false // without the pod's spec the finalizers are what can be diagnosed
	}
	if full && p.Spec.NodeName == "" {
		return Draft{}, false // an unbound pod is deleted without waiting for a kubelet
	}
	var ev []string
	node := p.Spec.NodeName
	if n, ok := a.s.Node(node); ok {
		ev = append(ev, a.readyLine(n))
		_, hb := a.heartbeat(n)
		ev = append(ev, hb...)
	} else if !full {
		ev = append(ev, "the pod's full object was not read, so its node is unknown")
		node = "its node"
	} else if !a.read(snapshot.InputNodes) {
		ev = append(ev, "nodes were not read, so the state of node "+node+" is unknown")
	}
	var reasons []string
	for _, e := range a.s.EventsFor("Pod", p.Namespace, p.Name, p.UID) {
		if stKubeletTroubleReasons[e.Reason] {
			reasons = append(reasons, e.Reason)
			ev = append(ev, fmt.Sprintf("%s %s from %s (x%d, %s ago): %s", e.Type, e.Reason, stEventReporter(e), stEventCount(e),
				Age(a.now, snapshot.EventTime(e)), stOneLine(e.Message, 200)))
		}
	}
	var running []string
	for _, st := range append(append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...),
		p.Status.ContainerStatuses...), p.Status.EphemeralContainerStatuses...) {
		if st.State.Running != nil {
			running = append(running, st.Name)
		}
	}
	if len(running) > 0 {
		ev = append(ev, "containers still running: "+strings.Join(running, ", "))
	}
	if len(reasons) == 0 && full {
		ev = append(ev, "no kubelet Warning event about this pod")
	}
	for _, o := range owners.get() {
		ev = append(ev, "after the kubelet: "+o.line())
	}
	what := "has not reported why"
	switch {
	case len(reasons) > 0:
		what = "reports " + strings.Join(dedup(reasons), ", ")
	case len(running) > 0:
		what = "still reports containers running: " + strings.Join(running, ", ")
	}
	return Draft{
		RootCause: RCKubeletKillFailing,
		Summary:   fmt.Sprintf("Terminating for %s: the kubelet on %s has not stopped the pod", Age(a.now, p.DeletionTimestamp.Time), node),
		Message: fmt.Sprintf("The pod's grace period is over, but the kubelet on %s has not confirmed that its containers "+
			"stopped (it deletes the pod with grace period 0 when they have). It %s. Check the kubelet and the container "+
			"runtime on that node; force-deleting would leave the containers running.", node, what),
		Evidence: ev,
	}, true
}
