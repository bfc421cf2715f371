package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

var t0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func finding(ns, kind, name, check, cause string, sev report.Severity, stuck time.Duration, owner *report.ObjectRef) report.Finding {
	return report.Finding{
		Check: check, Severity: sev, Since: t0.Add(-stuck), Owner: owner,
		Object:    report.ObjectRef{APIVersion: "v1", Kind: kind, Namespace: ns, Name: name, UID: ns + "/" + name},
		RootCause: report.RootCause{ID: cause},
	}
}

func newReport(cov report.Coverage, fs ...report.Finding) *report.Report {
	r := &report.Report{Metadata: report.Metadata{GeneratedAt: t0}, Coverage: cov, Findings: fs}
	r.Normalize()
	return r
}

var looked = report.Coverage{Checks: []string{"stuck-terminating"}}

// scripted plays a sequence of scan outcomes, one per cycle.
type scripted struct {
	reports []*report.Report
	errs    []error
	n       int
}

func (s *scripted) scan(context.Context) (*report.Report, error) {
	i := s.n
	s.n++
	return s.reports[i], s.errs[i]
}

func newAuditor(t *testing.T, s *scripted, logs io.Writer) *Auditor {
	t.Helper()
	a, err := New(Options{Scan: s.scan, Interval: time.Minute, Metrics: NewMetrics(), Log: slog.New(slog.NewJSONHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// metricsText scrapes /metrics and keeps the workloaddoctor_ lines.
func metricsText(t *testing.T, a *Auditor) string {
	t.Helper()
	h, _ := a.Handlers()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	var keep []string
	for _, l := range strings.Split(rec.Body.String(), "\n") {
		if strings.HasPrefix(l, "workloaddoctor_") && !strings.HasPrefix(l, "workloaddoctor_scan_duration_seconds_bucket") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

func probe(a *Auditor, path string) int {
	_, h := a.Handlers()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
	return rec.Code
}

func TestFindingsMetricsFromAReport(t *testing.T) {
	owner := &report.ObjectRef{APIVersion: "apps/v1", Kind: "ReplicaSet", Namespace: "shop", Name: "web-5d8"}
	r := newReport(looked,
		finding("shop", "Pod", "web-1", "stuck-terminating", "finalizer-owner-missing", report.SeverityError, 90*time.Second, owner),
		finding("shop", "Pod", "web-2", "stuck-terminating", "finalizer-owner-missing", report.SeverityError, 30*time.Second, owner),
		finding("", "Namespace", "old", "stuck-terminating", "namespace-discovery-failed", report.SeverityWarning, time.Hour, nil),
	)
	a := newAuditor(t, &scripted{reports: []*report.Report{r}, errs: []error{nil}}, io.Discard)
	a.RunCycle(t.Context())
	got := metricsText(t, a)
	for _, want := range []string{
		`workloaddoctor_findings{check="stuck-terminating",kind="Pod",namespace="shop",root_cause="finalizer-owner-missing",severity="error"} 2`,
		`workloaddoctor_findings{check="stuck-terminating",kind="Namespace",namespace="",root_cause="namespace-discovery-failed",severity="warning"} 1`,
		`workloaddoctor_finding_age_seconds{check="stuck-terminating",daemonset="",deployment="",kind="Pod",name="web-1",namespace="shop",owner_kind="ReplicaSet",owner_name="web-5d8",pod="web-1",root_cause="finalizer-owner-missing",severity="error",statefulset=""} 90`,
		`workloaddoctor_finding_age_seconds{check="stuck-terminating",daemonset="",deployment="",kind="Namespace",name="old",namespace="",owner_kind="",owner_name="",pod="",root_cause="namespace-discovery-failed",severity="warning",statefulset=""} 3600`,
		`workloaddoctor_scans_total{result="success"} 1`,
		`workloaddoctor_scans_total{result="error"} 0`,
		`workloaddoctor_coverage_complete 1`,
		`workloaddoctor_leader 0`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("metrics lack\n  %s\ngot:\n%s", want, got)
		}
	}
	if n := strings.Count(got, "workloaddoctor_finding_age_seconds{"); n != 3 {
		t.Errorf("%d finding age series, want 3:\n%s", n, got)
	}
}

// A cycle that failed or could not look keeps the last good findings; the next good one replaces them.
func TestFailedCycleKeepsLastGoodOutputs(t *testing.T) {
	stuck := finding("shop", "Pod", "web-1", "stuck-terminating", "finalizer-owner-missing", report.SeverityError, time.Minute, nil)
	blind := looked
	blind.Unread = []report.InputNote{{Input: "pods", Reason: "the server is currently unable to handle the request"}}
	s := &scripted{
		reports: []*report.Report{nil, newReport(looked, stuck), nil, newReport(blind), newReport(looked)},
		errs:    []error{errors.New("connection refused"), nil, errors.New("connection refused"), nil, nil},
	}
	var logs bytes.Buffer
	a := newAuditor(t, s, &logs)
	const series = `workloaddoctor_findings{check="stuck-terminating",kind="Pod",namespace="shop",root_cause="finalizer-owner-missing",severity="error"} 1`

	if c := a.RunCycle(t.Context()); !c.Failed() || a.Ready() || probe(a, "/readyz") != 503 || probe(a, "/healthz") != 200 {
		t.Fatalf("after a failed first cycle: failed=%v ready=%v readyz=%d", c.Failed(), a.Ready(), probe(a, "/readyz"))
	}
	a.RunCycle(t.Context())
	if !a.Ready() || probe(a, "/readyz") != 200 || !strings.Contains(metricsText(t, a), series) {
		t.Fatalf("after a good cycle: ready=%v metrics:\n%s", a.Ready(), metricsText(t, a))
	}
	for i, why := range []string{"unreachable", "blind"} {
		c := a.RunCycle(t.Context())
		got := metricsText(t, a)
		if !c.Failed() || !strings.Contains(got, series) || !strings.Contains(got, "workloaddoctor_coverage_complete 0") {
			t.Errorf("%s cycle: failed=%v, metrics:\n%s", why, c.Failed(), got)
		}
		if want := `workloaddoctor_scans_total{result="error"} ` + string(rune('2'+i)); !strings.Contains(got, want) {
			t.Errorf("%s cycle: want %s in\n%s", why, want, got)
		}
	}
	a.RunCycle(t.Context())
	got := metricsText(t, a)
	if strings.Contains(got, "workloaddoctor_findings{") || strings.Contains(got, "workloaddoctor_finding_age_seconds{") {
		t.Errorf("resolved finding still published:\n%s", got)
	}
	if !strings.Contains(got, `workloaddoctor_scans_total{result="success"} 2`) || !strings.Contains(got, "workloaddoctor_coverage_complete 1") {
		t.Errorf("after the last good cycle:\n%s", got)
	}

	// One JSON line per cycle; failed ones say why and that the last outputs were kept.
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 5 {
		t.Fatalf("%d log lines, want 5:\n%s", len(lines), logs.String())
	}
	var blindLine map[string]any
	if err := json.Unmarshal([]byte(lines[3]), &blindLine); err != nil {
		t.Fatal(err)
	}
	if blindLine["level"] != "ERROR" || !strings.Contains(blindLine["coverage"].(string), "could not read pods") || blindLine["failedCycles"] != float64(3) {
		t.Errorf("blind cycle's log line = %s", lines[3])
	}
	if !strings.Contains(lines[1], `"findings":1`) || !strings.Contains(lines[1], `"coverage":"complete"`) {
		t.Errorf("good cycle's log line = %s", lines[1])
	}
}

// A degraded scan still looked: its findings are published, with coverage 0.
func TestDegradedScanPublishesWithIncompleteCoverage(t *testing.T) {
	cov := looked
	cov.Degraded = []report.Note{{Check: "stuck-terminating", Reason: "events unreadable"}}
	stuck := finding("shop", "Pod", "web-1", "stuck-terminating", "finalizer-owner-missing", report.SeverityError, time.Minute, nil)
	var logs bytes.Buffer
	a := newAuditor(t, &scripted{reports: []*report.Report{newReport(cov, stuck)}, errs: []error{nil}}, &logs)
	if c := a.RunCycle(t.Context()); c.Failed() {
		t.Fatal("a degraded scan counted as failed")
	}
	got := metricsText(t, a)
	if !strings.Contains(got, "workloaddoctor_coverage_complete 0") || !strings.Contains(got, `workloaddoctor_scans_total{result="success"} 1`) ||
		!strings.Contains(got, "workloaddoctor_findings{") {
		t.Errorf("metrics:\n%s", got)
	}
	if !strings.Contains(logs.String(), "stuck-terminating degraded: events unreadable") {
		t.Errorf("log: %s", logs.String())
	}
}

// Same-named kinds of two groups must not make the scrape fail on a duplicate series.
func TestDuplicateAgeSeriesDoNotBreakTheScrape(t *testing.T) {
	a1 := finding("shop", "Widget", "w", "stuck-terminating", "finalizer-owner-not-acting", report.SeverityWarning, time.Minute, nil)
	a2 := a1
	a2.Object.APIVersion, a2.Object.UID = "other.example.com/v1", "other"
	m := NewMetrics()
	m.observe(Cycle{Report: newReport(looked, a1, a2)})
	mfs, err := m.Registry.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	got := map[string]int{}
	for _, mf := range mfs {
		got[mf.GetName()] = len(mf.GetMetric())
	}
	if got["workloaddoctor_findings"] != 1 || got["workloaddoctor_finding_age_seconds"] != 1 || mfs == nil {
		t.Errorf("series per metric = %v, want one count (of 2) and one age", got)
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	if _, err := New(Options{Interval: time.Minute, Metrics: NewMetrics()}); err == nil {
		t.Error("no scanner accepted")
	}
	s := &scripted{}
	if _, err := New(Options{Scan: s.scan, Metrics: NewMetrics()}); err == nil {
		t.Error("zero interval accepted")
	}
}

// Run cycles until its context ends and then returns.
func TestRunStopsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	calls := 0
	a, err := New(Options{Interval: time.Millisecond, Metrics: NewMetrics(), Scan: func(context.Context) (*report.Report, error) {
		calls++
		if calls == 3 {
			cancel()
		}
		return newReport(looked), nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Run(ctx); err != nil || calls != 3 {
		t.Errorf("Run = %v after %d cycles, want nil after 3", err, calls)
	}
}

// syncCounter records which reports it was asked to sync.
type syncCounter struct{ findings []int }

func (s *syncCounter) Sync(_ context.Context, r *report.Report) (int, int, error) {
	s.findings = append(s.findings, len(r.Findings))
	return len(r.Findings), 0, nil
}

// Only a leader that looked writes: not a standby, not a failed cycle.
func TestReportsWrittenOnlyByALeaderAfterAGoodCycle(t *testing.T) {
	stuck := finding("shop", "Pod", "web-1", "stuck-terminating", "finalizer-owner-missing", report.SeverityError, time.Minute, nil)
	s := &scripted{
		reports: []*report.Report{newReport(looked, stuck), newReport(looked, stuck), nil, newReport(looked)},
		errs:    []error{nil, nil, errors.New("connection refused"), nil},
	}
	pub := &syncCounter{}
	leader := false
	var logs bytes.Buffer
	a, err := New(Options{Scan: s.scan, Interval: time.Minute, Metrics: NewMetrics(), Reports: pub,
		Leading: func() bool { return leader }, Log: slog.New(slog.NewJSONHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	a.RunCycle(t.Context()) // standby
	leader = true
	a.RunCycle(t.Context()) // leader, one finding
	a.RunCycle(t.Context()) // leader, failed
	a.RunCycle(t.Context()) // leader, resolved
	if fmt.Sprint(pub.findings) != "[1 0]" {
		t.Errorf("syncs with %v findings, want [1 0] (the leader's good cycles only)", pub.findings)
	}
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if !strings.Contains(lines[0], `"leader":false`) || strings.Contains(lines[0], "reportsApplied") ||
		!strings.Contains(lines[1], `"leader":true`) || !strings.Contains(lines[1], `"reportsApplied":1`) {
		t.Errorf("log lines:\n%s", logs.String())
	}
}

// A check that could not read an input it detects from keeps its earlier findings in the
// metrics until a cycle covers it again; one degraded only in its evidence does not.
func TestMetricsKeepFindingsACheckCouldNotLookFor(t *testing.T) {
	held := finding("shop", "Widget", "w", "stuck-terminating", "finalizer-owner-not-acting", report.SeverityWarning, time.Minute, nil)
	pod := finding("shop", "Pod", "web-1", "stuck-terminating", "finalizer-owner-missing", report.SeverityError, time.Minute, nil)
	forbidden, evidence := looked, looked
	forbidden.Degraded = []report.Note{{Check: "stuck-terminating", Reason: "forbidden: list example.com/widgets", Inputs: []string{"objects"}}}
	evidence.Degraded = []report.Note{{Check: "stuck-terminating", Reason: "events unreadable", Inputs: []string{"events"}}}
	later := newReport(forbidden, pod)
	later.Metadata.GeneratedAt = t0.Add(time.Hour)
	s := &scripted{
		reports: []*report.Report{newReport(looked, held, pod), later, newReport(forbidden), newReport(evidence, pod), newReport(looked)},
		errs:    make([]error, 5),
	}
	a := newAuditor(t, s, io.Discard)
	widget := `workloaddoctor_finding_age_seconds{check="stuck-terminating",daemonset="",deployment="",kind="Widget",name="w",namespace="shop",owner_kind="",owner_name="",pod="",root_cause="finalizer-owner-not-acting",severity="warning",statefulset=""}`
	for i, want := range []struct {
		widget   string // the Widget's age series, "" absent
		findings int
	}{
		{widget + " 60", 2},
		{widget + " 3660", 2}, // not read this cycle: kept, its age measured at the cycle
		{widget + " 60", 2},   // neither found again: both kept
		{"", 1},               // only the events unread: the scan vouches for what it did not find
		{"", 0},
	} {
		a.RunCycle(t.Context())
		got := metricsText(t, a)
		if n := strings.Count(got, "workloaddoctor_finding_age_seconds{"); n != want.findings {
			t.Errorf("cycle %d: %d age series, want %d:\n%s", i+1, n, want.findings, got)
		}
		if has := strings.Contains(got, widget); has != (want.widget != "") || (has && !strings.Contains(got, want.widget)) {
			t.Errorf("cycle %d: want %q in:\n%s", i+1, want.widget, got)
		}
	}
}

// A cycle whose reports could not all be written looked, so its findings are published, but
// it is counted as an error and is no success to alert on.
func TestCycleWithUnwrittenReportsIsAnError(t *testing.T) {
	stuck := finding("shop", "Pod", "web-1", "stuck-terminating", "finalizer-owner-missing", report.SeverityError, time.Minute, nil)
	a, err := New(Options{Interval: time.Minute, Metrics: NewMetrics(), Log: slog.New(slog.NewJSONHandler(io.Discard, nil)),
		Scan:    func(context.Context) (*report.Report, error) { return newReport(looked, stuck), nil },
		Reports: failingSync{}})
	if err != nil {
		t.Fatal(err)
	}
	if c := a.RunCycle(t.Context()); c.PublishErr == nil {
		t.Fatal("the sync's error was not recorded")
	}
	got := metricsText(t, a)
	for _, want := range []string{`workloaddoctor_scans_total{result="error"} 1`, `workloaddoctor_scans_total{result="success"} 0`,
		`workloaddoctor_findings{check="stuck-terminating"`} {
		if !strings.Contains(got, want) {
			t.Errorf("metrics lack %s:\n%s", want, got)
		}
	}
	if strings.Contains(got, "\nworkloaddoctor_last_success_timestamp_seconds ") && !strings.Contains(got, "\nworkloaddoctor_last_success_timestamp_seconds 0\n") {
		t.Errorf("a cycle without its reports set the last success:\n%s", got)
	}
}

type failingSync struct{}

func (failingSync) Sync(context.Context, *report.Report) (int, int, error) {
	return 0, 0, errors.New("reports.openreports.io is forbidden")
}
