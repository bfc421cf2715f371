package audit

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/fix"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// Fixer applies fixes after a good cycle, on the leader only.
type Fixer interface {
	Fix(ctx context.Context, r *report.Report) []fix.Result
}

// AutoFixer applies the default fix of the findings whose root cause is listed (--auto-fix)
// through the same engine as `fix`: re-read, re-check, preconditions, verification, the Event
// and the audit record. At most Max steps per cycle; high-risk actions never.
type AutoFixer struct {
	RootCauses map[string]bool
	Max        int
	Clients    fix.Clients
	Registry   *checks.Registry
	Catalog    *fix.Catalog
	Settings   snapshot.Settings
	Metrics    *Metrics
	Log        *slog.Logger
}

// SelectAutoFixes selects the default fixes of the findings with a listed root cause. Steps of
// risk high, or with a hazard, are refused (the auditor never names an action, so it never
// accepts a hazard); beyond max the rest wait for the next cycle, and are not returned.
func SelectAutoFixes(cat *fix.Catalog, findings []report.Finding, rootCauses map[string]bool, max int) (steps []*fix.Step, refused []fix.Result) {
	var listed []report.Finding
	for _, f := range findings {
		if rootCauses[f.RootCause.ID] && len(f.Fixes) > 0 {
			listed = append(listed, f)
		}
	}
	if len(listed) == 0 {
		return nil, nil
	}
	// No IDs and no action: every finding given, each with its default (first) fix.
	selected, refused := fix.Select(cat, listed, fix.Selection{})
	for _, s := range selected {
		if s.Risk == report.RiskHigh {
			refused = append(refused, fix.Refuse([]*fix.Step{s}, "high risk: the auditor never applies it on its own; use fix")...)
			continue
		}
		if len(steps) < max {
			steps = append(steps, s)
		}
	}
	return steps, refused
}

// Fix applies this cycle's share of the listed fixes and counts every result.
func (a *AutoFixer) Fix(ctx context.Context, r *report.Report) []fix.Result {
	steps, results := SelectAutoFixes(a.Catalog, r.Findings, a.RootCauses, a.Max)
	if len(steps) > 0 {
		e := fix.NewEngine(a.Clients, fix.Options{Registry: a.Registry, Catalog: a.Catalog, Settings: a.Settings,
			// One wave per workload per cycle: the next cycle sees the replacements and goes on.
			OneWave:   true,
			OnWarning: func(msg string) { a.Log.Warn("auto-fix", slog.String("warning", msg)) },
		})
		results = append(results, e.Run(ctx, fix.Prepare(ctx, a.Clients, a.Catalog, steps, ""))...)
	}
	for _, res := range results {
		a.Metrics.CountFix(res.Action, string(res.Status))
		a.Log.Info("auto-fix", slog.String("action", res.Action), slog.String("object", res.Object.String()),
			slog.String("result", string(res.Status)), slog.String("reason", res.Reason),
			slog.String("findings", fmt.Sprint(res.Findings)))
	}
	return results
}
