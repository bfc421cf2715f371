package rollout

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// Names the core controllers write (kubernetes v1.37.1).
const (
	// revisionAnnotation is the revision of a Deployment and of each of its ReplicaSets; the new
	// ReplicaSet's equals the Deployment's (SetDeploymentRevision, deployment/util).
	revisionAnnotation = "deployment.kubernetes.io/revision"
	// podTemplateHashLabel is what a ReplicaSet adds to its selector and its pods' labels.
	podTemplateHashLabel = "pod-template-hash"
	// templateGeneration is a DaemonSet's template generation (GetTemplateGeneration,
	// daemon/util/daemonset_util.go) and templateGenerationLabel its pods' copy of it.
	templateGeneration      = "deprecated.daemonset.template.generation"
	templateGenerationLabel = "pod-template-generation"
	// podIndexLabel is a StatefulSet pod's ordinal (PodIndexLabel, on since 1.28).
	podIndexLabel = "apps.kubernetes.io/pod-index"
	// conditionReplicaFailure is a Deployment's copy of its ReplicaSets' failed creates
	// (getReplicaFailures, deployment/sync.go).
	conditionReplicaFailure = "ReplicaFailure"
)

// coreRollout is what a core workload's rollout adds to the common terms.
type coreRollout struct {
	dep *appsv1.Deployment
	sts *appsv1.StatefulSet
	ds  *appsv1.DaemonSet
	// replicaFailure is a Deployment's ReplicaFailure=True condition.
	replicaFailure *appsv1.DeploymentCondition
	// unreadReplicaSets says why a Deployment's ReplicaSets are not known; "" when read.
	unreadReplicaSets string
	// stale are a StatefulSet's live pods on another revision that a delete would bring to the
	// update revision (ordinal at or above the partition), and a DaemonSet's pods being
	// deleted: most recent activity first.
	stale []*metav1.ObjectMeta
	// maxUnavailable is a DaemonSet's, as its controller resolves it; surge its maxSurge.
	maxUnavailable, surge int32
}

// coreRollouts are the core workloads in scope whose rollout is not done.
func coreRollouts(s *snapshot.Snapshot) []*rollout {
	var out []*rollout
	for _, d := range s.Deployments {
		if r, ok := deploymentRollout(s, d); ok && coreInScope(s, &d.ObjectMeta, d.Spec.Selector) {
			out = append(out, r)
		}
	}
	for _, sts := range s.StatefulSets {
		if r, ok := statefulSetRollout(s, sts); ok && coreInScope(s, &sts.ObjectMeta, sts.Spec.Selector) {
			out = append(out, r)
		}
	}
	for _, ds := range s.DaemonSets {
		if r, ok := daemonSetRollout(s, ds); ok && coreInScope(s, &ds.ObjectMeta, ds.Spec.Selector) {
			out = append(out, r)
		}
	}
	return out
}

// coreInScope reports whether the scan read every pod of the workload: the workloads are listed
// in every namespace, the pods only in the scan's namespace and label selector.
func coreInScope(s *snapshot.Snapshot, m *metav1.ObjectMeta, sel *metav1.LabelSelector) bool {
	sc := s.Scope
	if !sc.AllNamespaces && sc.Namespace != "" && sc.Namespace != m.Namespace {
		return false
	}
	return sc.LabelSelector == "" || snapshot.SelectorImplies(sel, sc.LabelSelector)
}

// stalledDeployments are the Deployments whose controller reports the rollout stalled, and so
// whose ReplicaSets the check reads.
func stalledDeployments(s *snapshot.Snapshot) []*appsv1.Deployment {
	var out []*appsv1.Deployment
	for _, d := range s.Deployments {
		if _, _, ok := deploymentStalled(d); ok && coreInScope(s, &d.ObjectMeta, d.Spec.Selector) {
			out = append(out, d)
		}
	}
	return out
}

