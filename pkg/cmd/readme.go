package cmd

import (
	"bytes"
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks/builtin"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/fix"
)

// ReadmeSections renders the README's generated sections from the code, so the README cannot
// drift from the flags and checks the binary has. Keys are the section names in the markers
// `<!-- BEGIN GENERATED: name -->` and `<!-- END GENERATED: name -->`.
func ReadmeSections() map[string]string {
	reg := builtin.Checks()
	root := NewRootCommand(genericiooptions.NewTestIOStreamsDiscard())
	out := map[string]string{"checks": checksMarkdown(reg, fix.NewCatalog())}
	for _, name := range []string{"scan", "capture", "why", "fix", "audit"} {
		if c, _, err := root.Find([]string{name}); err == nil && c.Name() == name {
			out["flags-"+name] = flagsMarkdown(c)
		}
	}
	return out
}

func checksMarkdown(reg *checks.Registry, cat *fix.Catalog) string {
	var b strings.Builder
	if len(reg.All()) == 0 {
		b.WriteString("No checks are registered yet.\n")
	}
	for _, c := range reg.All() {
		info := c.Info()
		fmt.Fprintf(&b, "### `%s`\n\n%s Default threshold: %s.\n\n", info.ID, info.Description, info.Threshold)
		b.WriteString("| root cause | severity | what it means | fixes |\n|---|---|---|---|\n")
		for _, rc := range info.RootCauses {
			fixes := "none (a person must act)"
			if len(rc.Actions) > 0 {
				fixes = "`" + strings.Join(rc.Actions, "`, `") + "`"
			}
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", rc.ID, rc.Severity, rc.Title, fixes)
		}
		b.WriteString("\n")
	}
	b.WriteString("Fix actions:\n\n| action | what it does | preconditions |\n|---|---|---|\n")
	actions := cat.Docs()
	sort.Slice(actions, func(i, j int) bool { return actions[i].ID < actions[j].ID })
	for _, a := range actions {
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", a.ID, a.Title, a.Preconditions)
	}
	return b.String()
}

// flagsMarkdown lists a command's own flags (the kubectl connection flags are documented once).
func flagsMarkdown(c *cobra.Command) string {
	var b bytes.Buffer
	b.WriteString("```\n")
	c.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) {
		if f.Hidden || f.Name == "help" {
			return
		}
		name := "--" + f.Name
		if f.Shorthand != "" {
			name = "-" + f.Shorthand + ", " + name
		}
		usage := f.Usage
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "[]" {
			usage += fmt.Sprintf(" (default %q)", f.DefValue)
		}
		fmt.Fprintf(&b, "  %-26s %s\n", name, usage)
	})
	b.WriteString("```\n")
	return b.String()
}
