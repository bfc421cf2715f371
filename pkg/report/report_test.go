package report

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestFindingIDStable(t *testing.T) {
	pod := ObjectRef{APIVersion: "v1", Kind: "Pod", Namespace: "shop", Name: "web-7", UID: "0b7c-11"}
	id := FindingID(pod, "stuck-terminating", "node-missing")
	if !strings.HasPrefix(id, "wd-") || len(id) != 13 {
		t.Fatalf("id %q: want wd- and 10 hex digits", id)
	}
	// The resourceVersion and the name do not change the ID: the UID identifies the object.
	moved := pod
	moved.ResourceVersion, moved.Name = "999", "renamed"
	if got := FindingID(moved, "stuck-terminating", "node-missing"); got != id {
		t.Errorf("ID changed with resourceVersion/name: %s vs %s", got, id)
	}
	for _, other := range []string{
		FindingID(pod, "stuck-terminating", "node-not-ready"),
		FindingID(pod, "stuck-preparing-normal", "node-missing"),
		FindingID(ObjectRef{APIVersion: "v1", Kind: "Pod", Namespace: "shop", Name: "web-7", UID: "other"}, "stuck-terminating", "node-missing"),
	} {
		if other == id {
			t.Errorf("different finding got the same ID %s", id)
		}
	}
	// Without a UID the object's coordinates identify it.
	noUID := ObjectRef{APIVersion: "v1", Kind: "Namespace", Name: "a"}
	if FindingID(noUID, "c", "r") == FindingID(ObjectRef{APIVersion: "v1", Kind: "Namespace", Name: "b"}, "c", "r") {
		t.Error("objects without UID collide")
	}
}

func TestNormalizeNeverNull(t *testing.T) {
	r := &Report{Findings: []Finding{{Check: "c", Severity: SeverityWarning, Object: ObjectRef{Kind: "Pod", Name: "p", UID: "u"}, RootCause: RootCause{ID: "r"}}}}
	r.Normalize()
	raw, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{`"fixes":null`, `"references":null`, `"evidence":null`, `"skipped":null`, `"degraded":null`, `"checks":null`} {
		if strings.Contains(string(raw), field) {
			t.Errorf("report has %s: %s", field, raw)
		}
	}
	if strings.Contains(string(raw), `"owner"`) {
		t.Errorf("absent owner is printed: %s", raw)
	}
	if r.Summary != (Summary{Total: 1, Warning: 1}) || !r.Coverage.Complete || r.Findings[0].ID == "" {
		t.Errorf("normalize: summary %+v, coverage %+v, id %q", r.Summary, r.Coverage, r.Findings[0].ID)
	}
	empty := &Report{}
	empty.Normalize()
	raw, _ = json.Marshal(empty)
	if !strings.Contains(string(raw), `"findings":[]`) || empty.APIVersion != APIVersion || empty.Kind != Kind {
		t.Errorf("empty report: %s", raw)
	}
	r.Coverage.Degraded = []Note{{Check: "c", Reason: "forbidden"}}
	r.Normalize()
	if r.Coverage.Complete {
		t.Error("coverage with a degraded check is complete")
	}
}

func TestAtOrAbove(t *testing.T) {
	r := &Report{Findings: []Finding{{Severity: SeverityError}, {Severity: SeverityWarning}, {Severity: SeverityInfo}}}
	for sev, want := range map[Severity]int{SeverityError: 1, SeverityWarning: 2, SeverityInfo: 3} {
		if got := r.AtOrAbove(sev); got != want {
			t.Errorf("AtOrAbove(%s) = %d, want %d", sev, got, want)
		}
	}
}

func TestCoverageBlind(t *testing.T) {
	for _, tc := range []struct {
		name string
		cov  Coverage
		want string
	}{
		{"looked", Coverage{Checks: []string{"a"}}, ""},
		{"a check skipped for RBAC, another ran", Coverage{Checks: []string{"a"}, Skipped: []Note{{Check: "b", Reason: "forbidden: list nodes"}}}, ""},
		{"degraded only", Coverage{Checks: []string{"a"}, Degraded: []Note{{Check: "a", Reason: "list events: 500"}}}, ""},
		{"an input unread", Coverage{Checks: []string{"a"}, Unread: []InputNote{{Input: "pods", Reason: "list pods: 500"}}}, "could not read pods (list pods: 500)"},
		{"no check ran", Coverage{Checks: []string{}, Skipped: []Note{{Check: "a", Reason: "forbidden: list pods"}}}, "no check could run (a: forbidden: list pods)"},
	} {
		if got := tc.cov.Blindness(); got != tc.want {
			t.Errorf("%s: Blindness() = %q, want %q", tc.name, got, tc.want)
		}
		if got := tc.cov.Looked(); got != (tc.want == "") {
			t.Errorf("%s: Looked() = %v", tc.name, got)
		}
	}
}