// deploymentStalled returns the conditions by which the Deployment's controller says its
// rollout is stuck: Progressing=False reason ProgressDeadlineExceeded once no progress was made
// for progressDeadlineSeconds (DeploymentTimedOut and syncRolloutStatus,
// pkg/controller/deployment/progress.go), or ReplicaFailure=True copied from a ReplicaSet whose
// creates fail (getReplicaFailures, sync.go). A paused Deployment is never judged against its
// deadline (the controller sets reason DeploymentPaused), and a status not written for the
// current generation says nothing yet.
func deploymentStalled(d *appsv1.Deployment) (deadline, failure *appsv1.DeploymentCondition, ok bool) {
	if d.Spec.Paused || d.Status.ObservedGeneration < d.Generation {
		return nil, nil, false
	}
	for i := range d.Status.Conditions {
		c := &d.Status.Conditions[i]
		switch {
		case c.Type == appsv1.DeploymentProgressing && c.Status == corev1.ConditionFalse && c.Reason == reasonDeadlineExceeded:
			deadline = c
		case c.Type == conditionReplicaFailure && c.Status == corev1.ConditionTrue:
			failure = c
		}
	}
	return deadline, failure, deadline != nil || failure != nil
}

// deploymentRollout is the Deployment's rollout when its controller reports it stuck. Its
// pods are those of the new ReplicaSet, the one whose revision is the Deployment's, once the
// scan read the ReplicaSets.
func deploymentRollout(s *snapshot.Snapshot, d *appsv1.Deployment) (*rollout, bool) {
	deadline, failure, ok := deploymentStalled(d)
	if !ok {
		return nil, false
	}
	replicas := int32(1)
	if d.Spec.Replicas != nil {
		replicas = *d.Spec.Replicas
	}
	r := &rollout{ref: checks.Ref("apps/v1", "Deployment", &d.ObjectMeta), meta: &d.ObjectMeta, kind: "Deployment",
		target: replicas, updated: d.Status.UpdatedReplicas,
		// The status counts available pods of every ReplicaSet: at least that many less the
		// pods not on the new one are the new one's (the new ReplicaSet's own count, once read).
		ready:           max(0, min(d.Status.UpdatedReplicas, d.Status.AvailableReplicas-(d.Status.Replicas-d.Status.UpdatedReplicas))),
		deadlineSeconds: d.Spec.ProgressDeadlineSeconds, updating: true, templateLabels: d.Spec.Template.Labels,
		core: &coreRollout{dep: d, replicaFailure: failure}}
	if deadline != nil {
		r.deadline = &kruise.WorkloadCondition{Type: string(deadline.Type), Status: string(deadline.Status), Reason: deadline.Reason,
			Message: deadline.Message, LastTransitionTime: deadline.LastTransitionTime}
	}
	newRS := newReplicaSet(s.ReplicaSetsOf(d.UID), d)
	switch {
	case newRS != nil:
		r.update = newRS.Labels[podTemplateHashLabel]
		if newRS.Spec.Selector != nil {
			// Read whole: its own count (one read metadata-only has no status).
			r.ready = newRS.Status.AvailableReplicas
		}
		r.creators = []creator{{kind: "ReplicaSet", meta: &newRS.ObjectMeta}}
		for _, rs := range s.ReplicaSetsOf(d.UID) {
			r.owned = append(r.owned, s.OwnedPodsOf(&rs.ObjectMeta, rs.Spec.Selector)...)
		}
		r.pods = s.OwnedPodsOf(&newRS.ObjectMeta, newRS.Spec.Selector)
		byActivity(r.pods)
	default:
		r.core.unreadReplicaSets = "its new ReplicaSet was not found among those read"
		if err, unread := s.UnreadInput(snapshot.InputReplicaSets); unread {
			r.core.unreadReplicaSets = "its ReplicaSets could not be read: " + err.Error()
		}
	}
	r.since = failureSince(failure)
	if start, ok := r.deadlineStart(); ok {
		r.since = start
	}
	rsName := "not known"
	if newRS != nil {
		rsName = newRS.Name
	}
	r.counts = fmt.Sprintf("Deployment %s/%s: %d of %d replicas are on the new ReplicaSet %s, %d of them available; %d available in all",
		d.Namespace, d.Name, r.updated, r.target, rsName, r.ready, d.Status.AvailableReplicas)
	if r.core.unreadReplicaSets != "" {
		r.counts += "; " + r.core.unreadReplicaSets
	}
	return r, true
}

func failureSince(c *appsv1.DeploymentCondition) time.Time {
	if c == nil {
		return time.Time{}
	}
	return c.LastTransitionTime.Time
}

// newReplicaSet is the Deployment's ReplicaSet of its current revision, nil when none was read.
func newReplicaSet(rss []*appsv1.ReplicaSet, d *appsv1.Deployment) *appsv1.ReplicaSet {
	want := d.Annotations[revisionAnnotation]
	for _, rs := range rss {
		if want != "" && rs.Annotations[revisionAnnotation] == want {
			return rs
		}
	}
	return nil
}

