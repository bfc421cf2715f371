package rollout

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks/internal/kruiseenv"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// check is the rollout-stalled check.
type check struct{ checks.Documented }

// New returns the rollout-stalled check.
func New() checks.Check {
	return check{checks.Describe(checks.Info{
		ID:         ID,
		Threshold:  10 * time.Minute,
		RootCauses: rootCauses(),
		Needs: []checks.Need{
			{Input: snapshot.InputPods, PodAnnotations: []string{kruise.AnnotationLifecycleTime, kruise.AnnotationSidecarHash, kruise.AnnotationSidecarHashWithoutImage, kruise.AnnotationSidecarInjects}},
			{Input: snapshot.InputKruiseWorkloads},
			{Input: snapshot.InputSidecarSets, Optional: true},
			{Input: snapshot.InputEvents, Optional: true},
			{Input: snapshot.InputControllers, Optional: true},
			{Input: snapshot.InputControllerLogs, Optional: true},
		},
	}, documentation)}
}

// DeclareReads declares, for each workload whose status says its rollout is not done, the few
// pods it most recently created or moved on the update revision (or PreparingUpdate): the
// pods a stalled rollout waits on. Workloads whose counts are complete cost no read.
// The daemon's pods are read too once one of those pods, read, shows an in-place update waiting
// for kruise-daemon, to say whether one is on that pod's node.
func (check) DeclareReads(s *snapshot.Snapshot) snapshot.Reads {
	var out []types.UID
	for _, w := range s.Workloads {
		r, ok := stalledRollout(s, w)
		if !ok || !s.Scope.PodsComplete(w) {
			continue
		}
		for i, p := range r.pods {
			if i == maxCandidates {
				break
			}
			out = append(out, p.UID)
		}
	}
	if len(out) == 0 {
		return snapshot.Reads{}
	}
	awaited := func(s *snapshot.Snapshot) bool {
		return slices.ContainsFunc(out, func(uid types.UID) bool {
			full, ok := s.FullPod(uid)
			return ok && awaitsDaemon(full)
		})
	}
	return snapshot.Reads{Pods: []snapshot.PodReads{{UIDs: out},
		{UIDs: newDaemonView(s, kruiseenv.New(s)).pods(), When: awaited}}}
}

// Run reports the rollouts that have not progressed for their threshold, and the SidecarSets
// whose update stopped.
func (c check) Run(s *snapshot.Snapshot, threshold time.Duration) []report.Finding {
	info := c.Info()
	env := kruiseenv.New(s)
	pe := newPodEnv(s, env)
	var out []report.Finding
	for _, w := range s.Workloads {
		r, ok := stalledRollout(s, w)
		if !ok || !s.Scope.PodsComplete(w) || s.Now.Sub(r.since) < r.threshold(s, threshold) {
			continue
		}
		if d, ok := workloadDraft(s, r, pe); ok {
			f := checks.NewFinding(info, d.Draft)
			f.BlockedBy = d.blocks
			out = append(out, f)
		}
	}
	for _, ss := range s.SidecarSets {
		if d, ok := sidecarSetDraft(s, env, ss, threshold); ok {
			out = append(out, checks.NewFinding(info, d))
		}
	}
	return out
}

// podEnv is what judging pods needs besides the pod.
type podEnv struct {
	now    time.Time
	daemon *daemonView
}

func newPodEnv(s *snapshot.Snapshot, env *kruiseenv.Env) *podEnv {
	return &podEnv{now: s.Now, daemon: newDaemonView(s, env)}
}

type workloadFinding struct {
	checks.Draft
	blocks []report.BlockRef
}

