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
	_, err := fmt.Fprintf(w, "%d action%s: %d applied, %d already resolved, %d refused, %d failed, %d dry run.\n",
		s.Total, plural(s.Total), s.Applied, s.AlreadyResolved, s.Refused, s.Failed, s.DryRun)
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
