// Package render prints what the commands show: reports, fix plans, progress and results.
package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"

	"github.com/fatih/color"
	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/yaml"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks/builtin"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// Output formats.
const (
	FormatTable = "table"
	FormatWide  = "wide"
	FormatJSON  = "json"
	FormatYAML  = "yaml"
)

// ReportFormats are the formats `scan -o` accepts.
var ReportFormats = []string{FormatTable, FormatWide, FormatJSON, FormatYAML, FormatJUnit, FormatSARIF}

// JSON writes v as indented JSON.
func JSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("encode json: %w", err)
	}
	return nil
}

// YAML writes v as the YAML form of its JSON document, so both carry the same fields.
func YAML(w io.Writer, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode json: %w", err)
	}
	out, err := yaml.JSONToYAML(raw)
	if err != nil {
		return fmt.Errorf("encode yaml: %w", err)
	}
	_, err = w.Write(out)
	return err
}

// Report writes the report in the given format. color adds ANSI colours to tables.
func Report(w io.Writer, r *report.Report, format string, colored bool) error {
	switch format {
	case FormatJSON:
		return JSON(w, r)
	case FormatYAML:
		return YAML(w, r)
	case FormatJUnit:
		return JUnit(w, r)
	case FormatSARIF:
		return SARIF(w, r)
	case FormatTable, FormatWide, "":
		return Findings(w, r, format == FormatWide, colored)
	}
	return fmt.Errorf("unknown output format %q (want one of %s)", format, strings.Join(ReportFormats, ", "))
}

// Table is a kubectl-style table: no borders, columns separated by spaces, no trailing blanks.
type Table struct {
	out io.Writer
	buf bytes.Buffer
	t   *tablewriter.Table
}

// NewTable returns a table with the given header that writes to w on Render.
func NewTable(w io.Writer, header ...string) *Table {
	tb := &Table{out: w}
	tb.t = tablewriter.NewTable(&tb.buf,
		tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{
			Borders:  tw.BorderNone,
			Settings: tw.Settings{Lines: tw.LinesNone, Separators: tw.SeparatorsNone},
		})),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithRowAlignment(tw.AlignLeft),
		tablewriter.WithTrimSpace(tw.Off),
		tablewriter.WithPadding(tw.Padding{Left: "", Right: "   ", Overwrite: true}),
	)
	h := make([]any, len(header))
	for i, s := range header {
		h[i] = s
	}
	tb.t.Header(h...)
	return tb
}

// Append adds a row.
func (tb *Table) Append(row []string) error { return tb.t.Append(row) }

// paddedReset is padding followed by colour codes at a line's end.
var paddedReset = regexp.MustCompile(` +((?:\x1b\[[0-9;]*m)+)$`)

// Render writes the table, trimming the padding at line ends.
func (tb *Table) Render() error {
	if err := tb.t.Render(); err != nil {
		return err
	}
	var out strings.Builder
	for _, line := range strings.SplitAfter(tb.buf.String(), "\n") {
		nl := strings.HasSuffix(line, "\n")
		line = strings.TrimRight(line, " \n")
		// A coloured last cell ends in its colour's reset, after the padding.
		if m := paddedReset.FindStringSubmatchIndex(line); m != nil {
			line = line[:m[0]] + line[m[2]:]
		}
		out.WriteString(line)
		if nl {
			out.WriteByte('\n')
		}
	}
	_, err := io.WriteString(tb.out, out.String())
	return err
}

// Paint is a severity as tables print it: coloured (error red, warning yellow, info cyan) when
// colored, plain otherwise.
func Paint(colored bool, s report.Severity) string {
	if !colored {
		return string(s)
	}
	c := color.New(color.FgCyan)
	switch s {
	case report.SeverityError:
		c = color.New(color.FgRed, color.Bold)
	case report.SeverityWarning:
		c = color.New(color.FgYellow)
	}
	c.EnableColor()
	return c.Sprint(string(s))
}