// workloadDraft names why a stalled rollout waits: the first cause (by rank) any of its pods
// read in full shows, else the deadline the controller reported. A rollout whose pods show no
// cause and whose controller set no deadline is not reported: it may be progressing slowly.
func workloadDraft(s *snapshot.Snapshot, r *rollout, pe *podEnv) (workloadFinding, bool) {
	w := r.w
	var vs []*verdict
	for _, meta := range r.pods {
		p, full := s.FullPod(meta.UID)
		if !full {
			continue
		}
		if v := judgePod(w, p, pe); v != nil && (r.updating || !runsAlready(v.cause)) {
			vs = append(vs, v)
		}
	}
	sort.SliceStable(vs, func(i, j int) bool { return rank(vs[i].cause) < rank(vs[j].cause) })
	if len(vs) == 0 && r.deadline == nil {
		return workloadFinding{}, false
	}
	d := checks.Draft{Object: kruiseenv.WorkloadRef(w), Since: r.since, Evidence: []string{r.countsLine()}}
	if r.deadline != nil {
		d.Evidence = append(d.Evidence, checks.Evidencef("condition Progressing=False reason %s since %s ago: %s",
			r.deadline.Reason, checks.Age(s.Now, r.deadline.LastTransitionTime.Time), checks.Truncate(r.deadline.Message, 200)))
	}
	refused := refusedCreates(s, r)
	d.Evidence = append(d.Evidence, refused.lines...)
	var blocks []report.BlockRef
	for i, v := range vs {
		if i < maxNamed {
			d.Evidence = append(d.Evidence, v.line)
		}
		if v.block != nil {
			blocks = append(blocks, *v.block)
		}
	}
	if len(vs) > maxNamed {
		d.Evidence = append(d.Evidence, fmt.Sprintf("%d more pods hold the rollout", len(vs)-maxNamed))
	}
	cause := RootCauseProgressDeadline
	if len(vs) > 0 {
		cause = vs[0].cause
	}
	d.RootCause = cause
	d.Summary, d.Message = words(w, cause, checks.Age(s.Now, r.since))
	if cause == RootCauseProgressDeadline && refused.newest != nil {
		// The deadline alone names no cause; a refused create is one a person must act on.
		d.Summary += ": the apiserver refuses its new pods"
		d.Message = fmt.Sprintf("The controller cannot create the pods of revision %s: the apiserver refuses them (newest: %s). "+
			"Remove what refuses them (a ResourceQuota to raise or free, an admission webhook or policy the template breaks); "+
			"the controller retries and the rollout carries on.", r.update, kruiseenv.EventMessage(refused.newest.Message))
	}
	return workloadFinding{Draft: d, blocks: blocks}, true
}

// runsAlready reports whether the cause is one of a pod that was scheduled and started: once a
// rollout has put every pod on the update revision, such a pod is the app's trouble, not a
// rollout that stopped.
func runsAlready(cause string) bool {
	return cause == RootCauseCrashLooping || cause == RootCausePodsNotReady
}

// words are the summary and the message of a workload finding: what stopped and what a person
// must do about it.
func words(w *kruise.Workload, cause, age string) (string, string) {
	what := fmt.Sprintf("%s %s rollout has made no progress for %s", w.Kind, w.Name, age)
	msg := map[string]string{
		RootCauseInPlaceHookPending: "pods wait in PreparingUpdate for the inPlaceUpdate hook's finalizers or labels to be removed; " +
			"whoever owns the hook must release them (or remove them yourself once the pods may be updated)",
		RootCausePodsUnschedulable: "new-revision pods cannot be scheduled; the scheduler's reason is quoted: add capacity or nodes that match, " +
			"or change the template",
		RootCauseImagePullFailing: "new-revision pods cannot pull their image; fix the image name or tag, or the registry credentials",
		RootCauseInPlaceResizePending: "an in-place update waits on a resize the kubelet defers or cannot make; lower the template's " +
			"resources or move the pods to nodes with room",
		RootCauseInPlaceDaemonMissing: "an in-place update that changes env from metadata waits for kruise-daemon to restart the containers " +
			"and report them, and none has on the pod's node; make kruise-daemon run there (or read its log if it does), or recreate the pods",
		RootCauseInPlaceUpdateIncomplete: "an in-place update started and never completed: containers are not on the new image; read the pod's " +
			"events for the kubelet's reason",
		RootCauseCrashLooping:      "new-revision pods crash on start; the new template or its configuration is broken: fix it or roll back",
		RootCauseBlockedByStuckPod: "the rollout waits on pods another check reports as stuck (see blockedBy); fix those first",
		RootCausePodsNotReady:      "new-revision pods run but do not become Ready (readiness probes or gates); find out why or roll back",
		RootCauseProgressDeadline: "the controller reports ProgressDeadlineExceeded and the pods read show no single cause; read the " +
			"new-revision pods' events, and the workload's own: a pod the apiserver refused to create (a ResourceQuota, an admission " +
			"webhook) is a FailedCreate event there",
	}[cause]
	return what, strings.ToUpper(msg[:1]) + msg[1:] + "."
}
