package render

import (
	"fmt"
	"io"
	"strings"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// FleetFormats are the formats of a fleet scan: JUnit and SARIF describe one cluster's findings.
var FleetFormats = []string{FormatTable, FormatWide, FormatJSON, FormatYAML}

// FleetReport writes a fleet scan in the given format: JSON and YAML are the FleetReport
// document; tables show each context's findings under its name, then a row per context.
func FleetReport(w io.Writer, f *report.FleetReport, format string, colored bool) error {
	switch format {
	case FormatJSON:
		return JSON(w, f)
	case FormatYAML:
		return YAML(w, f)
	case FormatTable, FormatWide, "":
		return fleetTables(w, f, format == FormatWide, colored)
	}
	return fmt.Errorf("unknown output format %q (want one of %s)", format, strings.Join(FleetFormats, ", "))
}

func fleetTables(w io.Writer, f *report.FleetReport, wide, colored bool) error {
	for _, c := range f.Clusters {
		fmt.Fprintf(w, "=== context %s (%s)\n", c.Context, clusterLine(c))
		if c.Status != report.ClusterScanned {
			fmt.Fprintf(w, "Not scanned: %s: %s\n\n", c.Status, c.Error)
			continue
		}
		r, err := f.ContextReport(c.Context)
		if err != nil {
			return err
		}
		if err := Findings(w, r, wide, colored); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	t := NewTable(w, "CONTEXT", "STATUS", "SERVER", "CLUSTER ID", "VERSION", "DURATION", "ERROR", "WARNING", "INFO", "EXIT")
	notScanned := 0
	for _, c := range f.Clusters {
		status := c.Status
		if c.Status != report.ClusterScanned {
			notScanned++
		} else if c.Coverage != nil && !c.Coverage.Complete {
			status += " (incomplete)"
		}
		row := []string{c.Context, status, dash(c.Server), dash(c.ClusterID), dash(c.ServerVersion), c.Duration,
			fmt.Sprint(c.Summary.Error), fmt.Sprint(c.Summary.Warning), fmt.Sprint(c.Summary.Info), fmt.Sprint(c.ExitCode)}
		if err := t.Append(row); err != nil {
			return fmt.Errorf("render table: %w", err)
		}
	}
	if err := t.Render(); err != nil {
		return fmt.Errorf("render table: %w", err)
	}
	s := f.Summary
	_, err := fmt.Fprintf(w, "\n%d finding%s in %d context%s: %d error, %d warning, %d info; %d context%s not scanned.\n",
		s.Total, plural(s.Total), len(f.Clusters), plural(len(f.Clusters)), s.Error, s.Warning, s.Info, notScanned, plural(notScanned))
	return err
}

// clusterLine names a context's cluster: its server, identity and version, as far as known.
func clusterLine(c report.ClusterResult) string {
	parts := []string{dash(c.Server)}
	if c.ClusterID != "" {
		parts = append(parts, "cluster "+c.ClusterID)
	}
	if c.ServerVersion != "" {
		parts = append(parts, c.ServerVersion)
	}
	return strings.Join(parts, ", ")
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
