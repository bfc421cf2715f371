package kruiselifecycle

import (
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks/internal/kruiseenv"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/knowledge"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// expectationsFinding decides the root cause of a frozen CloneSet and builds its
// expectations-unsatisfied finding.
func (p *pass) expectationsFinding(v *frozenWorkload) report.Finding {
	d, _ := checks.Diagnose(expectationsRules(), p, v)
	return checks.NewFinding(p.expectations, d)
}

// expectationsRules are the root causes of a frozen CloneSet, in the order of docs/contract.md,
// "Checks and root causes": the first that holds names it.
func expectationsRules() []checks.Rule[*pass, *frozenWorkload] {
	return []checks.Rule[*pass, *frozenWorkload]{
		frozenControllerDown,
		frozenWebhookBlocks,
		frozenCreationFailing,
		frozenScaleLeakLogged,
		frozenUpdateLeakLogged,
		frozenLeakInferred,
		frozenUnknown,
	}
}

// frozenDraft is the draft every finding on a frozen CloneSet starts from, with the root cause
// and the rule's evidence added.
func (p *pass) frozenDraft(v *frozenWorkload, rootCause string, evidence ...string) checks.Draft {
	w := v.w
	d := checks.Draft{
		RootCause: rootCause,
		Object:    kruiseenv.WorkloadRef(w),
		Since:     v.since,
		Summary:   fmt.Sprintf("%s %s/%s has not been reconciled for %s: its status is frozen", w.Kind, w.Namespace, w.Name, checks.Age(p.Snapshot.Now, v.since)),
		Evidence:  append(append([]string{}, v.signals...), v.support...),
	}
	d.Evidence = append(d.Evidence, p.ManagerEvidence())
	if l := p.LeaderEvidence(); l != "" {
		d.Evidence = append(d.Evidence, l)
	}
	d.Evidence = append(d.Evidence, evidence...)
	return d
}

// waitingDraft is the draft of a CloneSet its controller is up for yet skips: the manager's
// expectation timeout and how the running version handles it are evidence, and the fixes
// restart the leader (which drops every expectation) before requeueing.
func (p *pass) waitingDraft(v *frozenWorkload, rootCause string, evidence ...string) checks.Draft {
	lines := append([]string{checks.Evidencef("kruise-manager --expectation-timeout is %s", p.ExpectationTimeout())}, timeoutHandling(p.Env)...)
	d := p.frozenDraft(v, rootCause, append(lines, evidence...)...)
	d.Fixes = []report.Fix{requeueFix(v.w.Kind, v.w.Namespace, v.w.Name)}
	if restart, ok := p.RestartFix(); ok {
		d.Fixes = []report.Fix{restart, d.Fixes[0]}
	}
	return d
}

// frozenControllerDown: nothing reconciles at all.
func frozenControllerDown(p *pass, v *frozenWorkload) (checks.Draft, bool) {
	down, why := p.Unavailable()
	if !down {
		return checks.Draft{}, false
	}
	d := p.frozenDraft(v, RootCauseControllerUnavailable, why...)
	d.Evidence = append(d.Evidence, webhookAlsoDown(p, p.podCreate(v.w), "the create of its pods")...)
	d.Message = fmt.Sprintf("No kruise-manager leader is running, so nothing reconciles %s %s/%s. Bring the manager back; the workload catches up once a leader runs.",
		v.w.Kind, v.w.Namespace, v.w.Name)
	return d, true
}

// frozenCreationFailing: the apiserver rejects every pod the controller creates.
func frozenCreationFailing(p *pass, v *frozenWorkload) (checks.Draft, bool) {
	w, s := v.w, p.Snapshot
	failed := kruiseenv.FailedCreates(s, w)
	cond, hasCond := w.Condition("FailedScale")
	hasCond = hasCond && cond.Status == string(corev1.ConditionTrue)
	if len(failed) == 0 && !hasCond {
		return checks.Draft{}, false
	}
	d := p.frozenDraft(v, RootCausePodCreationFailing)
	msg := checks.Truncate(cond.Message, 300)
	if len(failed) > 0 {
		msg = kruiseenv.EventMessage(failed[len(failed)-1].Message)
	}
	d.Message = fmt.Sprintf("The kruise-manager keeps trying to create pods for %s %s/%s and every create is rejected: %s", w.Kind, w.Namespace, w.Name, msg)
	for i := max(0, len(failed)-3); i < len(failed); i++ {
		d.Evidence = append(d.Evidence, kruiseenv.EventLine(s.Now, failed[i]))
	}
	if hasCond {
		d.Evidence = append(d.Evidence, checks.Evidencef("condition FailedScale=True reason %s: %s", cond.Reason, checks.Truncate(cond.Message, 300)))
	}
	return d, true
}

// frozenScaleLeakLogged: the leader logs a scale expectation it has waited on past the timeout.
func frozenScaleLeakLogged(p *pass, v *frozenWorkload) (checks.Draft, bool) {
	line, ok := newestLeakLine(p.Env, v.w)
	if !ok || !line.Kind.Scale() {
		return checks.Draft{}, false
	}
	w := v.w
	d := p.waitingDraft(v, RootCauseScaleExpectationsLeaked, checks.Evidencef("leader log: %s", checks.Truncate(line.Line, 400)))
	d.Evidence = append(d.Evidence, dirtyPodEvidence(p.Snapshot, w.Namespace, line)...)
	d.Message = fmt.Sprintf("The kruise-manager leader waits for a pod event of %s %s/%s that never came (scale expectations unsatisfied for %s) and skips every reconcile. Restart the leader: expectations live only in its memory.",
		w.Kind, w.Namespace, w.Name, line.Overtime.Round(time.Second))
	if line.Kind == kruise.LogScaleOvertimeDropped {
		d.Evidence = append(d.Evidence, "the leader dropped the timed-out expectation (ForceDeleteTimeoutExpectationGate) and requeues the CloneSet after 10s")
	}
	return d, true
}

// frozenUpdateLeakLogged: the leader logs an update expectation it has waited on past the timeout.
func frozenUpdateLeakLogged(p *pass, v *frozenWorkload) (checks.Draft, bool) {
	line, ok := newestLeakLine(p.Env, v.w)
	if !ok || line.Kind.Scale() {
		return checks.Draft{}, false
	}
	w := v.w
	d := p.waitingDraft(v, RootCauseUpdateExpectationsLeaked, checks.Evidencef("leader log: %s", checks.Truncate(line.Line, 400)))
	d.Evidence = append(d.Evidence, updatePodEvidence(p.Snapshot, w.Namespace, line)...)
	d.Message = fmt.Sprintf("The kruise-manager leader waits to observe an update of pod %s of %s %s/%s that it never sees, and skips every reconcile. Restart the leader: expectations live only in its memory.",
		line.Pod, w.Kind, w.Namespace, w.Name)
	return d, true
}

// frozenLeakInferred: with no log to read, a leaked expectation is the likely cause, of scale when
// pods are to be created or deleted, else of update.
func frozenLeakInferred(p *pass, v *frozenWorkload) (checks.Draft, bool) {
	if p.LogsRead {
		return checks.Draft{}, false
	}
	w := v.w
	rootCause, what := RootCauseUpdateExpectationsLeaked, "is frozen and its manager is up: the leader most likely holds a leaked update expectation"
	if v.scale {
		rootCause, what = RootCauseScaleExpectationsLeaked, "is frozen with pods to create or delete and its manager is up: the leader most likely holds a leaked scale expectation"
	}
	d := p.waitingDraft(v, rootCause, checks.Evidencef("inferred from the frozen status: the leader's log could not be read (%s)", p.LogsUnread))
	d.Message = fmt.Sprintf("%s %s/%s %s (inferred; its log could not be read). Restart the leader to clear it.", w.Kind, w.Namespace, w.Name, what)
	return d, true
}

// frozenUnknown: nothing the scan can read explains it; it always holds.
func frozenUnknown(p *pass, v *frozenWorkload) (checks.Draft, bool) {
	w := v.w
	d := p.waitingDraft(v, RootCauseStalledUnknown, checks.Evidencef("the leader's log has no expectation line for %s %s/%s", w.Kind, w.Namespace, w.Name))
	d.Fixes = []report.Fix{requeueFix(w.Kind, w.Namespace, w.Name)}
	if restart, ok := p.RestartFix(); ok {
		d.Fixes = append(d.Fixes, restart)
	}
	d.Message = fmt.Sprintf("%s %s/%s is frozen and nothing the scan can read explains it. Requeue it: the controller either catches up or logs the expectation it waits for, which the next scan names.",
		w.Kind, w.Namespace, w.Name)
	return d, true
}

// newestLeakLine returns the leader's newest overtime line that blocks this CloneSet.
func newestLeakLine(env *kruiseenv.Env, w *kruise.Workload) (kruise.ExpectationLog, bool) {
	var best kruise.ExpectationLog
	found := false
	for _, l := range env.Logs {
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

// dirtyPodEvidence says, for each pod a scale expectation waits for, whether it still exists.
func dirtyPodEvidence(s *snapshot.Snapshot, namespace string, l kruise.ExpectationLog) []string {
	exists := podNames(s, namespace)
	var out []string
	actions := make([]string, 0, len(l.DirtyPods))
	for a := range l.DirtyPods {
		actions = append(actions, a)
	}
	sort.Strings(actions)
	for _, a := range actions {
		for _, name := range l.DirtyPods[a] {
			if exists[name] {
				out = append(out, checks.Evidencef("dirty pod %s (expected %s) still exists", name, a))
			} else {
				out = append(out, checks.Evidencef("dirty pod %s (expected %s) no longer exists: the event the leader waits for was lost", name, a))
			}
		}
	}
	return out
}

func updatePodEvidence(s *snapshot.Snapshot, namespace string, l kruise.ExpectationLog) []string {
	if l.Pod == "" {
		return nil
	}
	if podNames(s, namespace)[l.Pod] {
		return []string{checks.Evidencef("pod %s the leader waits for still exists", l.Pod)}
	}
	return []string{checks.Evidencef("pod %s the leader waits for no longer exists", l.Pod)}
}

func podNames(s *snapshot.Snapshot, namespace string) map[string]bool {
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

// timeoutHandling says whether the running version drops timed-out expectations
// (openkruise/kruise#1829, v1.8.0, behind ForceDeleteTimeoutExpectationGate).
func timeoutHandling(env *kruiseenv.Env) []string {
	if !env.VersionKnown() {
		return []string{"whether the manager has the expectation timeout handling of openkruise/kruise#1829 (v1.8.0) is unknown"}
	}
	v := env.Manager.Version
	if b, ok := knowledge.Affected(knowledge.BugExpectationsLeak, v, env.Manager.Gates); ok {
		return []string{checks.Evidencef("kruise-manager %s predates the expectation timeout handling of openkruise/kruise#1829 (%s): %s",
			v, b.Affected.Fixed, b.Summary)}
	}
	b, _ := knowledge.LookupBug(knowledge.BehaviourExpectationTimeout)
	line := checks.Evidencef("kruise-manager %s has the expectation timeout handling of openkruise/kruise#1829; %s", v, env.Manager.Gates.Describe(b.Gate))
	if b.Affects(v, env.Manager.Gates) {
		return []string{line + ": " + b.Summary}
	}
	return []string{line + ": a timed-out scale expectation still blocks the CloneSet until the leader restarts"}
}
