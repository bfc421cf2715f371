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
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/render"
)

// CheckDoc is a check as `checks -o json` prints it.
type CheckDoc struct {
	ID          string         `json:"id"`
	Title       string         `json:"title"`
	Description string         `json:"description"`
	Threshold   string         `json:"threshold"`
	Inputs      []string       `json:"inputs"`
	RootCauses  []RootCauseDoc `json:"rootCauses"`
}

// RootCauseDoc is a root cause as `checks -o json` prints it.
type RootCauseDoc struct {
	ID          string   `json:"id"`
	Title       string   `json:"title"`
	Severity    string   `json:"severity"`
	Description string   `json:"description"`
	References  []string `json:"references"`
	Actions     []string `json:"actions"`
}

// ActionDoc is a fix action as `checks -o json` prints it.
type ActionDoc struct {
	ID            string `json:"id"`
	Title         string `json:"title"`
	Description   string `json:"description"`
	Preconditions string `json:"preconditions"`
}

// CatalogDoc is the document `checks -o json` prints.
type CatalogDoc struct {
	Checks  []CheckDoc  `json:"checks"`
	Actions []ActionDoc `json:"actions"`
}

func catalog(reg *checks.Registry, cat *fix.Catalog) CatalogDoc {
	doc := CatalogDoc{Checks: []CheckDoc{}, Actions: []ActionDoc{}}
	for _, c := range reg.All() {
		info := c.Info()
		cd := CheckDoc{ID: info.ID, Title: info.Title, Description: info.Description,
			Threshold: info.Threshold.String(), Inputs: []string{}, RootCauses: []RootCauseDoc{}}
		for _, n := range info.Needs {
			in := string(n.Input)
			if n.Optional {
				in += " (optional)"
			}
			cd.Inputs = append(cd.Inputs, in)
		}
		for _, rc := range info.RootCauses {
			cd.RootCauses = append(cd.RootCauses, RootCauseDoc{ID: rc.ID, Title: rc.Title, Severity: string(rc.Severity),
				Description: rc.Description, References: nonNil(rc.References), Actions: nonNil(rc.Actions)})
		}
		doc.Checks = append(doc.Checks, cd)
	}
	for _, a := range cat.Docs() {
		doc.Actions = append(doc.Actions, ActionDoc{ID: a.ID, Title: a.Title, Description: a.Description, Preconditions: a.Preconditions})
	}
	return doc
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func newChecksCommand(streams genericiooptions.IOStreams, reg *checks.Registry, cat *fix.Catalog) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "checks",
		Short: "List every check with its root causes and fix actions",
		Example: `  kubectl workloaddoctor checks
  kubectl workloaddoctor checks -o json | jq '.checks[].id'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			doc := catalog(reg, cat)
			switch output {
			case render.FormatJSON:
				return render.JSON(streams.Out, doc)
			case render.FormatTable, "":
				return printCatalog(streams.Out, doc)
			}
			return &ExitError{Code: ExitFailure, Err: fmt.Errorf("invalid --output %q: want table or json", output)}
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", render.FormatTable, "Output format: table|json.")
	return cmd
}

func printCatalog(w io.Writer, doc CatalogDoc) error {
	if len(doc.Checks) == 0 {
		fmt.Fprintln(w, "No checks are registered.")
	} else {
		t := render.NewTable(w, "CHECK", "THRESHOLD", "ROOT CAUSES", "TITLE")
		for _, c := range doc.Checks {
			var rcs []string
			for _, rc := range c.RootCauses {
				rcs = append(rcs, rc.ID)
			}
			if err := t.Append([]string{c.ID, c.Threshold, strings.Join(rcs, "\n"), c.Title}); err != nil {
				return err
			}
		}
		if err := t.Render(); err != nil {
			return err
		}
	}
	fmt.Fprintln(w)
	t := render.NewTable(w, "ACTION", "TITLE")
	sort.Slice(doc.Actions, func(i, j int) bool { return doc.Actions[i].ID < doc.Actions[j].ID })
	for _, a := range doc.Actions {
		if err := t.Append([]string{a.ID, a.Title}); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, "\nRun `kubectl workloaddoctor explain ID` for any check, root cause or action.")
	return err
}
