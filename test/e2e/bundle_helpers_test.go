package e2e

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/bundle"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// offline is p without a cluster: its kubeconfig names no file, so a run that contacted a
// cluster (or read a kubeconfig for one) would fail.
func (p plugin) offline(t testing.TB) plugin {
	p.kubeconfig = filepath.Join(t.TempDir(), "no-kubeconfig")
	return p
}

// captureArgs are the arguments of a capture of the scan scanArgs: its scope, checks, settings
// and exemptions; not how the scan prints or exits.
func captureArgs(scanArgs []string, out string) []string {
	drop := map[string]bool{"-o": true, "--output": true, "--fail-on": true}
	args := []string{"capture"}
	for i := 0; i < len(scanArgs); i++ {
		name, _, inline := strings.Cut(scanArgs[i], "=")
		switch {
		case name == "--no-color":
		case drop[name]:
			if !inline {
				i++
			}
		default:
			args = append(args, scanArgs[i])
		}
	}
	return append(args, "-o", out)
}

// captured is what capturedAgrees measured: the bundle and the offline report.
type captured struct {
	path    string
	offline *report.Report
	bundle  *bundle.Bundle
	took    time.Duration // the capture's wall time
}

// captureAndReplay captures the scan scanArgs into a bundle, scans the bundle offline with the
// same arguments, and fails unless the offline report is the capture's own report.json exactly
// (findings with their IDs, root causes, evidence, fixes and blockedBy, the summary, coverage,
// suppressed findings; the report's time too): the scan replayed the capture's answers and
// measured ages at the capture's time. Only metadata.source and capturedAt are added.
func captureAndReplay(t testing.TB, p plugin, scanArgs []string) captured {
	t.Helper()
	return captureAndReplayAt(t, p, scanArgs, filepath.Join(t.TempDir(), "bundle.tgz"))
}

// captureAndReplayAt is captureAndReplay into path: an archive, or a directory (ending in /).
func captureAndReplayAt(t testing.TB, p plugin, scanArgs []string, path string) captured {
	t.Helper()
	began := time.Now()
	p.run(t, captureArgs(scanArgs, path)).wantExit(0)
	took := time.Since(began)
	b, err := bundle.Open(path)
	if err != nil {
		t.Fatalf("open the capture: %v", err)
	}
	t.Cleanup(func() { closeBundle(t, b) })
	run := p.offline(t).run(t, append(append([]string{"scan"}, scanArgs...), "--from-bundle", path))
	if !strings.Contains(strings.Join(scanArgs, " "), "json") {
		t.Fatalf("captureAndReplay: %v is not a scan -o json", scanArgs)
	}
	offline := run.report()
	if offline.Metadata.Source != report.SourceBundle || offline.Metadata.CapturedAt == nil ||
		!offline.Metadata.CapturedAt.Equal(b.Manifest.CapturedAt.UTC().Truncate(time.Second)) {
		t.Errorf("offline report metadata %+v: want source bundle and capturedAt %s", offline.Metadata, b.Manifest.CapturedAt)
	}
	if diff := reportDiff(b.Report, offline); diff != "" {
		t.Errorf("scan --from-bundle differs from the capture's own report: %s", diff)
	}
	return captured{path: path, offline: offline, bundle: b, took: took}
}

// reportDiff names the parts of two reports that differ, the offline report's source and
// capture time left out.
func reportDiff(want, got *report.Report) string {
	g := *got
	g.Metadata.Source, g.Metadata.CapturedAt = "", nil
	var d []string
	part := func(what string, a, b any) {
		if !reflect.DeepEqual(a, b) {
			j1, _ := json.MarshalIndent(a, "", " ")
			j2, _ := json.MarshalIndent(b, "", " ")
			d = append(d, fmt.Sprintf("%s:\ncapture %s\noffline %s", what, j1, j2))
		}
	}
	part("metadata", want.Metadata, g.Metadata)
	part("coverage", want.Coverage, g.Coverage)
	part("summary", want.Summary, g.Summary)
	part("findings", want.Findings, g.Findings)
	part("suppressed", want.Suppressed, g.Suppressed)
	part("warnings", want.Warnings, g.Warnings)
	return strings.Join(d, "\n")
}

// liveDiffers says where a live report and an offline one of a capture taken moments apart
// disagree, on what a verdict is made of (findingDiff: ages and counts that move are masked).
func liveDiffers(live, offline *report.Report) []string {
	var problems []string
	byID := map[string]report.Finding{}
	for _, f := range offline.Findings {
		byID[f.ID] = f
	}
	for _, f := range live.Findings {
		g, ok := byID[f.ID]
		if !ok {
			problems = append(problems, fmt.Sprintf("offline: no finding %s (%s %s on %s)", f.ID, f.Check, f.RootCause.ID, f.Object))
			continue
		}
		if diff := findingDiff(f, g); diff != "" {
			problems = append(problems, fmt.Sprintf("offline finding %s differs from the live scan's: %s", f.ID, diff))
		}
		delete(byID, f.ID)
	}
	for id, g := range byID {
		problems = append(problems, fmt.Sprintf("offline: finding %s (%s %s on %s) the live scan did not report", id, g.Check, g.RootCause.ID, g.Object))
	}
	if len(live.Coverage.Unread) != len(offline.Coverage.Unread) {
		problems = append(problems, fmt.Sprintf("unread inputs: live %v, offline %v", live.Coverage.Unread, offline.Coverage.Unread))
	}
	return problems
}

// closeBundle removes what opening an archive unpacked.
func closeBundle(t testing.TB, b *bundle.Bundle) {
	if err := b.Close(); err != nil {
		t.Errorf("close the capture: %v", err)
	}
}