// Findings writes findings grouped by check, then a summary and a coverage note.
func Findings(w io.Writer, r *report.Report, wide, colored bool) error {
	groups := map[string][]report.Finding{}
	var order []string
	for _, f := range r.Findings {
		if _, ok := groups[f.Check]; !ok {
			order = append(order, f.Check)
		}
		groups[f.Check] = append(groups[f.Check], f)
	}
	if len(r.Findings) == 0 {
		fmt.Fprintln(w, "No stuck workloads found.")
	}
	for i, check := range order {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%s (%d)\n", check, len(groups[check]))
		header := []string{"SEVERITY", "OBJECT", "AGE", "ROOT CAUSE", "FIX", "SUMMARY"}
		if wide {
			header = append([]string{"ID"}, header...)
			header = append(header, "EVIDENCE")
		}
		t := NewTable(w, header...)
		for _, row := range tableRows(groups[check], r, wide, colored) {
			if err := t.Append(row); err != nil {
				return fmt.Errorf("render table: %w", err)
			}
		}
		if err := t.Render(); err != nil {
			return fmt.Errorf("render table: %w", err)
		}
	}
	fmt.Fprintln(w)
	s := r.Summary
	fmt.Fprintf(w, "%d finding%s: %d error, %d warning, %d info.\n", s.Total, plural(s.Total), s.Error, s.Warning, s.Info)
	suppressedCount(w, len(r.Suppressed))
	return coverageNote(w, r.Coverage)
}

func tableRows(fs []report.Finding, r *report.Report, wide, colored bool) [][]string {
	var rows [][]string
	held := map[string][]string{}
	if !wide {
		fs, held = chains(fs)
	}
	for _, g := range groupByNode(fs, wide) {
		f := g.first
		fix := "-"
		if len(f.Fixes) > 0 {
			fix = f.Fixes[0].Action
		}
		obj := f.Object.String()
		summary := f.Summary
		if g.count > 1 {
			obj = fmt.Sprintf("%d pods on node/%s", g.count, g.node)
			summary = fmt.Sprintf("%d pods stuck on node %s (-o json lists each)", g.count, g.node)
		}
		var holds []string
		for _, m := range g.members {
			holds = append(holds, held[m]...)
		}
		summary += holdsNote(holds)
		if wide {
			summary += chainNote(f)
		}
		row := []string{Paint(colored, f.Severity), obj, age(f, r), f.RootCause.ID, fix, summary}
		if wide {
			row = append([]string{f.ID}, row...)
			row = append(row, strings.Join(f.RootCause.Evidence, "\n"))
		}
		rows = append(rows, row)
	}
	return rows
}

type nodeGroup struct {
	first report.Finding
	node  string
	count int
	// members are the IDs of the findings in the group.
	members []string
}

// groupByNode folds pods that share a root cause and a node into one line, so a dead node with
// hundreds of pods reads as one row. Wide output keeps every pod.
func groupByNode(fs []report.Finding, wide bool) []nodeGroup {
	// The root causes that are about a pod's node, not the pod itself.
	nodeRootCauses := builtin.Checks().RootCauseIDs(func(rc checks.RootCause) bool { return rc.NodeProblem })
	var out []nodeGroup
	index := map[string]int{}
	for _, f := range fs {
		node := f.Node
		if wide || node == "" || f.Object.Kind != "Pod" || !slices.Contains(nodeRootCauses, f.RootCause.ID) {
			out = append(out, nodeGroup{first: f, count: 1, members: []string{f.ID}})
			continue
		}
		key := f.RootCause.ID + "\x00" + node
		if i, ok := index[key]; ok {
			out[i].count++
			out[i].members = append(out[i].members, f.ID)
			continue
		}
		index[key] = len(out)
		out = append(out, nodeGroup{first: f, node: node, count: 1, members: []string{f.ID}})
	}
	return out
}

func age(f report.Finding, r *report.Report) string {
	if f.Since.IsZero() || r.Metadata.GeneratedAt.IsZero() {
		return "-"
	}
	return duration.HumanDuration(r.Metadata.GeneratedAt.Sub(f.Since))
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// CoverageNote says what the checks could not read, as the report's last lines do.
func CoverageNote(w io.Writer, c report.Coverage) error { return coverageNote(w, c) }

func coverageNote(w io.Writer, c report.Coverage) error {
	defer func() {
		for _, n := range c.Notes {
			fmt.Fprintf(w, "  note %s: %s\n", n.Check, n.Reason)
		}
	}()
	if c.Complete {
		_, err := fmt.Fprintf(w, "Coverage: complete (%d check%s ran).\n", len(c.Checks), plural(len(c.Checks)))
		return err
	}
	fmt.Fprintf(w, "Coverage: incomplete.\n")
	for _, n := range c.Skipped {
		fmt.Fprintf(w, "  skipped %s: %s\n", n.Check, n.Reason)
	}
	for _, n := range c.Degraded {
		fmt.Fprintf(w, "  degraded %s: %s\n", n.Check, n.Reason)
	}
	return nil
}
