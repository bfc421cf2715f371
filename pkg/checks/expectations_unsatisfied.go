package checks

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/knowledge"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// CheckExpectationsUnsatisfied is the check's ID.
const CheckExpectationsUnsatisfied = "expectations-unsatisfied"

// Root causes of expectations-unsatisfied (contract.md).
const (
	rcScaleExpectationsLeaked  = "scale-expectations-leaked"
	rcUpdateExpectationsLeaked = "update-expectations-leaked"
	rcPodCreationFailing       = "pod-creation-failing"
	rcStalledUnknown           = "stalled-unknown"
)

// expectationsThreshold is the check's default threshold; it stands for the manager's
// --expectation-timeout (default 5m), read from its Deployment at run time.
const expectationsThreshold = 5 * time.Minute

type expectationsUnsatisfied struct{}

// ExpectationsUnsatisfied returns the expectations-unsatisfied check.
func ExpectationsUnsatisfied() Check { return expectationsUnsatisfied{} }

const refCloneSetController = "openkruise/kruise pkg/controller/cloneset/cloneset_controller.go (doReconcile)"

func (expectationsUnsatisfied) Info() Info {
	return Info{
		ID:    CheckExpectationsUnsatisfied,
		Title: "OpenKruise workloads the controller stopped reconciling",
		Description: "The CloneSet controller records what it expects to see after each create, delete and update " +
			"(expectations) and skips every reconcile, before computing status, while one is unsatisfied. If the " +
			"watch event that would satisfy it is lost, the CloneSet stays frozen: its status no longer matches " +
			"the pods, spec changes are not observed, and no pod is created or deleted. This check compares the " +
			"CloneSet's status with the pods it owns and its events, and dates each difference (managedFields of " +
			"the spec and status writes, pod changes, controller events): a difference older than the threshold " +
			"means the controller has not reconciled it. A rollout in progress, pods that are not Ready, a paused " +
			"update or a partition are not findings, because the status still matches the pods. The leader's " +
			"log, read through pods/log of the Lease holder, names the leaked expectation.\n\n" +
			"The default threshold is the kruise-manager's --expectation-timeout (5m unless set); --min-age " +
			"replaces it. Advanced StatefulSets and Advanced DaemonSets keep writing status while their update " +
			"expectations wait, so a frozen status does not show their leaks; they are not covered.",
		Threshold: expectationsThreshold,
		RootCauses: []RootCause{
			{ID: rcControllerUnavailable, Title: "kruise-manager is not running a leader", Severity: report.SeverityError,
				Description: "The kruise-manager Deployment has no available replica, or its leader Lease has not been " +
					"renewed within its lease duration, so no controller reconciles OpenKruise workloads. Bring the " +
					"manager back (its pods' events and logs say why it is down); workloads recover on their own once a " +
					"leader runs.",
				References: []string{"https://openkruise.io/docs/installation"}},
			{ID: rcPodCreationFailing, Title: "the controller's pod creations are rejected", Severity: report.SeverityError,
				Description: "The controller reconciles the CloneSet but every pod it creates is rejected: FailedCreate " +
					"Warning events (or a FailedScale condition) carry the API's answer, such as a ResourceQuota, a " +
					"LimitRange, an admission webhook or PodSecurity. Fix what the message names; the controller retries " +
					"by itself.",
				References: []string{"openkruise/kruise pkg/controller/cloneset/sync/cloneset_scale.go"}},
			{ID: rcScaleExpectationsLeaked, Title: "a scale expectation leaked in the leader's memory", Severity: report.SeverityError,
				Description: "The leader waits for a pod create or delete event that never arrives (lost while the watch " +
					"re-listed, openkruise/kruise#1765). Past --expectation-timeout it logs \"Expectation unsatisfied " +
					"overtime\" with the dirty pods and returns without requeue, on every later event. Before v1.8.0, " +
					"and from v1.8.0 unless the ForceDeleteTimeoutExpectationGate gate is on (openkruise/kruise#1829), " +
					"only a new leader clears it: expectations live only in the leader's memory. Restart the leader; a " +
					"requeue alone does not help because the reconcile is skipped before it starts. Without the leader's " +
					"log the leak is inferred from the frozen status, and the finding says so.",
				References: []string{"openkruise/kruise#1765", "openkruise/kruise#1829", refCloneSetController},
				Actions:    []string{ActionRestartControllerLeader, ActionRequeueWorkload}},
			{ID: rcUpdateExpectationsLeaked, Title: "an update (resourceVersion) expectation leaked in the leader's memory", Severity: report.SeverityError,
				Description: "The leader waits to observe a newer resourceVersion of a pod it updated. Past " +
					"--expectation-timeout it logs \"Expectation unsatisfied overtime for CloneSet, wait for pod " +
					"updating timeout\" and skips the reconcile. Restart the leader to clear its in-memory expectations.",
				References: []string{"openkruise/kruise#1829", refCloneSetController},
				Actions:    []string{ActionRestartControllerLeader, ActionRequeueWorkload}},
			{ID: rcStalledUnknown, Title: "the CloneSet is frozen for a reason the scan could not see", Severity: report.SeverityWarning,
				Description: "The status is frozen past the threshold, the manager is up, no pod creation failed and the " +
					"leader's log (read within its bounds) has no expectation line for this CloneSet. A requeue makes " +
					"the controller reconcile it: it either catches up or logs the expectation it waits for, which the " +
					"next scan names. Restarting the leader clears every in-memory expectation.",
				References: []string{refCloneSetController},
				Actions:    []string{ActionRequeueWorkload, ActionRestartControllerLeader}},
		},
		Needs: []Need{
			{Input: snapshot.InputKruiseWorkloads},
			{Input: snapshot.InputPods},
			{Input: snapshot.InputEvents, Optional: true},
			{Input: snapshot.InputControllers, Optional: true},
			{Input: snapshot.InputControllerLogs, Optional: true},
		},
	}
}

