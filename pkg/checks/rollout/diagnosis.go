package rollout

import (
	"fmt"
	"sort"
	"strings"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
)

// stall is what the check judges of a stalled rollout: the rollout, why each pod it waits on
// and read in full holds it (most specific cause first), the creates the apiserver refused, and
// the draft every finding on it starts from.
type stall struct {
	r        *rollout
	verdicts []*verdict
	refused  refusal
	base     checks.Draft
}

// newStall judges the pods a rollout waits on. A pod that runs but crashes or is not Ready holds
// only a rollout still updating (runsAlready).
func newStall(p *pass, r *rollout) *stall {
	s := p.Snapshot
	st := &stall{r: r, refused: refusedCreates(s, r)}
	p.judgeRefuser(r, &st.refused)
	for _, meta := range r.pods {
		pod, full := s.FullPod(meta.UID)
		if !full {
			continue
		}
		if v := judgePod(p, r.hook, pod); v != nil && (r.updating || !runsAlready(v.cause)) {
			st.verdicts = append(st.verdicts, v)
		}
	}
	sort.SliceStable(st.verdicts, func(i, j int) bool { return rank(st.verdicts[i].cause) < rank(st.verdicts[j].cause) })
	st.base = checks.Draft{Object: r.ref, Since: r.since, Evidence: []string{r.counts},
		Summary: fmt.Sprintf("%s %s rollout has made no progress for %s", r.kind, r.meta.Name, checks.Age(s.Now, r.since))}
	if r.deadline != nil {
		st.base.Evidence = append(st.base.Evidence, checks.Evidencef("condition Progressing=False reason %s since %s ago: %s",
			r.deadline.Reason, checks.Age(s.Now, r.deadline.LastTransitionTime.Time), checks.Truncate(r.deadline.Message, 200)))
	}
	st.base.Evidence = append(st.base.Evidence, st.refused.lines...)
	for i, v := range st.verdicts {
		if i < maxNamed {
			st.base.Evidence = append(st.base.Evidence, v.line)
		}
		if v.block != nil {
			st.base.BlockedBy = append(st.base.BlockedBy, *v.block)
		}
	}
	if len(st.verdicts) > maxNamed {
		st.base.Evidence = append(st.base.Evidence, fmt.Sprintf("%d more pods hold the rollout", len(st.verdicts)-maxNamed))
	}
	return st
}

// draft is the base draft naming the root cause, with what a person must do about it.
func (st *stall) draft(rootCause, message string) checks.Draft {
	d := st.base
	d.RootCause, d.Message = rootCause, message
	return d
}

// runsAlready reports whether the cause is one of a pod that was scheduled and started: once a
// rollout has put every pod on the update revision, such a pod is the app's trouble, not a
// rollout that stopped.
func runsAlready(cause string) bool {
	return cause == RootCauseCrashLooping || cause == RootCausePodsNotReady
}

// podCause is a cause a pod shows that holds its workload's rollout, with what a person must do
// about it.
type podCause struct{ id, message string }

// podCauses are the causes a rollout's pods show, most specific first: the order the pods'
// verdicts are ranked in and the workload's rules are tried in.
func podCauses() []podCause {
	return []podCause{
		{RootCauseInPlaceHookPending, "Pods wait in PreparingUpdate for the inPlaceUpdate hook's finalizers or labels to be removed; " +
			"whoever owns the hook must release them (or remove them yourself once the pods may be updated)."},
		{RootCausePodsUnschedulable, "New-revision pods cannot be scheduled; the scheduler's reason is quoted: add capacity or nodes that match, " +
			"or change the template."},
		{RootCauseImagePullFailing, "New-revision pods cannot pull their image; fix the image name or tag, or the registry credentials."},
		{RootCauseInPlaceResizePending, "An in-place update waits on a resize the kubelet defers or cannot make; lower the template's " +
			"resources or move the pods to nodes with room."},
		{RootCauseInPlaceDaemonMissing, "An in-place update that changes env from metadata waits for kruise-daemon to restart the containers " +
			"and report them, and none has on the pod's node; make kruise-daemon run there (or read its log if it does), or recreate the pods."},
		{RootCauseInPlaceUpdateIncomplete, "An in-place update started and never completed: containers are not on the new image; read the pod's " +
			"events for the kubelet's reason."},
		{RootCauseCrashLooping, "New-revision pods crash on start; the new template or its configuration is broken: fix it or roll back."},
		{RootCauseBlockedByStuckPod, "The rollout waits on pods another check reports as stuck (see blockedBy); fix those first."},
		{RootCausePodsNotReady, "New-revision pods run but do not become Ready (readiness probes or gates); find out why or roll back."},
	}
}

