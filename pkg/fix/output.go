package fix

import (
	"fmt"
	"io"
	"os"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/render"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// ReadReport reads a saved `scan -o json` (or -o yaml) report; "-" reads stdin.
func ReadReport(path string, stdin io.Reader) (*report.Report, error) {
	var data []byte
	var err error
	if path == "-" {
		data, err = io.ReadAll(stdin)
	} else {
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, fmt.Errorf("read report: %w", err)
	}
	return ParseReport(data, path)
}

// ParseReport decodes and validates a report document.
func ParseReport(data []byte, name string) (*report.Report, error) {
	var r report.Report
	if err := yaml.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("report %s is not a workloaddoctor report: %w", name, err)
	}
	if r.APIVersion != report.APIVersion || r.Kind != report.Kind {
		return nil, fmt.Errorf("report %s has apiVersion %q and kind %q, want %s %s (the output of `scan -o json`)",
			name, r.APIVersion, r.Kind, report.APIVersion, report.Kind)
	}
	for i, f := range r.Findings {
		if f.ID == "" || f.Check == "" || f.Object.Kind == "" || f.Object.Name == "" {
			return nil, fmt.Errorf("report %s: finding %d lacks its id, check or object", name, i)
		}
	}
	r.Normalize()
	return &r, nil
}

// PrintPlan writes the plan: each action, the object, what changes, its risk and the findings
// it resolves; then the findings that could not be planned.
func PrintPlan(w io.Writer, steps []*Step, unplanned []Result) {
	if len(steps) == 0 {
		fmt.Fprintln(w, "Nothing to fix: no selected finding carries an applicable fix.")
	} else {
		fmt.Fprintf(w, "Plan: %d action%s\n", len(steps), plural(len(steps)))
	}
	for i, s := range steps {
		fmt.Fprintf(w, "  %d. %s %s (risk: %s)\n", i+1, s.Action, describe(s.Target), s.Risk)
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

// describe names an object the way kubectl does, with its kind's group when it has one.
func describe(ref report.ObjectRef) string {
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

// PrintResults writes the results as a table, then a one-line summary.
func PrintResults(w io.Writer, rs []Result) error {
	if len(rs) > 0 {
		t := render.NewTable(w, "ACTION", "OBJECT", "RESULT", "DETAIL")
		for _, r := range rs {
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
				obj = describe(r.Object)
			}
			if err := t.Append([]string{action, obj, string(r.Status), detail}); err != nil {
				return fmt.Errorf("render table: %w", err)
			}
		}
		if err := t.Render(); err != nil {
			return fmt.Errorf("render table: %w", err)
		}
	}
	s := Summarize(rs)
	_, err := fmt.Fprintf(w, "%d action%s: %d applied, %d already resolved, %d refused, %d failed, %d dry run.\n",
		s.Total, plural(s.Total), s.Applied, s.AlreadyResolved, s.Refused, s.Failed, s.DryRun)
	return err
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