// PodCandidates returns the pods of CloneSets whose status disagrees with their pods in the
// metadata, so phases are known for the few that may be frozen.
func (expectationsUnsatisfied) PodCandidates(s *snapshot.Snapshot) []types.UID {
	return expectationCandidates(s)
}

func expectationCandidates(s *snapshot.Snapshot) []types.UID {
	var out []types.UID
	for _, w := range s.Workloads {
		if w.Kind != kruise.KindCloneSet {
			continue
		}
		active, _ := krOwnedPods(s, w)
		n := int32(len(active))
		suspect := w.Generation > w.Status.ObservedGeneration || w.Status.Replicas != n ||
			(w.Replicas != nil && *w.Replicas != n) ||
			(w.Status.UpdateRevision != "" && w.Status.UpdatedReplicas != krCountRevision(active, w.Status.UpdateRevision))
		if !suspect {
			continue
		}
		for _, p := range active {
			out = append(out, p.UID)
		}
	}
	return out
}

func (c expectationsUnsatisfied) Run(s *snapshot.Snapshot, threshold time.Duration) []report.Finding {
	env := newKruiseEnv(s)
	th := krThreshold(s, threshold, expectationsThreshold, env.expectationTimeout())
	var out []report.Finding
	for _, v := range frozenWorkloads(env, th) {
		out = append(out, expectationsFinding(c.Info(), env, v))
	}
	return out
}

// frozenWorkload is a CloneSet whose status shows it has not been reconciled for the threshold.
type frozenWorkload struct {
	w *kruise.Workload
	// since is the earliest moment from which the controller should have acted.
	since   time.Time
	signals []string
	// scale is true when a scale step is missing (pods to create or delete, or a replica count
	// the status has not caught up with).
	scale bool
	// detail lines that support, but do not make, the verdict.
	support []string
}

// frozenWorkloads computes the verdict for every CloneSet of the snapshot, by UID.
func frozenWorkloads(env *kruiseEnv, th time.Duration) map[types.UID]*frozenWorkload {
	out := map[types.UID]*frozenWorkload{}
	for _, w := range env.s.Workloads {
		if v := frozenVerdict(env, w, th); v != nil {
			out[w.UID] = v
		}
	}
	return out
}