// statefulSetRollout is the StatefulSet's rollout when its status says it is not done. OnDelete
// updates only pods someone deletes, by design, and a partition keeps the ordinals below it on
// the current revision (updateStatefulSet, pkg/controller/statefulset/stateful_set_control.go).
func statefulSetRollout(s *snapshot.Snapshot, sts *appsv1.StatefulSet) (*rollout, bool) {
	if sts.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType || sts.Status.ObservedGeneration < sts.Generation {
		return nil, false
	}
	replicas := int32(1)
	if sts.Spec.Replicas != nil {
		replicas = *sts.Spec.Replicas
	}
	r := &rollout{ref: checks.Ref("apps/v1", "StatefulSet", &sts.ObjectMeta), meta: &sts.ObjectMeta, kind: "StatefulSet",
		update: sts.Status.UpdateRevision, core: &coreRollout{sts: sts}, templateLabels: sts.Spec.Template.Labels,
		creators: []creator{{kind: "StatefulSet", meta: &sts.ObjectMeta}}}
	if ru := sts.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil && *ru.Partition > 0 {
		r.partition = min(*ru.Partition, replicas)
	}
	r.target = replicas - r.partition
	// The status counts ready pods of any revision: at least updated minus the pods not on the
	// update revision are ready among the updated (a lower bound; judging the pods decides).
	r.updated = sts.Status.UpdatedReplicas
	r.ready = max(0, min(r.updated, sts.Status.ReadyReplicas-(sts.Status.Replicas-r.updated)))
	r.updating = r.updated < r.target
	if r.update == "" || (r.updated >= r.target && r.ready >= r.target) {
		return nil, false
	}
	r.owned = s.OwnedPodsOf(&sts.ObjectMeta, sts.Spec.Selector)
	r.pods = waitedOn(r.owned, r.update)
	for _, p := range r.owned {
		if p.Labels[revisionLabel] != r.update && p.DeletionTimestamp == nil && ordinal(sts, p) >= int(r.partition) {
			r.core.stale = append(r.core.stale, p)
		}
	}
	byActivity(r.core.stale)
	r.since = newestActivity(r.owned, sts.CreationTimestamp.Time)
	r.counts = r.countsLine() + fmt.Sprintf("; %d of %d pods ready in all", sts.Status.ReadyReplicas, replicas)
	return r, true
}

// ordinal is a StatefulSet pod's ordinal: its pod-index label, else its name's suffix; -1 when
// neither says.
func ordinal(sts *appsv1.StatefulSet, p *metav1.ObjectMeta) int {
	if v, ok := p.Labels[podIndexLabel]; ok {
		if n, err := strconv.Atoi(v); err == nil {
			return n
		}
	}
	if suffix, ok := strings.CutPrefix(p.Name, sts.Name+"-"); ok {
		if n, err := strconv.Atoi(suffix); err == nil {
			return n
		}
	}
	return -1
}

// orderedRolling reports whether the StatefulSet's controller stops at the first pod, in ordinal
// order, that is not Running and Ready (processReplica with monotonic set): OrderedReady pod
// management and a RollingUpdate strategy. With Parallel, v1.37 deletes old-revision pods that
// are unavailable itself (updateStatefulSetAfterInvariantEstablished), and Recreate deletes every
// old-revision pod.
func orderedRolling(sts *appsv1.StatefulSet) bool {
	return sts.Spec.PodManagementPolicy != appsv1.ParallelPodManagement &&
		(sts.Spec.UpdateStrategy.Type == "" || sts.Spec.UpdateStrategy.Type == appsv1.RollingUpdateStatefulSetStrategyType)
}

