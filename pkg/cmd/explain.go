package cmd

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/fix"
)

func newExplainCommand(streams genericiooptions.IOStreams, reg *checks.Registry, cat *fix.Catalog) *cobra.Command {
	return &cobra.Command{
		Use:   "explain ID",
		Short: "Explain a check, root cause or fix action in prose",
		Example: `  kubectl workloaddoctor explain stuck-terminating
  kubectl workloaddoctor explain prenormal-event-dropped
  kubectl workloaddoctor explain remove-finalizer`,
		Args: cobra.ExactArgs(1),
		ValidArgsFunction: func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			return explainIDs(reg, cat), cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if !explain(streams.Out, reg, cat, args[0]) {
				return &ExitError{Code: ExitFailure, Err: fmt.Errorf("unknown ID %q: run `kubectl workloaddoctor checks` for the checks, root causes and actions", args[0])}
			}
			return nil
		},
	}
}

func explainIDs(reg *checks.Registry, cat *fix.Catalog) []string {
	seen := map[string]bool{}
	for _, c := range reg.All() {
		seen[c.Info().ID] = true
		for _, rc := range c.Info().RootCauses {
			seen[rc.ID] = true
		}
	}
	for _, a := range cat.Docs() {
		seen[a.ID] = true
	}
	ids := make([]string, 0, len(seen))
	for id := range seen {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// explain prints every page whose ID matches: a root cause ID can belong to several checks.
func explain(w io.Writer, reg *checks.Registry, cat *fix.Catalog, id string) bool {
	found := false
	sep := func() {
		if found {
			fmt.Fprintln(w, strings.Repeat("-", 72))
		}
		found = true
	}
	for _, c := range reg.All() {
		info := c.Info()
		if info.ID == id {
			sep()
			fmt.Fprintf(w, "CHECK %s: %s\n\n%s\n\nThreshold: %s (override with --min-age)\nRoot causes:\n", info.ID, info.Title, wrap(info.Description), info.Threshold)
			for _, rc := range info.RootCauses {
				fmt.Fprintf(w, "  %-32s %-8s %s\n", rc.ID, rc.Severity, rc.Title)
			}
		}
		for _, rc := range info.RootCauses {
			if rc.ID != id {
				continue
			}
			sep()
			fmt.Fprintf(w, "ROOT CAUSE %s (check %s, severity %s): %s\n\n%s\n", rc.ID, info.ID, rc.Severity, rc.Title, wrap(rc.Description))
			if len(rc.Actions) > 0 {
				fmt.Fprintf(w, "\nFixes: %s\n", strings.Join(rc.Actions, ", "))
			} else {
				fmt.Fprintf(w, "\nFixes: none automatic; the evidence says who has to act.\n")
			}
			if len(rc.References) > 0 {
				fmt.Fprintf(w, "References: %s\n", strings.Join(rc.References, ", "))
			}
		}
	}
	if a, ok := cat.Lookup(id); ok {
		a := a.Doc()
		sep()
		fmt.Fprintf(w, "ACTION %s: %s\n\n%s\n\nPreconditions: %s\n", a.ID, a.Title, wrap(a.Description), a.Preconditions)
	}
	return found
}

// wrap folds prose at 80 columns for the terminal.
func wrap(s string) string {
	var out strings.Builder
	for i, para := range strings.Split(s, "\n\n") {
		if i > 0 {
			out.WriteString("\n\n")
		}
		col := 0
		for _, word := range strings.Fields(para) {
			if col > 0 && col+1+len(word) > 80 {
				out.WriteByte('\n')
				col = 0
			} else if col > 0 {
				out.WriteByte(' ')
				col++
			}
			out.WriteString(word)
			col += len(word)
		}
	}
	return out.String()
}
