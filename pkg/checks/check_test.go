package checks

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// stubCheck is a check defined by the test, to exercise the framework without the real checks.
type stubCheck struct {
	info    Info
	runs    int
	gotAge  time.Duration
	finding bool
}

func (c *stubCheck) Info() Info { return c.info }

func (c *stubCheck) Run(s *snapshot.Snapshot, threshold time.Duration) []report.Finding {
	c.runs++
	c.gotAge = threshold
	if !c.finding {
		return nil
	}
	return []report.Finding{NewFinding(c.info, Draft{RootCause: "rc", Object: report.ObjectRef{Kind: "Pod", Name: "p", UID: "u"}})}
}

func stub(id string, needs ...Need) *stubCheck {
	return &stubCheck{info: Info{ID: id, Threshold: 5 * time.Minute, Needs: needs,
		RootCauses: []RootCause{{ID: "rc", Severity: report.SeverityWarning, References: []string{"ref#1"}}}}}
}

func TestEmptyRegistry(t *testing.T) {
	r := NewRegistry()
	if len(r.All()) != 0 || len(r.IDs()) != 0 {
		t.Fatal("empty registry lists checks")
	}
	got, err := r.Select(nil, nil)
	if err != nil || len(got) != 0 {
		t.Fatalf("Select on empty registry = %v, %v", got, err)
	}
	if _, err := r.Select([]string{"nope"}, nil); err == nil {
		t.Fatal("unknown check accepted")
	}
}

func TestSelect(t *testing.T) {
	r := NewRegistry(stub("b"), stub("a"), stub("c"))
	if ids := strings.Join(r.IDs(), ","); ids != "a,b,c" {
		t.Errorf("IDs = %s, want sorted", ids)
	}
	got, err := r.Select([]string{"a", "c"}, []string{"c"})
	if err != nil || len(got) != 1 || got[0].Info().ID != "a" {
		t.Errorf("Select(a,c minus c) = %v, %v", got, err)
	}
	_, err = r.Select(nil, []string{"typo"})
	if err == nil || !strings.Contains(err.Error(), `"typo"`) || !strings.Contains(err.Error(), "a, b, c") {
		t.Errorf("unknown --skip-checks error = %v", err)
	}
}

func TestNeedsDeduplicates(t *testing.T) {
	cs := []Check{
		stub("a", Need{Input: snapshot.InputPods}, Need{Input: snapshot.InputNodes}),
		stub("b", Need{Input: snapshot.InputPods}, Need{Input: snapshot.InputEvents, Optional: true}),
	}
	got := Needs(cs)
	if len(got) != 3 {
		t.Errorf("Needs = %v, want pods, nodes, events once each", got)
	}
}

func TestRunCoverage(t *testing.T) {
	ok := stub("ok", Need{Input: snapshot.InputPods})
	ok.finding = true
	skipped := stub("skipped", Need{Input: snapshot.InputNodes})
	degraded := stub("degraded", Need{Input: snapshot.InputPods}, Need{Input: snapshot.InputControllerLogs, Optional: true})
	s := &snapshot.Snapshot{Unread: map[snapshot.Input]error{
		snapshot.InputNodes:          errors.New("forbidden: list nodes"),
		snapshot.InputControllerLogs: errors.New("forbidden: get pods/log"),
	}}
	s.Index()
	findings, cov := Run(s, []Check{ok, skipped, degraded}, -1)
	if skipped.runs != 0 {
		t.Error("a check whose required input is unread ran")
	}
	if ok.runs != 1 || degraded.runs != 1 {
		t.Error("checks with their inputs did not run")
	}
	if ok.gotAge != 5*time.Minute {
		t.Errorf("threshold = %v, want the check's own", ok.gotAge)
	}
	if len(cov.Skipped) != 1 || cov.Skipped[0].Check != "skipped" || cov.Skipped[0].Reason != "forbidden: list nodes" ||
		strings.Join(cov.Skipped[0].Inputs, ",") != string(snapshot.InputNodes) {
		t.Errorf("skipped = %+v", cov.Skipped)
	}
	if len(cov.Degraded) != 1 || cov.Degraded[0].Check != "degraded" || strings.Join(cov.Degraded[0].Inputs, ",") != string(snapshot.InputControllerLogs) {
		t.Errorf("degraded = %+v", cov.Degraded)
	}
	if snapshot.Hides(snapshot.InputControllerLogs) || !snapshot.Hides(snapshot.InputNodes) {
		t.Error("controller logs only add evidence; nodes are detected from")
	}
	if strings.Join(cov.Checks, ",") != "ok,degraded" {
		t.Errorf("checks that ran = %v", cov.Checks)
	}
	if len(findings) != 1 || findings[0].Severity != report.SeverityWarning || findings[0].RootCause.References[0] != "ref#1" {
		t.Errorf("findings = %+v", findings)
	}
	s.Limits = map[snapshot.Input]string{snapshot.InputPods: "secrets not listed"}
	_, cov = Run(s, []Check{ok}, 0)
	if len(cov.Notes) != 1 || cov.Notes[0].Check != "ok" || len(cov.Skipped)+len(cov.Degraded) != 0 {
		t.Errorf("a deliberate limit must be a note, not a gap: %+v", cov)
	}
	if ok.gotAge != 0 {
		t.Errorf("--min-age 0s did not override the threshold: %v", ok.gotAge)
	}
}

// An input unread for a reason other than a stated limit (RBAC) is named in coverage.Unread, once,
// when a check detects from it, optional or not; evidence-only inputs and denials are not.
func TestRunCoverageUnread(t *testing.T) {
	a := stub("a", Need{Input: snapshot.InputPods}, Need{Input: snapshot.InputEvents, Optional: true},
		Need{Input: snapshot.InputObjects, Optional: true})
	b := stub("b", Need{Input: snapshot.InputPods}, Need{Input: snapshot.InputNodes})
	s := &snapshot.Snapshot{Unread: map[snapshot.Input]error{
		snapshot.InputPods:    errors.New("list pods: Internal error (tried 5 times)"),
		snapshot.InputEvents:  errors.New("list events: Internal error (tried 5 times)"),
		snapshot.InputNodes:   &snapshot.UnreadError{Input: snapshot.InputNodes, Err: errors.New("forbidden: list nodes"), Limit: true},
		snapshot.InputObjects: errors.New("failed: list example.com/widgets (Internal error (tried 5 times))"),
	}}
	s.Index()
	_, cov := Run(s, []Check{a, b}, -1)
	if len(cov.Unread) != 2 || cov.Unread[0].Input != "pods" || !strings.Contains(cov.Unread[0].Reason, "tried 5 times") || cov.Unread[1].Input != "objects" {
		t.Errorf("unread = %+v, want pods and objects", cov.Unread)
	}
	delete(s.Unread, snapshot.InputObjects)
	delete(s.Unread, snapshot.InputPods)
	if _, cov = Run(s, []Check{a, b}, -1); len(cov.Unread) != 0 || len(cov.Degraded) != 1 {
		t.Errorf("unread %+v, degraded %+v; want no unread input and a degraded by the events", cov.Unread, cov.Degraded)
	}
}