// krCountRevision counts pods whose controller-revision-hash names the revision: kruise writes the
// revision name ("<cloneset>-<hash>"), or the hash alone with CloneSetShortHash, and compares the
// part after the last '-' (EqualToRevisionHash, pkg/controller/cloneset/utils).
func krCountRevision(pods []*metav1.ObjectMeta, revision string) int32 {
	var n int32
	for _, p := range pods {
		if krRevisionMatches(p.Labels["controller-revision-hash"], revision) {
			n++
		}
	}
	return n
}

func krRevisionMatches(label, revision string) bool {
	short := func(h string) string { return h[strings.LastIndexByte(h, '-')+1:] }
	return label != "" && (label == revision || short(label) == short(revision))
}

type krSignal struct {
	at   time.Time
	line string
}

func krLater(ts ...time.Time) time.Time {
	var out time.Time
	for _, t := range ts {
		if t.After(out) {
			out = t
		}
	}
	return out
}

// frozenVerdict decides whether a CloneSet's status is frozen: each difference between status and
// reality is dated by the newest change a healthy controller would have reacted to within
// milliseconds, and counts only once that is older than the threshold.
func frozenVerdict(env *kruiseEnv, w *kruise.Workload, th time.Duration) *frozenWorkload {
	// A CloneSet being deleted is left to the garbage collector (and to stuck-terminating).
	if w.Kind != kruise.KindCloneSet || w.DeletionTimestamp != nil {
		return nil
	}
	s, now := env.s, env.s.Now
	active, terminating := krOwnedPods(s, w)
	events := s.EventsFor(w.Kind, w.Namespace, w.Name, w.UID)

	specAt, specBy := krSpecWrite(w)
	specSource := "managedFields: last spec write by " + specBy
	if specAt.IsZero() {
		specAt, specSource = w.CreationTimestamp.Time, "creation time (no managedFields entry dates the spec change)"
		if n := len(events); n > 0 && snapshot.EventTime(events[n-1]).After(specAt) {
			specAt, specSource = snapshot.EventTime(events[n-1]), "newest event about the CloneSet (no managedFields entry dates the spec change)"
		}
	}
	statusAt, _ := krStatusWrite(w)
	var podsAt time.Time
	for _, p := range active {
		podsAt = krLater(podsAt, p.CreationTimestamp.Time, krMetaWrite(p))
	}
	for _, p := range terminating {
		del := p.DeletionTimestamp.Time
		if p.DeletionGracePeriodSeconds != nil {
			del = del.Add(-time.Duration(*p.DeletionGracePeriodSeconds) * time.Second)
		}
		podsAt = krLater(podsAt, del)
	}
	statusDate := func() string {
		parts := []string{}
		if !statusAt.IsZero() {
			parts = append(parts, "status last written "+Age(now, statusAt)+" ago")
		} else {
			parts = append(parts, "status never written through the status subresource")
		}
		if !podsAt.IsZero() {
			parts = append(parts, "its pods last changed "+Age(now, podsAt)+" ago")
		}
		return strings.Join(parts, ", ")
	}

	var fired []krSignal
	scale := false
	n := int32(len(active))
	if w.Generation > w.Status.ObservedGeneration && now.Sub(specAt) >= th {
		fired = append(fired, krSignal{specAt, Evidencef("status.observedGeneration %d < metadata.generation %d: the spec changed %s ago (dated by %s at %s) and was never observed",
			w.Status.ObservedGeneration, w.Generation, Age(now, specAt), specSource, specAt.UTC().Format(time.RFC3339))})
	}
	if w.Status.Replicas != n {
		if at := krLater(statusAt, podsAt); now.Sub(at) >= th {
			fired = append(fired, krSignal{at, Evidencef("status.replicas %d but %d active pods are controlled by it (%s)", w.Status.Replicas, n, statusDate())})
			scale = true
		}
	}
	if rev := w.Status.UpdateRevision; rev != "" {
		if upd := krCountRevision(active, rev); upd != w.Status.UpdatedReplicas {
			if at := krLater(statusAt, podsAt); now.Sub(at) >= th {
				fired = append(fired, krSignal{at, Evidencef("status.updatedReplicas %d but %d active pods carry updateRevision %s (%s)", w.Status.UpdatedReplicas, upd, rev, statusDate())})
			}
		}
	}
	if w.Replicas != nil {
		want := *w.Replicas
		// Pods waiting in PreparingDelete for a preDelete hook are deletions the controller already
		// decided; they count as gone for the scale comparison.
		n := n
		for _, p := range active {
			if p.Labels[kruise.LabelLifecycleState] == kruise.StatePreparingDelete {
				n--
			}
		}
		// Surplus pods during a rollout (maxSurge) are the controller's own doing.
		rolling := w.Status.UpdateRevision != "" && w.Status.CurrentRevision != "" && w.Status.UpdateRevision != w.Status.CurrentRevision
		if n < want || (n > want && !rolling) {
			var lastScale, limited *corev1.Event
			for _, e := range events {
				switch e.Reason {
				case "SuccessfulCreate", "SuccessfulDelete":
					lastScale = e
				case "ScaleUpLimited":
					limited = e
				}
			}
			// ScaleUpLimited after the change: the controller chose to wait for pods to become ready.
			heldBack := limited != nil && !snapshot.EventTime(limited).Before(specAt)
			at := krLater(specAt, statusAt, podsAt)
			if lastScale != nil {
				at = krLater(at, snapshot.EventTime(lastScale))
			}
			if !heldBack && now.Sub(at) >= th {
				last := "none in the events read"
				if lastScale != nil {
					last = fmt.Sprintf("the newest, %s, is %s old", lastScale.Reason, Age(now, snapshot.EventTime(lastScale)))
				}
				fired = append(fired, krSignal{at, Evidencef("spec.replicas %d but %d active pods are controlled by it, and no SuccessfulCreate/SuccessfulDelete event followed for %s (%s)",
					want, n, Age(now, at), last)})
				scale = true
			}
		}
	}
	if len(fired) == 0 {
		return nil
	}
	v := &frozenWorkload{w: w, since: fired[0].at, scale: scale}
	for _, f := range fired {
		v.signals = append(v.signals, f.line)
		if f.at.Before(v.since) {
			v.since = f.at
		}
	}
	// Lifecycle states the controller would have refreshed.
	for _, p := range active {
		if p.Labels[kruise.LabelLifecycleState] != kruise.StatePreparingNormal {
			continue
		}
		if h := w.Lifecycle.PreNormal; h == nil || len(krHookMisses(h, p)) == 0 {
			since, _ := krLifecycleSince(p)
			v.support = append(v.support, Evidencef("pod %s is still PreparingNormal after %s with nothing left to wait for", p.Name, Age(now, since)))
		}
	}
	return v
}

