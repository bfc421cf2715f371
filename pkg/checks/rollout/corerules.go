package rollout

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// statefulSetBrokenPod: an OrderedReady StatefulSet stops at the first pod, in ordinal order,
// that is not Running and Ready (processReplica, pkg/controller/statefulset/stateful_set_control.go,
// kubernetes v1.37.1), and replaces pods of another revision only once every pod is healthy. A
// pod on a revision other than updateRevision that has not been Ready for the threshold holds
// the rollout for good, even after the template is fixed or reverted: the documentation's forced
// rollback is to delete that pod, and the controller recreates it on updateRevision. Only a pod
// at or above the partition is recreated there (newVersionedStatefulSetPod), so only such a pod
// is named.
func statefulSetBrokenPod(p *pass, st *stall) (checks.Draft, bool) {
	r := st.r
	if r.core == nil || r.core.sts == nil || !orderedRolling(r.core.sts) || !r.updating {
		return checks.Draft{}, false
	}
	sts, now := r.core.sts, p.Snapshot.Now
	var read []*corev1.Pod
	for _, m := range r.core.stale {
		if pod, ok := p.Snapshot.FullPod(m.UID); ok {
			read = append(read, pod)
		}
	}
	for _, pod := range sortedByOrdinal(sts, read) {
		if pod.DeletionTimestamp != nil || conditionTrue(pod, corev1.PodReady) {
			continue
		}
		since := notReadySince(pod)
		if now.Sub(since) < p.threshold {
			continue
		}
		rev := pod.Labels[revisionLabel]
		what := fmt.Sprintf("phase %s", pod.Status.Phase)
		if v := kubeletVerdict(p, pod); v != nil {
			what = v.line
		}
		d := st.draft(RootCauseStatefulSetBrokenPod, fmt.Sprintf("Pod %s was created on revision %s and has not been Ready since; the StatefulSet "+
			"controller waits for it before it goes on, so it never replaces it with revision %s, even after the template was fixed or reverted. "+
			"Delete the pod (the documentation's forced rollback): the controller recreates it on revision %s. If revision %s is broken "+
			"too, fix the template first.", pod.Name, rev, r.update, r.update, r.update))
		d.Summary = fmt.Sprintf("StatefulSet %s rollout is held by pod %s on revision %s, not Ready for %s", sts.Name, pod.Name, rev, checks.Age(now, since))
		d.Since = since
		d.Evidence = append(d.Evidence, checks.Evidencef("pod %s (ordinal %d) is on revision %s, not the updateRevision %s, and not Ready for %s: %s",
			pod.Name, ordinal(sts, &pod.ObjectMeta), rev, r.update, checks.Age(now, since), what))
		d.Fixes = []report.Fix{{Action: checks.ActionDeletePod, Risk: report.RiskMedium,
			Description: fmt.Sprintf("delete pod %s (revision %s, not Ready); the StatefulSet controller recreates it on revision %s", pod.Name, rev, r.update),
			Params:      map[string]string{"pod": pod.Name, "podUID": string(pod.UID), "revision": rev, "updateRevision": r.update}}}
		return d, true
	}
	return checks.Draft{}, false
}

// notReadySince is when the pod last stopped being Ready, or its creation when it never was.
func notReadySince(p *corev1.Pod) time.Time {
	if c := condition(p, corev1.PodReady); c != nil && !c.LastTransitionTime.IsZero() {
		return c.LastTransitionTime.Time
	}
	return p.CreationTimestamp.Time
}

// daemonSetNodesUnavailable: without surge, a DaemonSet's rolling update replaces an available
// old pod only while fewer than maxUnavailable nodes have no available pod (rollingUpdate,
// pkg/controller/daemon/update.go, kubernetes v1.37.1). The pod of a node that is NotReady or
// gone is not available, and one deleted there stays Terminating without a kubelet and still
// counts (findUpdatedPodsOnNode skips it, so the node has neither an old nor a new pod). As many
// such nodes as maxUnavailable stop the update on every healthy node; the new revision may be fine.
func daemonSetNodesUnavailable(p *pass, st *stall) (checks.Draft, bool) {
	r := st.r
	if r.core == nil || r.core.ds == nil || r.core.surge > 0 || !r.updating {
		return checks.Draft{}, false
	}
	s := p.Snapshot
	// down are the nodes that are NotReady or gone; stuck the Ready nodes whose pod is still
	// Terminating past its grace period, which count the same.
	down, stuck := map[string]bool{}, map[string]bool{}
	var blocks []report.BlockRef
	var lines []string
	seen := map[string]bool{}
	for _, m := range append(append(r.pods[:0:0], r.pods...), r.core.stale...) {
		pod, ok := s.FullPod(m.UID)
		if !ok || pod.Spec.NodeName == "" || seen[string(pod.UID)] {
			continue
		}
		seen[string(pod.UID)] = true
		why := nodeDown(s, pod.Spec.NodeName)
		overdue := pod.DeletionTimestamp != nil && s.Now.After(pod.DeletionTimestamp.Time)
		switch {
		case why != "" && (pod.DeletionTimestamp != nil || !conditionTrue(pod, corev1.PodReady)):
			down[pod.Spec.NodeName] = true
		case why == "" && overdue:
			stuck[pod.Spec.NodeName] = true
			why = "node " + pod.Spec.NodeName + " is Ready"
		default:
			continue
		}
		state := "not Ready"
		if pod.DeletionTimestamp != nil {
			state = fmt.Sprintf("Terminating (deleted %s ago)", checks.Age(s.Now, deletionAsked(&pod.ObjectMeta)))
			blocks = append(blocks, *podBlock(pod))
		}
		lines = append(lines, checks.Evidencef("%s; its pod %s is %s", why, pod.Name, state))
	}
	if len(down) == 0 && len(stuck) == 0 || int32(len(down)+len(stuck)) < r.core.maxUnavailable {
		return checks.Draft{}, false
	}
	sort.Strings(lines)
	if len(down) == 0 {
		// Only pods stuck Terminating on healthy nodes: their own findings say why.
		d := st.draft(RootCauseBlockedByStuckPod, fmt.Sprintf("Pods of the DaemonSet stuck Terminating on %d node(s) count as unavailable, as many as its "+
			"maxUnavailable (%d), so its controller replaces no pod on any other node; fix those pods through their own findings (see blockedBy).",
			len(stuck), r.core.maxUnavailable))
		d.Evidence = append(d.Evidence, lines...)
		d.BlockedBy = append(blocks, d.BlockedBy...)
		return d, true
	}
	nodes := sortedKeys(down)
	d := st.draft(RootCauseDaemonSetNodesUnavailable, fmt.Sprintf("%d node(s) that are NotReady or gone (%s) hold pods of the DaemonSet that are not "+
		"available, which with the other unavailable nodes use up its maxUnavailable (%d), so its controller replaces no pod on any other node. "+
		"Bring the nodes back, or delete the Node objects of machines that are gone (their pods then go too), or raise maxUnavailable; "+
		"pods stuck Terminating there have findings of their own.", len(nodes), strings.Join(nodes, ", "), r.core.maxUnavailable))
	d.Summary += fmt.Sprintf(": nodes %s use up its maxUnavailable", strings.Join(nodes, ", "))
	d.Evidence = append(d.Evidence, lines...)
	d.BlockedBy = append(blocks, d.BlockedBy...)
	return d, true
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
