package why

import (
	"fmt"
	"io"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/render"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// Output formats of `why`: the tree, the tree with evidence, or the findings as a report document.
const (
	FormatTree = "tree"
	FormatWide = render.FormatWide
	FormatJSON = render.FormatJSON
	FormatYAML = render.FormatYAML
)

// Formats are the formats `why -o` accepts.
var Formats = []string{FormatTree, FormatWide, FormatJSON, FormatYAML}

// Render writes the answer in the given format; colored paints the severities of a tree as
// scan's table does.
func Render(w io.Writer, res *Result, format string, colored bool) error {
	switch format {
	case FormatJSON:
		return render.JSON(w, res.Report)
	case FormatYAML:
		return render.YAML(w, res.Report)
	case FormatTree, FormatWide, "":
		return tree(w, res, format == FormatWide, colored)
	}
	return fmt.Errorf("unknown output format %q (want one of %s)", format, strings.Join(Formats, ", "))
}

// tree draws each finding of the object down to its root, one line an object, then what the
// person does next: the root cause, the fix command, and who added the finalizers.
func tree(w io.Writer, res *Result, wide, colored bool) error {
	header := []string{"OBJECT", "STATE", "VERDICT"}
	if wide {
		header = []string{"OBJECT", "STATE", "ID", "VERDICT", "EVIDENCE"}
	}
	t := render.NewTable(w, header...)
	var roots []*Node
	var add func(n *Node, prefix, branch string) error
	add = func(n *Node, prefix, branch string) error {
		if n.Root() {
			roots = append(roots, n)
		}
		row := []string{prefix + branch + n.Ref.String(), n.State, verdict(n, branch == "", colored)}
		if wide {
			id, evidence := "-", ""
			if n.Finding != nil {
				id, evidence = n.Finding.ID, strings.Join(n.Finding.RootCause.Evidence, "\n")
			}
			row = []string{row[0], row[1], id, row[2], evidence}
		}
		if err := t.Append(row); err != nil {
			return fmt.Errorf("render tree: %w", err)
		}
		// Children are indented under the object's name, not under its branch mark.
		switch branch {
		case "├─ ":
			prefix += "│  "
		case "└─ ":
			prefix += "   "
		}
		for i, c := range n.Children {
			b := "├─ "
			if i == len(n.Children)-1 {
				b = "└─ "
			}
			if err := add(c, prefix, b); err != nil {
				return err
			}
		}
		return nil
	}
	for _, n := range res.Trees {
		if err := add(n, "", ""); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return fmt.Errorf("render tree: %w", err)
	}
	fmt.Fprintln(w)
	if len(res.Report.Findings) == 0 {
		checks := res.Report.Coverage.Checks
		fmt.Fprintf(w, "Nothing holds %s: no finding on it or on anything it waits on (%d check%s ran on %s: %s).\n",
			res.Object, len(checks), plural(len(checks)), scopeText(res), strings.Join(checks, ", "))
	}
	for _, n := range roots {
		f := n.Finding
		fmt.Fprintf(w, "Root cause %s on %s (finding %s): %s\n", f.RootCause.ID, f.Object, f.ID, f.RootCause.Message)
		if len(f.Fixes) > 0 {
			fmt.Fprintf(w, "Fix: kubectl workloaddoctor fix %s %s   (%s, risk %s: %s)\n",
				fixScope(res, f.Object), f.ID, f.Fixes[0].Action, f.Fixes[0].Risk, f.Fixes[0].Description)
		} else {
			fmt.Fprintf(w, "Fix: none automatic; kubectl workloaddoctor explain %s says what to do.\n", f.RootCause.ID)
		}
	}
	if len(res.HeldBy) > 0 {
		var names []string
		for _, o := range res.HeldBy {
			names = append(names, o.String())
		}
		fmt.Fprintf(w, "Waiting on it: %s.\n", strings.Join(names, ", "))
	}
	for _, f := range res.Finalizers {
		who := "no managedFields entry says who added it"
		switch {
		// The apiserver adds these itself on a delete that asks for them (kubernetes v1.37.1
		// staging/src/k8s.io/apiserver/pkg/registry/generic/registry/store.go,
		// shouldOrphanDependents and shouldDeleteDependents): no field manager owns them.
		case f.Name == metav1.FinalizerDeleteDependents:
			who = "set by the apiserver on a delete with propagationPolicy Foreground"
		case f.Name == metav1.FinalizerOrphanDependents:
			who = "set by the apiserver on a delete with propagationPolicy Orphan"
		case f.Manager != "":
			who = "added by " + f.Manager
			if !f.Time.IsZero() {
				who += " at " + f.Time.Format(time.RFC3339)
			}
		}
		fmt.Fprintf(w, "Finalizer %s: %s.\n", f.Name, who)
	}
	return render.CoverageNote(w, res.Report.Coverage)
}

// verdict is a line's one-line judgement: the finding's severity, root cause and summary, the
// root marked; an object without a finding is stuck with nothing judged on it, what the finding
// above it waits on, or (the object asked about, top) holds nothing.
func verdict(n *Node, top, colored bool) string {
	f := n.Finding
	if f == nil {
		switch {
		case len(n.Children) > 0:
			return "waits on the objects below (no finding of its own)"
		case !top:
			return "what the finding above waits on (no finding of its own)"
		}
		return "nothing holds it"
	}
	summary := f.Summary
	if !n.Root() {
		// chainToRoots appends the root to a chained summary; the tree draws it below instead.
		summary, _, _ = strings.Cut(summary, "; root: ")
	}
	sev := render.Paint(colored, f.Severity)
	v := fmt.Sprintf("%s %s: %s", sev, f.RootCause.ID, summary)
	if n.Root() {
		fix := "no automatic fix"
		if len(f.Fixes) > 0 {
			fix = "fix " + f.Fixes[0].Action
		}
		v = fmt.Sprintf("%s ROOT CAUSE %s [%s, %s]: %s", sev, f.RootCause.ID, f.ID, fix, summary)
	}
	return v
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// scopeText names what the scan read.
func scopeText(res *Result) string {
	s := "namespace " + res.Namespace
	if len(res.ClusterResources) > 0 {
		var rs []string
		for _, gr := range res.ClusterResources {
			rs = append(rs, gr.String())
		}
		s += " and the cluster's " + strings.Join(rs, ", ")
	}
	return s
}

// fixScope is the scope flag with which fix finds a finding on o: the namespace the tree was
// read in for a namespaced object or a Namespace, -A for another cluster-scoped object, which
// only a scan of every namespace reports.
func fixScope(res *Result, o report.ObjectRef) string {
	if o.Namespace == "" && !(o.Kind == "Namespace" && o.APIVersion == "v1") {
		return "-A"
	}
	return "-n " + res.Namespace
}
