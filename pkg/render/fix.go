package render

import (
	"fmt"
	"io"
	"strings"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/fix"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// FixPlan writes the plan: each action, the object, what changes, its risk and the findings
// it resolves; then the findings that could not be planned.
func FixPlan(w io.Writer, steps []*fix.Step, unplanned []fix.Result) {
	if len(steps) == 0 {
		fmt.Fprintln(w, "Nothing to fix: no selected finding carries an applicable fix.")
	} else {
		fmt.Fprintf(w, "Plan: %d action%s\n", len(steps), plural(len(steps)))
	}
	for i, s := range steps {
		fmt.Fprintf(w, "  %d. %s %s (risk: %s)\n", i+1, s.Action, kubectlName(s.Target), s.Risk)
		fmt.Fprintf(w, "     change: %s\n", s.Change)
		if s.Hazard != "" {
			fmt.Fprintf(w, "     high risk, taken because --action names it: %s\n", s.Hazard)
		}
		for _, f := range s.Findings {
			fmt.Fprintf(w, "     resolves: %s (%s/%s) %s\n", f.ID, f.Check, f.RootCause.ID, f.Summary)
		}
	}
	if len(unplanned) > 0 {
		fmt.Fprintf(w, "Not planned (%d):\n", len(unplanned))
		for _, r := range unplanned {
			fmt.Fprintf(w, "  %s: %s\n", strings.Join(r.Findings, ", "), r.Reason)
		}
	}
}

// FixWaves writes how the steps that take serving pods away will run: per workload, how many
// pods, how many at a time and where that budget comes from; or why they will not run.
func FixWaves(w io.Writer, groups []*fix.Group) {
	if len(groups) == 0 {
		return
	}
	fmt.Fprintln(w, "Disruption budget (pods of one workload are evicted in waves; the next wave waits until the replacements are Ready):")
	for _, g := range groups {
		n := len(g.Steps)
		name := kubectlName(g.Budget.Workload)
		switch {
		case g.Failure != "":
			fmt.Fprintf(w, "  %s: %d pod%s: the budget could not be read, so nothing is evicted blind: %s\n", name, n, plural(n), g.Failure)
			continue
		case g.Refusal != "":
			fmt.Fprintf(w, "  %s: %d pod%s refused: %s\n", name, n, plural(n), g.Refusal)
			continue
		}
		size := int(g.WaveSize())
		waves := (n + size - 1) / size
		fmt.Fprintf(w, "  %s: %d pod%s, %d at a time (%d wave%s); maxUnavailable %d from %s; keeps %d of %d replicas Ready\n",
			name, n, plural(n), size, waves, plural(waves), g.Budget.MaxUnavailable, g.Budget.Source, g.MinReady(), g.Budget.Replicas)
		if g.ActionChosen && (g.Budget.Replicas <= 1 || g.Budget.MaxUnavailable < 1) {
			fmt.Fprintf(w, "     its budget allows no pod away; evicting one at a time because the action was named (--action %s)\n", g.Steps[0].Action)
		}
		for _, p := range g.PDBs {
			fmt.Fprintf(w, "     PodDisruptionBudget %s also applies, through the Eviction API (%d disruption%s allowed now)\n", p.Name, p.DisruptionsAllowed, plural(int(p.DisruptionsAllowed)))
		}
	}
}

// FixWaveStarted writes the progress line of a wave about to be applied.
func FixWaveStarted(w io.Writer, ev fix.WaveStarted) {
	fmt.Fprintf(w, "%s: wave %d: %d pod%s (%d Ready, keeps %d)\n", ev.Workload, ev.Wave, ev.Pods, plural(ev.Pods), ev.Ready, ev.MinReady)
}

// FixWaveWaiting writes the progress line of a workload whose next wave waits for Ready pods.
func FixWaveWaiting(w io.Writer, ev fix.WaveWaiting) {
	fmt.Fprintf(w, "%s: waiting for Ready pods before the next wave: %d Ready, keeps %d; %d pod%s left; gives up in %s\n",
		ev.Workload, ev.Ready, ev.MinReady, ev.Pending, plural(ev.Pending), ev.Left)
}

// FixStepStarted writes the progress line of step i (1-based) of n, about to be re-checked.
func FixStepStarted(w io.Writer, i, n int, s *fix.Step) {
	fmt.Fprintf(w, "[%d/%d] %s %s: re-checking\n", i, n, s.Action, s.Target)
}

// FixStepFinished writes the progress line of step i of n with its result.
func FixStepFinished(w io.Writer, i, n int, s *fix.Step, r fix.Result) {
	fmt.Fprintf(w, "[%d/%d] %s %s: %s: %s\n", i, n, s.Action, s.Target, r.Status, r.Reason)
}

// FixResults writes the results as a table, then a one-line summary.
func FixResults(w io.Writer, rs []fix.Result) error {
	if len(rs) > 0 {
		t := NewTable(w, "ACTION", "OBJECT", "RESULT", "DETAIL")
		for _, r := range rs {
			if err := t.Append(resultRow(r)); err != nil {
				return fmt.Errorf("render table: %w", err)
			}
		}
		if err := t.Render(); err != nil {
			return fmt.Errorf("render table: %w", err)
		}
	}
	s := fix.Summarize(rs)
	_, err := fmt.Fprintf(w, "%d action%s: %d applied, %d already resolved, %d refused, %d failed, %d dry run, %d deferred.\n",
		s.Total, plural(s.Total), s.Applied, s.AlreadyResolved, s.Refused, s.Failed, s.DryRun, s.Deferred)
	return err
}

func resultRow(r fix.Result) []string {
	detail := r.Reason
	if r.Verification != "" {
		detail += "\nverified: " + r.Verification
		if !r.Verified {
			detail = r.Reason + "\nnot verified: " + r.Verification
		}
	}
	action := r.Action
	if action == "" {
		action = "-"
	}
	obj := "-"
	if r.Object.Name != "" {
		obj = kubectlName(r.Object)
	}
	return []string{action, obj, string(r.Status), detail}
}

// kubectlName names an object the way kubectl does, with its kind's group when it has one.
func kubectlName(ref report.ObjectRef) string {
	kind := strings.ToLower(ref.Kind)
	if i := strings.Index(ref.APIVersion, "/"); i > 0 {
		kind += "." + ref.APIVersion[:i]
	}
	s := kind + "/" + ref.Name
	if ref.Namespace != "" {
		s += " -n " + ref.Namespace
	}
	return s
}

// FixPlanChanged writes what the budgets read just before the run changed since the plan was
// shown: the run goes by the fresh read, so the user sees what it acts on. Nothing when nothing
// changed.
func FixPlanChanged(w io.Writer, changes []fix.GroupChange) {
	if len(changes) == 0 {
		return
	}
	fmt.Fprintln(w, "The budgets changed since the plan was shown; the run goes by the ones read now:")
	for _, c := range changes {
		switch {
		case c.After == nil:
			fmt.Fprintf(w, "  %s: no longer has pods to evict\n", kubectlName(c.Before.Budget.Workload))
		case c.Before == nil:
			fmt.Fprintf(w, "  %s: now %s\n", kubectlName(c.After.Budget.Workload), budgetLine(c.After))
		default:
			fmt.Fprintf(w, "  %s: was %s; now %s\n", kubectlName(c.After.Budget.Workload), budgetLine(c.Before), budgetLine(c.After))
		}
	}
}

// budgetLine says in a few words how a group may run.
func budgetLine(g *fix.Group) string {
	switch {
	case g.Failure != "":
		return "unreadable (" + g.Failure + ")"
	case g.Refusal != "":
		return "refused (" + g.Refusal + ")"
	}
	line := fmt.Sprintf("%d at a time, keeps %d of %d replicas Ready", g.WaveSize(), g.MinReady(), g.Budget.Replicas)
	for _, p := range g.PDBs {
		line += ", PodDisruptionBudget " + p.Name
	}
	return line
}
