package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os/exec"
	"strings"
)

// comparedLimit is how much more than the compared build a figure may cost and still be
// "within" (the issues' performance targets for a change: +10%).
const comparedLimit = 1.10

// writeComparison writes the -compare-plugin section: the plugin's scans against the compared
// binary's, measured in the same runs.
func writeComparison(b *strings.Builder, cfg config, results []result) {
	if cfg.compare == "" {
		return
	}
	w := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	w("\n## This build against `-compare-plugin`, same runs\n\n")
	w("A is the plugin measured above, %s; B is `-compare-plugin %s`, %s. Both run `scan -A -o json` (all checks, gzip) against the same cluster; "+
		"B goes right after A's scans in runs 1, 3, ... and right before them in runs 2, 4, .... Medians of %d runs; a ratio is A / B, "+
		"and within means at most %.2fx.\n\n", pluginVersion(cfg.plugin), cfg.compare, pluginVersion(cfg.compare), cfg.runs, comparedLimit)
	w("| pods | requests A / B | ratio | bytes (gzip) A / B | ratio | pod LISTs / GETs A; B | peak RSS A / B | ratio | wall A / B | ratio | CPU A / B | ratio |\n")
	w("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	within := func(a, b float64) string { return fmt.Sprintf("%.3f %s", ratio(a, b), verdictWithin(ratio(a, b))) }
	for _, r := range results {
		a, c := r.scan, r.compared
		w("| %d | %.0f / %.0f | %s | %s / %s | %s | %.0f / %.0f; %.0f / %.0f | %s / %s | %s | %s / %s | %.3f | %s / %s | %.3f |\n", r.pods,
			median(a, reqOf), median(c, reqOf), within(median(a, reqOf), median(c, reqOf)),
			mb(median(a, bytesOf)), mb(median(c, bytesOf)), within(median(a, bytesOf), median(c, bytesOf)),
			median(a, podListsOf), median(a, podGetsOf), median(c, podListsOf), median(c, podGetsOf),
			mib(int64(median(a, rssOf))), mib(int64(median(c, rssOf))), within(median(a, rssOf), median(c, rssOf)),
			secs(median(a, wallOf)), secs(median(c, wallOf)), ratio(median(a, wallOf), median(c, wallOf)),
			secs(median(a, cpuOf)), secs(median(c, cpuOf)), ratio(median(a, cpuOf), median(c, cpuOf)))
	}
	w("\nSingle runs (A; B), wall and peak RSS: ")
	var sizes []string
	for _, r := range results {
		var runs []string
		for i := range min(len(r.scan), len(r.compared)) {
			runs = append(runs, fmt.Sprintf("%s %s; %s %s", secs(r.scan[i].wall.Seconds()), mib(r.scan[i].maxRSS),
				secs(r.compared[i].wall.Seconds()), mib(r.compared[i].maxRSS)))
		}
		sizes = append(sizes, fmt.Sprintf("%d pods: %s", r.pods, strings.Join(runs, " | ")))
	}
	w("%s.\n", strings.Join(sizes, "; "))

	w("\nWhat differs, by request (`verb resource subresource` in the apiserver's metrics; medians; writes are the control plane's own):\n\n")
	w("| pods | request | requests A / B | bytes A / B |\n|---:|---|---:|---:|\n")
	for _, r := range results {
		for _, k := range differingKeys(r.scan, r.compared) {
			w("| %d | %s | %.0f / %.0f | %s / %s |\n", r.pods, strings.TrimSpace(k), medianKey(r.scan, k, false), medianKey(r.compared, k, false),
				mb(medianKey(r.scan, k, true)), mb(medianKey(r.compared, k, true)))
		}
	}
	w("\nFindings of the warm-up scans: ")
	var found []string
	for _, r := range results {
		found = append(found, fmt.Sprintf("%d pods: A %s; B %s", r.pods, r.summary, r.comparedSummary))
	}
	w("%s.\n", strings.Join(found, "; "))
}

func verdictWithin(r float64) string {
	if r <= comparedLimit {
		return "within"
	}
	return "**over**"
}

// medianKey is the median over runs of the requests (or bytes) of one key.
func medianKey(runs []sample, key string, bytes bool) float64 {
	return median(runs, func(s sample) float64 {
		if bytes {
			return float64(s.reads.bytesByKey[key])
		}
		return float64(s.reads.byKey[key])
	})
}

// differingKeys are the request keys whose median requests differ between a and b, or whose
// bytes differ by more than 1% and 10 kB (a list's size varies a little from run to run: the
// objects' resourceVersions, the Leases being renewed), sorted.
func differingKeys(a, b []sample) []string {
	keys := map[string]bool{}
	for _, runs := range [][]sample{a, b} {
		for _, s := range runs {
			for k := range s.reads.byKey {
				keys[k] = true
			}
			for k := range s.reads.bytesByKey {
				keys[k] = true
			}
		}
	}
	var out []string
	for _, k := range sortedKeys(keys) {
		ba, bb := medianKey(a, k, true), medianKey(b, k, true)
		if medianKey(a, k, false) != medianKey(b, k, false) || math.Abs(ba-bb) > max(10e3, 0.01*max(ba, bb)) {
			out = append(out, k)
		}
	}
	return out
}

// pluginVersion names a plugin binary by its version and commit (`version --client -o json`),
// or by its path when it cannot say.
func pluginVersion(bin string) string {
	out, err := exec.Command(bin, "version", "--client", "-o", "json").Output()
	var doc struct {
		PluginVersion struct {
			Version string `json:"version"`
			Commit  string `json:"commit"`
		} `json:"pluginVersion"`
	}
	if err != nil || json.Unmarshal(out, &doc) != nil || doc.PluginVersion.Version == "" {
		return bin
	}
	return fmt.Sprintf("`%s` %s (commit %s)", bin, doc.PluginVersion.Version, doc.PluginVersion.Commit)
}