// expectationsFinding decides the root cause of a frozen CloneSet and builds its finding.
func expectationsFinding(info Info, env *kruiseEnv, v *frozenWorkload) report.Finding {
	w, s := v.w, env.s
	f := Draft{
		Object:   krWorkloadRef(w),
		Since:    v.since,
		Evidence: append(append([]string{}, v.signals...), v.support...),
	}
	key := w.Namespace + "/" + w.Name
	f.Summary = fmt.Sprintf("%s %s has not been reconciled for %s: its status is frozen", w.Kind, key, Age(s.Now, v.since))
	f.Evidence = append(f.Evidence, env.managerEvidence())
	if l := env.leaderEvidence(); l != "" {
		f.Evidence = append(f.Evidence, l)
	}
	requeue := krRequeueFix(w.Kind, w.Namespace, w.Name)
	restart, canRestart := env.restartFix()

	if down, why := env.unavailable(); down {
		f.RootCause = rcControllerUnavailable
		f.Message = fmt.Sprintf("No kruise-manager leader is running, so nothing reconciles %s %s. Bring the manager back; the workload catches up once a leader runs.", w.Kind, key)
		f.Evidence = append(f.Evidence, why...)
		return NewFinding(info, f)
	}

	var failed []*corev1.Event
	for _, e := range s.EventsFor(w.Kind, w.Namespace, w.Name, w.UID) {
		if e.Type == corev1.EventTypeWarning && e.Reason == "FailedCreate" {
			failed = append(failed, e)
		}
	}
	cond, hasCond := w.Condition("FailedScale")
	hasCond = hasCond && cond.Status == string(corev1.ConditionTrue)
	if len(failed) > 0 || hasCond {
		f.RootCause = rcPodCreationFailing
		msg := ""
		if len(failed) > 0 {
			msg = krEventMessage(failed[len(failed)-1].Message)
		} else {
			msg = krTruncate(cond.Message, 300)
		}
		f.Message = fmt.Sprintf("The kruise-manager keeps trying to create pods for %s %s and every create is rejected: %s", w.Kind, key, msg)
		for i := max(0, len(failed)-3); i < len(failed); i++ {
			f.Evidence = append(f.Evidence, krEventLine(s.Now, failed[i]))
		}
		if hasCond {
			f.Evidence = append(f.Evidence, Evidencef("condition FailedScale=True reason %s: %s", cond.Reason, krTruncate(cond.Message, 300)))
		}
		return NewFinding(info, f)
	}

	f.Evidence = append(f.Evidence, Evidencef("kruise-manager --expectation-timeout is %s", env.expectationTimeout()))
	f.Evidence = append(f.Evidence, krTimeoutHandling(env)...)
	leakFixes := []report.Fix{requeue}
	if canRestart {
		leakFixes = []report.Fix{restart, requeue}
	}

	if line, ok := krNewestLeakLine(env, w); ok {
		f.Fixes = leakFixes
		f.Evidence = append(f.Evidence, Evidencef("leader log: %s", krTruncate(line.Line, 400)))
		if line.Kind.Scale() {
			f.RootCause = rcScaleExpectationsLeaked
			f.Evidence = append(f.Evidence, krDirtyPodEvidence(s, w.Namespace, line)...)
			f.Message = fmt.Sprintf("The kruise-manager leader waits for a pod event of %s %s that never came (scale expectations unsatisfied for %s) and skips every reconcile. Restart the leader: expectations live only in its memory.",
				w.Kind, key, line.Overtime.Round(time.Second))
			if line.Kind == kruise.LogScaleOvertimeDropped {
				f.Evidence = append(f.Evidence, "the leader dropped the timed-out expectation (ForceDeleteTimeoutExpectationGate) and requeues the CloneSet after 10s")
			}
		} else {
			f.RootCause = rcUpdateExpectationsLeaked
			f.Evidence = append(f.Evidence, krUpdatePodEvidence(s, w.Namespace, line)...)
			f.Message = fmt.Sprintf("The kruise-manager leader waits to observe an update of pod %s of %s %s that it never sees, and skips every reconcile. Restart the leader: expectations live only in its memory.",
				line.Pod, w.Kind, key)
		}
		return NewFinding(info, f)
	}

	if !env.logsRead {
		f.Fixes = leakFixes
		f.Evidence = append(f.Evidence, Evidencef("inferred from the frozen status: the leader's log could not be read (%s)", env.logsUnread))
		if v.scale {
			f.RootCause = rcScaleExpectationsLeaked
			f.Message = fmt.Sprintf("%s %s is frozen with pods to create or delete and its manager is up: the leader most likely holds a leaked scale expectation (inferred; its log could not be read). Restart the leader to clear it.", w.Kind, key)
		} else {
			f.RootCause = rcUpdateExpectationsLeaked
			f.Message = fmt.Sprintf("%s %s is frozen and its manager is up: the leader most likely holds a leaked update expectation (inferred; its log could not be read). Restart the leader to clear it.", w.Kind, key)
		}
		return NewFinding(info, f)
	}

	f.RootCause = rcStalledUnknown
	f.Evidence = append(f.Evidence, Evidencef("the leader's log has no expectation line for %s %s", w.Kind, key))
	f.Fixes = []report.Fix{requeue}
	if canRestart {
		f.Fixes = append(f.Fixes, restart)
	}
	f.Message = fmt.Sprintf("%s %s is frozen and nothing the scan can read explains it. Requeue it: the controller either catches up or logs the expectation it waits for, which the next scan names.", w.Kind, key)
	return NewFinding(info, f)
}

