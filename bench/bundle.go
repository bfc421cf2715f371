package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/bundle"
)

// bundleResult is, at one size, `capture -A` of the cluster and the offline scan of its archive
// (issue 30), measured in the scan's runs.
type bundleResult struct {
	capture []sample
	// size is the archive's size on disk, in bytes, of each capture.
	size []int64
	// offline are the `scan -A --from-bundle` runs on the last capture.
	offline []sample
	// captured and offlineFindings are what the last capture's own scan (its report.json) and
	// the first offline scan of it found.
	captured, offlineFindings scanSummary
	// incomplete names the captures whose scan could not read every input (capture exits 0
	// then, and the archive holds less).
	incomplete []string
	// err is why the runs stopped ("" when they all ran).
	err string
}

// measureBundle captures the cluster -runs times and scans the last archive offline as many
// times. A secondary table: a failure ends it and keeps what the other runs measured.
func (r *runner) measureBundle(ctx context.Context, runs int, res *result) {
	b := &res.bundle
	dir, err := os.MkdirTemp("", "wd-bench-bundle-")
	if err != nil {
		b.err = err.Error()
		return
	}
	defer os.RemoveAll(dir)
	archive := filepath.Join(dir, "cluster.tgz")
	for i := range runs {
		_ = os.Remove(archive)
		s, err := r.command(ctx, nil, r.kubeconfig, r.plugin, "capture", "-A", "-o", archive)
		if err == nil && s.exit != 0 {
			err = fmt.Errorf("capture exited %d", s.exit)
		}
		if err != nil {
			b.err = fmt.Sprintf("capture -A: %v", err)
			logf("%d pods, run %d: %s; the bundle table stops there", res.pods, i+1, b.err)
			return
		}
		fi, err := os.Stat(archive)
		if err != nil {
			b.err = fmt.Sprintf("capture -A wrote no archive: %v", err)
			return
		}
		opened, err := bundle.Open(archive)
		if err != nil {
			b.err = fmt.Sprintf("open the capture: %v", err)
			return
		}
		b.captured = summarizeReport(opened.Report)
		if err := opened.Close(); err != nil {
			b.err = err.Error()
			return
		}
		if !b.captured.complete {
			b.incomplete = append(b.incomplete, fmt.Sprintf("run %d (%s)", i+1, strings.Join(b.captured.gaps, "; ")))
		}
		b.capture, b.size = append(b.capture, s), append(b.size, fi.Size())
		logf("%d pods, run %d: capture -A: %s, %s peak RSS, %d requests, archive %s", res.pods, i+1, s.wall.Round(time.Millisecond),
			mib(s.maxRSS), s.reads.requests, mb(float64(fi.Size())))
	}
	report := filepath.Join(dir, "offline.json")
	for i := range runs {
		out, err := os.Create(report)
		if err != nil {
			b.err = err.Error()
			return
		}
		s, err := r.scan(ctx, out, "--from-bundle", archive)
		out.Close()
		if err != nil {
			b.err = fmt.Sprintf("scan -A --from-bundle: %v", err)
			logf("%d pods, run %d: %s; the bundle table stops there", res.pods, i+1, b.err)
			return
		}
		b.offline = append(b.offline, s)
		if i == 0 {
			if b.offlineFindings, err = summarize(report); err != nil {
				b.err = fmt.Sprintf("offline report: %v", err)
				return
			}
		}
		logf("%d pods, run %d: scan -A --from-bundle: %s, %s peak RSS, %d requests", res.pods, i+1, s.wall.Round(time.Millisecond),
			mib(s.maxRSS), s.reads.requests)
	}
}

// writeBundle writes the -bundle section: the capture's cost and archive, and the offline scan
// next to the live one of the same runs.
func writeBundle(w func(string, ...any), results []result) {
	measured := false
	for _, r := range results {
		measured = measured || len(r.bundle.capture) > 0 || r.bundle.err != ""
	}
	if !measured {
		return
	}
	w("\n## `capture -A` and `scan -A --from-bundle` (a cluster's state, scanned offline)\n\n")
	w("`capture -A -o FILE.tgz` of the cluster, then `scan -A --from-bundle FILE.tgz -o json` on the archive, each as many times as the live " +
		"`scan -A -o json`, whose medians are next to them. The offline scan reads nothing from the apiserver.\n\n")
	w("| pods | capture: wall | capture: requests | capture: bytes read (gzip) | capture: peak RSS | archive on disk | offline scan: wall | offline scan: peak RSS | live scan: wall | offline / live wall | findings of the capture's scan; offline |\n")
	w("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, r := range results {
		b := r.bundle
		if len(b.capture) == 0 {
			if b.err != "" {
				w("| %d | failed: %s | | | | | | | | | |\n", r.pods, b.err)
			}
			continue
		}
		sizes := make([]float64, len(b.size))
		for i, s := range b.size {
			sizes[i] = float64(s)
		}
		live := median(r.scan, wallOf)
		off, offRSS, offWall := "not run", "", ""
		if len(b.offline) > 0 {
			offWall = fmt.Sprintf("%.3f", ratio(median(b.offline, wallOf), live))
			off, offRSS = secs(median(b.offline, wallOf)), mib(int64(median(b.offline, rssOf)))
		}
		w("| %d | %s | %.0f | %s | %s | %s | %s | %s | %s | %s | %s; %s |\n", r.pods, secs(median(b.capture, wallOf)), median(b.capture, reqOf),
			mb(median(b.capture, bytesOf)), mib(int64(median(b.capture, rssOf))), mb(median(sizes, func(f float64) float64 { return f })),
			off, offRSS, secs(live), offWall, b.captured, b.offlineFindings)
		if len(b.incomplete) > 0 {
			w("\nAt %d pods these captures' scans did not read every input (their archives hold less): %s.\n", r.pods, strings.Join(b.incomplete, ", "))
		}
		if b.err != "" {
			w("\nAt %d pods the runs stopped early: %s.\n", r.pods, strings.ReplaceAll(b.err, "\n", " "))
		}
	}
}