// rank orders pod causes: a lower rank names the finding.
func rank(cause string) int {
	causes := podCauses()
	for i, c := range causes {
		if c.id == cause {
			return i
		}
	}
	return len(causes)
}

// workloadRules are the root causes of a stalled rollout: what holds a core workload's
// controller before it gets to the new revision (a StatefulSet's broken pod, a DaemonSet's dead
// nodes), then the first cause any of its pods read in full shows, else the creates the
// apiserver refuses, else the deadline the controller reported. A rollout whose pods show no
// cause and whose controller set no deadline is not reported: it may be progressing slowly.
func workloadRules() []checks.Rule[*pass, *stall] {
	rules := []checks.Rule[*pass, *stall]{statefulSetBrokenPod, daemonSetNodesUnavailable}
	for _, c := range podCauses() {
		rules = append(rules, podsShow(c.id, c.message))
	}
	return append(rules, createsBlockedByWebhook, createsRefused, deadlinePassed)
}

// podsShow is the rule of a cause a pod shows.
func podsShow(cause, message string) checks.Rule[*pass, *stall] {
	return func(_ *pass, st *stall) (checks.Draft, bool) {
		for _, v := range st.verdicts {
			if v.cause == cause {
				return st.draft(cause, message), true
			}
		}
		return checks.Draft{}, false
	}
}

// createsRefused: the rollout's new pods are refused by the apiserver, as a Deployment's
// ReplicaFailure condition or the controller's FailedCreate events say. An OpenKruise workload is
// judged so only past its deadline: without one, its creates may be on their way.
func createsRefused(_ *pass, st *stall) (checks.Draft, bool) {
	if st.refused.message == "" || (st.r.deadline == nil && st.r.core == nil) {
		return checks.Draft{}, false
	}
	d := st.draft(RootCausePodCreationRefused, fmt.Sprintf("The controller cannot create the pods of revision %s: the apiserver refuses them (%s). "+
		"The %s; the controller retries and the rollout carries on.", st.r.update, checks.Truncate(st.refused.message, 300), st.refused.by.remedy()))
	if st.r.update == "" {
		d.Message = fmt.Sprintf("The controller cannot create the %s's pods: the apiserver refuses them (%s). The %s; the controller retries and the rollout carries on.",
			st.r.kind, checks.Truncate(st.refused.message, 300), st.refused.by.remedy())
	}
	d.Summary += ": the apiserver refuses its new pods"
	if by := st.refused.by; by.kind != "" {
		d.Summary += " (" + strings.TrimSpace(by.kind+" "+by.name) + ")"
	}
	return d, true
}

// deadlinePassed: past its deadline, and nothing the scan read names a cause.
func deadlinePassed(_ *pass, st *stall) (checks.Draft, bool) {
	if st.r.deadline == nil {
		return checks.Draft{}, false
	}
	return st.draft(RootCauseProgressDeadline, "The controller reports ProgressDeadlineExceeded and the pods read show no single cause; read the "+
		"new-revision pods' events, and the workload's own: a pod the apiserver refused to create (a ResourceQuota, an admission "+
		"webhook) is a FailedCreate event there."), true
}