// krNewestLeakLine returns the leader's newest overtime line that blocks this CloneSet.
func krNewestLeakLine(env *kruiseEnv, w *kruise.Workload) (kruise.ExpectationLog, bool) {
	var best kruise.ExpectationLog
	found := false
	for _, l := range env.logs {
		if l.WorkloadKind != w.Kind || l.Namespace != w.Namespace || l.Name != w.Name {
			continue
		}
		// The updateRevision timeout is dropped by the controller, which then carries on.
		if !l.Kind.Overtime() || l.Kind == kruise.LogRevisionUpdateOvertime {
			continue
		}
		if !found || !l.Time.Before(best.Time) {
			best, found = l, true
		}
	}
	return best, found
}

// krDirtyPodEvidence says, for each pod a scale expectation waits for, whether it still exists.
func krDirtyPodEvidence(s *snapshot.Snapshot, namespace string, l kruise.ExpectationLog) []string {
	exists := krPodNames(s, namespace)
	var out []string
	actions := make([]string, 0, len(l.DirtyPods))
	for a := range l.DirtyPods {
		actions = append(actions, a)
	}
	sort.Strings(actions)
	for _, a := range actions {
		for _, name := range l.DirtyPods[a] {
			if exists[name] {
				out = append(out, Evidencef("dirty pod %s (expected %s) still exists", name, a))
			} else {
				out = append(out, Evidencef("dirty pod %s (expected %s) no longer exists: the event the leader waits for was lost", name, a))
			}
		}
	}
	return out
}

