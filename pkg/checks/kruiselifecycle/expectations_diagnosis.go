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

// expectationsFinding decides the root cause of a frozen CloneSet and builds its finding.
func expectationsFinding(info checks.Info, env *kruiseenv.Env, v *frozenWorkload) report.Finding {
	w, s := v.w, env.Snapshot
	f := checks.Draft{
		Object:   kruiseenv.WorkloadRef(w),
		Since:    v.since,
		Evidence: append(append([]string{}, v.signals...), v.support...),
	}
	key := w.Namespace + "/" + w.Name
	f.Summary = fmt.Sprintf("%s %s has not been reconciled for %s: its status is frozen", w.Kind, key, checks.Age(s.Now, v.since))
	f.Evidence = append(f.Evidence, env.ManagerEvidence())
	if l := env.LeaderEvidence(); l != "" {
		f.Evidence = append(f.Evidence, l)
	}
	requeue := requeueFix(w.Kind, w.Namespace, w.Name)
	restart, canRestart := env.RestartFix()

	if down, why := env.Unavailable(); down {
		f.RootCause = RootCauseControllerUnavailable
		f.Message = fmt.Sprintf("No kruise-manager leader is running, so nothing reconciles %s %s. Bring the manager back; the workload catches up once a leader runs.", w.Kind, key)
		f.Evidence = append(f.Evidence, why...)
		return checks.NewFinding(info, f)
	}

	failed := kruiseenv.FailedCreates(s, w)
	cond, hasCond := w.Condition("FailedScale")
	hasCond = hasCond && cond.Status == string(corev1.ConditionTrue)
	if len(failed) > 0 || hasCond {
		f.RootCause = RootCausePodCreationFailing
		msg := ""
		if len(failed) > 0 {
			msg = kruiseenv.EventMessage(failed[len(failed)-1].Message)
		} else {
			msg = checks.Truncate(cond.Message, 300)
		}
		f.Message = fmt.Sprintf("The kruise-manager keeps trying to create pods for %s %s and every create is rejected: %s", w.Kind, key, msg)
		for i := max(0, len(failed)-3); i < len(failed); i++ {
			f.Evidence = append(f.Evidence, kruiseenv.EventLine(s.Now, failed[i]))
		}
		if hasCond {
			f.Evidence = append(f.Evidence, checks.Evidencef("condition FailedScale=True reason %s: %s", cond.Reason, checks.Truncate(cond.Message, 300)))
		}
		return checks.NewFinding(info, f)
	}

	f.Evidence = append(f.Evidence, checks.Evidencef("kruise-manager --expectation-timeout is %s", env.ExpectationTimeout()))
	f.Evidence = append(f.Evidence, timeoutHandling(env)...)
	leakFixes := []report.Fix{requeue}
	if canRestart {
		leakFixes = []report.Fix{restart, requeue}
	}

	if line, ok := newestLeakLine(env, w); ok {
		f.Fixes = leakFixes
		f.Evidence = append(f.Evidence, checks.Evidencef("leader log: %s", checks.Truncate(line.Line, 400)))
		if line.Kind.Scale() {
			f.RootCause = RootCauseScaleExpectationsLeaked
			f.Evidence = append(f.Evidence, dirtyPodEvidence(s, w.Namespace, line)...)
			f.Message = fmt.Sprintf("The kruise-manager leader waits for a pod event of %s %s that never came (scale expectations unsatisfied for %s) and skips every reconcile. Restart the leader: expectations live only in its memory.",
				w.Kind, key, line.Overtime.Round(time.Second))
			if line.Kind == kruise.LogScaleOvertimeDropped {
				f.Evidence = append(f.Evidence, "the leader dropped the timed-out expectation (ForceDeleteTimeoutExpectationGate) and requeues the CloneSet after 10s")
			}
		} else {
			f.RootCause = RootCauseUpdateExpectationsLeaked
			f.Evidence = append(f.Evidence, updatePodEvidence(s, w.Namespace, line)...)
			f.Message = fmt.Sprintf("The kruise-manager leader waits to observe an update of pod %s of %s %s that it never sees, and skips every reconcile. Restart the leader: expectations live only in its memory.",
				line.Pod, w.Kind, key)
		}
		return checks.NewFinding(info, f)
	}

	if !env.LogsRead {
		f.Fixes = leakFixes
		f.Evidence = append(f.Evidence, checks.Evidencef("inferred from the frozen status: the leader's log could not be read (%s)", env.LogsUnread))
		if v.scale {
			f.RootCause = RootCauseScaleExpectationsLeaked
			f.Message = fmt.Sprintf("%s %s is frozen with pods to create or delete and its manager is up: the leader most likely holds a leaked scale expectation (inferred; its log could not be read). Restart the leader to clear it.", w.Kind, key)
		} else {
			f.RootCause = RootCauseUpdateExpectationsLeaked
			f.Message = fmt.Sprintf("%s %s is frozen and its manager is up: the leader most likely holds a leaked update expectation (inferred; its log could not be read). Restart the leader to clear it.", w.Kind, key)
		}
		return checks.NewFinding(info, f)
	}

	f.RootCause = RootCauseStalledUnknown
	f.Evidence = append(f.Evidence, checks.Evidencef("the leader's log has no expectation line for %s %s", w.Kind, key))
	f.Fixes = []report.Fix{requeue}
	if canRestart {
		f.Fixes = append(f.Fixes, restart)
	}
	f.Message = fmt.Sprintf("%s %s is frozen and nothing the scan can read explains it. Requeue it: the controller either catches up or logs the expectation it waits for, which the next scan names.", w.Kind, key)
	return checks.NewFinding(info, f)
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
