package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// plugin is the one way an e2e test drives the built binary: scan and fix against one cluster's
// kubeconfig, the way a user runs them, so every test file reads the same outputs the same way.
type plugin struct {
	kubeconfig string
	env        []string // added to commandEnv's
}

// pluginOn is the binary run against the cluster kubeconfig points at.
func pluginOn(kubeconfig string) plugin { return plugin{kubeconfig: kubeconfig} }

// withClockSkew is p with the binary's local clock shifted by skew (a time.Duration string).
func (p plugin) withClockSkew(skew string) plugin {
	p.env = append(slices.Clip(p.env), "WORKLOADDOCTOR_TEST_CLOCK_SKEW="+skew)
	return p
}

// pluginRun is one finished run of the binary: what it printed, its exit code and its wall time.
type pluginRun struct {
	t              testing.TB
	p              plugin
	args           []string
	stdout, stderr string
	code           int
	// accepted are the exit codes the test accepted of this run (wantExit); a fresh scan that
	// stands in for it (agreed) must exit with one of them.
	accepted []int
	began    time.Time // by the test's clock
	took     time.Duration
}

// scan runs `scan args...`; a non-zero exit is for the caller to judge (wantExit).
func (p plugin) scan(t testing.TB, args ...string) *pluginRun {
	t.Helper()
	return p.run(t, append([]string{"scan"}, args...))
}

// fix runs `fix args...`; a non-zero exit is for the caller to judge (wantExit).
func (p plugin) fix(t testing.TB, args ...string) *pluginRun {
	t.Helper()
	return p.run(t, append([]string{"fix"}, args...))
}

func (p plugin) run(t testing.TB, args []string) *pluginRun {
	t.Helper()
	began := time.Now()
	stdout, stderr, code := runEnv(t, p.kubeconfig, p.env, pluginBinary(t), args...)
	return &pluginRun{t: t, p: p, args: args, stdout: stdout, stderr: stderr, code: code, began: began, took: time.Since(began)}
}

// wantExit fails the test unless the run exited with one of codes.
func (r *pluginRun) wantExit(codes ...int) *pluginRun {
	r.t.Helper()
	if !slices.Contains(codes, r.code) {
		r.t.Fatalf("%s: exit %d, want %s\nstdout:\n%s\nstderr:\n%s", strings.Join(r.args, " "), r.code, exitCodes(codes), r.stdout, r.stderr)
	}
	r.accepted = codes
	return r
}

// wantFindingsOrNone fails the test unless the scan exited 0 (nothing found) or 2 (findings).
func (r *pluginRun) wantFindingsOrNone() *pluginRun {
	r.t.Helper()
	return r.wantExit(0, 2)
}

// wantScanExit is wantExit(code), or wantFindingsOrNone when code is negative.
func (r *pluginRun) wantScanExit(code int) *pluginRun {
	r.t.Helper()
	if code < 0 {
		return r.wantFindingsOrNone()
	}
	return r.wantExit(code)
}

// out is what the run printed and its exit code, for a test that reads them itself.
func (r *pluginRun) out() (stdout, stderr string, code int) { return r.stdout, r.stderr, r.code }

// report is the run's stdout decoded as a scan report (-o json).
func (r *pluginRun) report() *report.Report {
	r.t.Helper()
	return parseReport(r.t, r.stdout)
}

func exitCodes(codes []int) string {
	s := make([]string, len(codes))
	for i, c := range codes {
		s[i] = fmt.Sprint(c)
	}
	return strings.Join(s, " or ")
}

// summaries lists a report's findings one a line (ID, check, root cause, object, summary), for
// failure messages.
func summaries(rep *report.Report) string {
	var b strings.Builder
	for _, f := range rep.Findings {
		fmt.Fprintf(&b, "  %s %s %s %s: %s\n", f.ID, f.Check, f.RootCause.ID, f.Object, f.Summary)
	}
	return b.String()
}