func krUpdatePodEvidence(s *snapshot.Snapshot, namespace string, l kruise.ExpectationLog) []string {
	if l.Pod == "" {
		return nil
	}
	if krPodNames(s, namespace)[l.Pod] {
		return []string{Evidencef("pod %s the leader waits for still exists", l.Pod)}
	}
	return []string{Evidencef("pod %s the leader waits for no longer exists", l.Pod)}
}

func krPodNames(s *snapshot.Snapshot, namespace string) map[string]bool {
	out := map[string]bool{}
	for _, p := range s.Pods {
		if p.Namespace == namespace {
			out[p.Name] = true
		}
	}
	for _, p := range s.FullPods {
		if p.Namespace == namespace {
			out[p.Name] = true
		}
	}
	return out
}

// krTimeoutHandling says whether the running version drops timed-out expectations
// (openkruise/kruise#1829, v1.8.0, behind ForceDeleteTimeoutExpectationGate).
func krTimeoutHandling(env *kruiseEnv) []string {
	if !env.versionKnown() {
		return []string{"whether the manager has the expectation timeout handling of openkruise/kruise#1829 (v1.8.0) is unknown"}
	}
	v := env.mgr.Version
	if b, ok := knowledge.Affected(knowledge.BugExpectationsLeak, v, env.mgr.Gates); ok {
		return []string{Evidencef("kruise-manager %s predates the expectation timeout handling of openkruise/kruise#1829 (%s): %s",
			v, b.Affected.Fixed, b.Summary)}
	}
	b, _ := knowledge.LookupBug(knowledge.BehaviourExpectationTimeout)
	line := Evidencef("kruise-manager %s has the expectation timeout handling of openkruise/kruise#1829; %s", v, env.mgr.Gates.Describe(b.Gate))
	if b.Affects(v, env.mgr.Gates) {
		return []string{line + ": " + b.Summary}
	}
	return []string{line + ": a timed-out scale expectation still blocks the CloneSet until the leader restarts"}
}
