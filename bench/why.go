package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// whyTarget is an object `why` is measured on, picked from the warm-up scan's findings so that
// it is stuck for the checks' own reasons.
type whyTarget struct {
	what string   // "stuck pod", ...
	args []string // why's arguments: TYPE/NAME [-n NS]
}

// whyResult is why's runs on one target.
type whyResult struct {
	target whyTarget
	runs   []sample
	// err is the last failed run's error, "" when every run succeeded.
	err string
}

// whyTargets picks, from the scan report at path, a pod Terminating on a dead node, a
// Terminating namespace and a CloneSet whose controller froze: the first of each in the
// report's order, which is stable.
func whyTargets(path string) ([]whyTarget, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r report.Report
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("decode scan report: %w", err)
	}
	picks := []struct {
		what string
		ok   func(report.Finding) bool
	}{
		{"stuck pod (Terminating on a dead node)", func(f report.Finding) bool {
			return f.Object.Kind == "Pod" && f.Check == "stuck-terminating" && f.RootCause.ID == "node-not-ready"
		}},
		{"stuck namespace (content held by a finalizer)", func(f report.Finding) bool {
			return f.Object.Kind == "Namespace" && f.Check == "stuck-terminating"
		}},
		{"frozen CloneSet (spec never observed)", func(f report.Finding) bool {
			return f.Object.Kind == "CloneSet" && f.Check == "expectations-unsatisfied"
		}},
	}
	var out []whyTarget
	for _, p := range picks {
		for _, f := range r.Findings {
			if !p.ok(f) {
				continue
			}
			args := []string{strings.ToLower(f.Object.Kind) + "/" + f.Object.Name}
			if f.Object.Namespace != "" {
				args = append(args, "-n", f.Object.Namespace)
			}
			out = append(out, whyTarget{what: p.what, args: args})
			break
		}
	}
	if len(out) != len(picks) {
		// A young cluster: the findings appear once their objects are past the checks' thresholds.
		return out, fmt.Errorf("the warm-up scan has findings for %d of the %d why targets", len(out), len(picks))
	}
	return out, nil
}

// why runs `why ARGS -o json` once; exit 2 (a finding at --fail-on) or 0 (a warning) is an
// answer.
func (r *runner) why(ctx context.Context, t whyTarget) (sample, error) {
	s, err := r.command(ctx, nil, r.kubeconfig, r.plugin, append(append([]string{"why"}, t.args...), "-o", "json")...)
	if err == nil && s.exit != 0 && s.exit != 2 {
		err = fmt.Errorf("why %s exited %d", strings.Join(t.args, " "), s.exit)
	}
	return s, err
}

// writeWhy writes why's costs next to the scan's of the same run.
func writeWhy(w func(string, ...any), results []result) {
	measured := false
	for _, r := range results {
		measured = measured || len(r.why) > 0
	}
	if !measured {
		return
	}
	w("\n## `why TYPE/NAME` against `scan -A` (one object's diagnosis)\n\n")
	w("`why TYPE/NAME -o json` on objects the warm-up scan found stuck, each run as many times as the scan, its median " +
		"next to the median `scan -A -o json` of the same runs. Goal: under 1%% of the scan's bytes, under a second.\n\n")
	w("| pods | object | why: requests | why: bytes (gzip) | why: wall | why: peak RSS | requests / scan's | bytes / scan's (goal < 1%%) | wall (goal < 1 s) |\n")
	w("|---:|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range results {
		sreq, sbytes := median(r.scan, reqOf), median(r.scan, bytesOf)
		for _, wr := range r.why {
			if len(wr.runs) == 0 {
				w("| %d | %s: `why %s` | failed: %s | | | | | | |\n", r.pods, wr.target.what, strings.Join(wr.target.args, " "), wr.err)
				continue
			}
			req, b, wall := median(wr.runs, reqOf), median(wr.runs, bytesOf), median(wr.runs, wallOf)
			w("| %d | %s: `why %s` | %.0f | %s | %s | %s | %.1f%% | %.2f%% %s | %s |\n", r.pods, wr.target.what, strings.Join(wr.target.args, " "),
				req, kb(b), secs(wall), mib(int64(median(wr.runs, rssOf))), 100*ratio(req, sreq), 100*ratio(b, sbytes), verdict(ratio(b, sbytes) < 0.01),
				verdict(wall < 1))
		}
	}
	writeWhyBreakdown(w, results)
}

// writeWhyBreakdown writes, for each why target, its requests and bytes by "verb resource
// subresource" (medians over its runs), largest first: where why's cost goes.
func writeWhyBreakdown(w func(string, ...any), results []result) {
	w("\nBy request (`verb resource subresource` in the apiserver's metrics; medians; writes are the control plane's own):\n\n")
	w("| pods | object | request | requests | bytes (gzip) |\n|---:|---|---|---:|---:|\n")
	for _, r := range results {
		for _, wr := range r.why {
			keys := map[string]bool{}
			for _, s := range wr.runs {
				for k := range s.reads.byKey {
					keys[k] = true
				}
			}
			ordered := sortedKeys(keys)
			sort.SliceStable(ordered, func(i, j int) bool {
				return medianKey(wr.runs, ordered[i], true) > medianKey(wr.runs, ordered[j], true)
			})
			for _, k := range ordered {
				w("| %d | `why %s` | %s | %.0f | %s |\n", r.pods, strings.Join(wr.target.args, " "), strings.TrimSpace(k),
					medianKey(wr.runs, k, false), kb(medianKey(wr.runs, k, true)))
			}
		}
	}
}

func kb(b float64) string { return fmt.Sprintf("%.1f kB", b/1e3) }