// daemonSetRollout is the DaemonSet's rollout when its status says it is not done. Its update
// revision is the pods' template generation (IsPodUpdated, daemon/util/daemonset_util.go: a
// pod is updated when its pod-template-generation label or its revision hash is the
// DaemonSet's), and OnDelete updates only pods someone deletes.
func daemonSetRollout(s *snapshot.Snapshot, ds *appsv1.DaemonSet) (*rollout, bool) {
	if ds.Spec.UpdateStrategy.Type == appsv1.OnDeleteDaemonSetStrategyType || ds.Status.ObservedGeneration < ds.Generation {
		return nil, false
	}
	st := ds.Status
	r := &rollout{ref: checks.Ref("apps/v1", "DaemonSet", &ds.ObjectMeta), meta: &ds.ObjectMeta, kind: "DaemonSet",
		target: st.DesiredNumberScheduled, updated: st.UpdatedNumberScheduled,
		ready: max(0, st.UpdatedNumberScheduled-(st.DesiredNumberScheduled-st.NumberAvailable)),
		core:  &coreRollout{ds: ds}, templateLabels: ds.Spec.Template.Labels,
		creators: []creator{{kind: "DaemonSet", meta: &ds.ObjectMeta}}}
	r.updating = r.updated < r.target
	if r.updated >= r.target && r.ready >= r.target {
		return nil, false
	}
	r.owned = s.OwnedPodsOf(&ds.ObjectMeta, ds.Spec.Selector)
	gen := ds.Annotations[templateGeneration]
	for _, p := range r.owned {
		if gen != "" && p.Labels[templateGenerationLabel] == gen && p.Labels[revisionLabel] != "" {
			r.update = p.Labels[revisionLabel]
			break
		}
	}
	if r.update != "" {
		r.pods = waitedOn(r.owned, r.update)
	}
	for _, p := range r.owned {
		if p.DeletionTimestamp != nil {
			r.core.stale = append(r.core.stale, p)
		}
	}
	byActivity(r.core.stale)
	r.core.maxUnavailable, r.core.surge = daemonBudget(ds)
	r.since = newestActivity(r.owned, ds.CreationTimestamp.Time)
	update := "revision " + r.update
	if r.update == "" {
		update = "the new template (generation " + gen + ")"
	}
	r.counts = fmt.Sprintf("DaemonSet %s/%s: %d of %d pods to update are on %s; %d of %d nodes run an available pod (maxUnavailable %d)",
		ds.Namespace, ds.Name, r.updated, r.target, update, st.NumberAvailable, st.DesiredNumberScheduled, r.core.maxUnavailable)
	return r, true
}

// daemonBudget is the DaemonSet's maxUnavailable and maxSurge as its controller resolves them
// against desiredNumberScheduled (updatedDesiredNodeCounts, daemon/update.go: percentages round
// up; with neither, one pod may be unavailable).
func daemonBudget(ds *appsv1.DaemonSet) (maxUnavailable, surge int32) {
	desired := int(ds.Status.DesiredNumberScheduled)
	unavail, maxSurge := intstr.FromInt32(1), intstr.FromInt32(0)
	if ru := ds.Spec.UpdateStrategy.RollingUpdate; ru != nil {
		if ru.MaxUnavailable != nil {
			unavail = *ru.MaxUnavailable
		}
		if ru.MaxSurge != nil {
			maxSurge = *ru.MaxSurge
		}
	}
	u, err := intstr.GetScaledValueFromIntOrPercent(&unavail, desired, true)
	if err != nil {
		u = 1
	}
	sg, err := intstr.GetScaledValueFromIntOrPercent(&maxSurge, desired, true)
	if err != nil {
		sg = 0
	}
	if desired > 0 && u == 0 && sg == 0 {
		u = 1
	}
	return int32(u), int32(sg)
}

// newestActivity is the newest activity of the pods, or since when none is newer.
func newestActivity(pods []*metav1.ObjectMeta, since time.Time) time.Time {
	for _, p := range pods {
		if t := activity(p); t.After(since) {
			since = t
		}
	}
	return since
}

// nodeDown says why a node cannot run a pod that its controller counts: gone, or its Ready
// condition not True. "" when the node is Ready.
func nodeDown(s *snapshot.Snapshot, name string) string {
	n, ok := s.Node(name)
	if !ok {
		if !s.NodeAbsent(name) {
			return "" // not read: nothing is known against it
		}
		return fmt.Sprintf("node %s does not exist", name)
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			if c.Status == corev1.ConditionTrue {
				return ""
			}
			return fmt.Sprintf("node %s is Ready=%s reason %s since %s ago", name, c.Status, c.Reason, checks.Age(s.Now, c.LastTransitionTime.Time))
		}
	}
	return fmt.Sprintf("node %s reports no Ready condition", name)
}

// sortedByOrdinal returns the StatefulSet's pods lowest ordinal first.
func sortedByOrdinal(sts *appsv1.StatefulSet, pods []*corev1.Pod) []*corev1.Pod {
	out := append([]*corev1.Pod(nil), pods...)
	sort.SliceStable(out, func(i, j int) bool { return ordinal(sts, &out[i].ObjectMeta) < ordinal(sts, &out[j].ObjectMeta) })
	return out
}
