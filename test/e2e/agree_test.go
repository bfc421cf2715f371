package e2e

import (
	"slices"
	"strings"
	"testing"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// These tests need no cluster: they hold agreed's retry (settle) and its comparison (answers) to
// reports built the way a rollout the ReplicaSet controller cannot create pods for is reported.

// stuckRollout is the scan's report on a Deployment whose surge pod a webhook refuses, with the
// FailedCreate events the ReplicaSet controller has recorded so far: one per refused create
// (k8s.io/kubernetes v1.37.1 pkg/controller/controller_utils.go, RealPodControl.createPods),
// counted on one event while the message stays the same (client-go tools/record
// events_cache.go, EventCorrelate).
func stuckRollout(events ...string) *report.Report {
	evidence := append([]string{
		"Deployment rw-no-endpoints/web: 0 of 1 pods to update are on revision web-7c9d8f6b5d, 0 of them ready",
		"condition Progressing=False reason ProgressDeadlineExceeded",
	}, events...)
	return &report.Report{Findings: []report.Finding{{
		ID: "rs-3f2a9c1e", Check: "rollout-stalled", Severity: report.SeverityError,
		Object:    report.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "rw-no-endpoints", Name: "web", UID: "0b7f6a3e-2d41-4c55-9e0a-6f1d2c3b4a59"},
		RootCause: report.RootCause{ID: "admission-webhook-unavailable", Evidence: evidence},
		BlockedBy: []report.BlockRef{{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingWebhookConfiguration", Name: "rw-no-endpoints"}},
	}}}
}

const (
	noEndpoints = `event Warning FailedCreate from replicaset-controller (x%s, last %s ago): Error creating: Internal error occurred: failed calling webhook "validate.rw-no-endpoints.e2e.example.com": failed to call webhook: Post "https://rw-idle.rw-hooks.svc:443/?timeout=2s": no endpoints available for service "rw-idle"`
	deadline    = `event Warning FailedCreate from replicaset-controller (x%s, last %s ago): Error creating: Internal error occurred: failed calling webhook "validate.rw-no-endpoints.e2e.example.com": failed to call webhook: Post "https://rw-idle.rw-hooks.svc:443/?timeout=2s": context deadline exceeded`
)

func event(format, count, age string) string {
	return strings.Replace(strings.Replace(format, "%s", count, 1), "%s", age, 1)
}

// look is every answer of one look telling the same state: the scan, why on its object, and the
// offline replay.
func look(code int, scan, why, offline *report.Report) answers {
	return answers{code: code, scan: scan, why: []whyAnswer{{findings: scan.Findings, doc: why}}, offline: offline}
}

func TestAnswersStaleScanDiffers(t *testing.T) {
	// The scan read one FailedCreate event; the controller recorded another before why and the
	// capture read theirs.
	stale := stuckRollout(event(noEndpoints, "3", "2s"))
	moved := stuckRollout(event(noEndpoints, "4", "1s"), event(deadline, "1", "0s"))
	problems := look(2, stale, moved, moved).differs(2)
	if len(problems) != 2 || !strings.Contains(problems[0], "why") || !strings.Contains(problems[1], "offline") {
		t.Fatalf("want why and the offline scan to differ from the stale scan, got %q", problems)
	}
	for _, p := range problems {
		if !strings.Contains(p, "context deadline exceeded") {
			t.Errorf("the difference does not show the event the scan missed: %s", p)
		}
	}

	// A fresh scan of the same state agrees, its ages and counts moved on.
	fresh := stuckRollout(event(noEndpoints, "5", "3s"), event(deadline, "2", "1s"))
	if problems := look(2, fresh, moved, moved).differs(2); len(problems) != 0 {
		t.Errorf("a fresh scan of the same state differs: %q", problems)
	}
	// It judges the same scan the test judged: another exit code is a difference.
	if problems := look(0, fresh, moved, moved).differs(2); len(problems) != 1 || !strings.Contains(problems[0], "exited 0") {
		t.Errorf("want the moved exit code named, got %q", problems)
	}
	// A test that polls accepted 0 or 2 of its scan (a deletion becoming overdue): a fresh scan
	// that now reports the finding stands in for it.
	if problems := look(2, fresh, moved, moved).differs(0, 2); len(problems) != 0 {
		t.Errorf("a fresh scan with an accepted exit code differs: %q", problems)
	}
	// The comparison stays strict: a lost line, a root cause, a blocker are differences.
	lost := stuckRollout(event(noEndpoints, "5", "3s"))
	other := stuckRollout(event(noEndpoints, "5", "3s"), event(deadline, "2", "1s"))
	other.Findings[0].RootCause.ID = "admission-webhook-refused"
	unblocked := stuckRollout(event(noEndpoints, "5", "3s"), event(deadline, "2", "1s"))
	unblocked.Findings[0].BlockedBy = nil
	for name, why := range map[string]*report.Report{"lost": lost, "root cause": other, "blockedBy": unblocked} {
		if problems := look(2, fresh, why, moved).differs(2); len(problems) != 1 {
			t.Errorf("%s: want why's difference alone, got %q", name, problems)
		}
	}
}

func TestAnswersWithoutCaptureStopShort(t *testing.T) {
	// gather captures only once why agrees: a look without its offline report is judged on why.
	rep := stuckRollout(event(noEndpoints, "3", "2s"))
	if problems := (answers{code: 2, scan: rep, why: []whyAnswer{{findings: rep.Findings, doc: rep}}}).differs(2); len(problems) != 0 {
		t.Errorf("why agrees, got %q", problems)
	}
}

func TestSettleRescansUntilAnswersAgree(t *testing.T) {
	stale := stuckRollout(event(noEndpoints, "3", "2s"))
	moved := stuckRollout(event(noEndpoints, "4", "1s"), event(deadline, "1", "0s"))
	settled := stuckRollout(event(noEndpoints, "4", "1s"), event(deadline, "1", "0s"), event(deadline, "1", "0s"))
	differs := func(a answers) []string { return a.differs(2) }

	for _, tc := range []struct {
		name    string
		looks   []answers // the caller's, then each fresh look
		rescans int
		want    *report.Report // the report settle returns
		extra   int
		differ  bool
	}{
		{name: "the first look agrees", looks: []answers{look(2, moved, moved, moved)}, rescans: 3, want: moved},
		{name: "the scan was stale", looks: []answers{look(2, stale, moved, moved), look(2, moved, moved, moved)}, rescans: 3, want: moved, extra: 1},
		{name: "why was stale, then the state moved on", rescans: 3, want: settled, extra: 2, looks: []answers{
			look(2, moved, stale, nil), look(2, moved, moved, settled), look(2, settled, settled, settled)}},
		{name: "never agrees", rescans: 2, want: moved, extra: 2, differ: true, looks: []answers{
			look(2, stale, moved, moved), look(2, stale, moved, moved), look(2, moved, stale, nil)}},
		{name: "the exit code moved", rescans: 1, want: moved, extra: 1, differ: true, looks: []answers{
			look(2, stale, moved, moved), look(0, moved, moved, moved)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var seen [][]string
			got, extra, problems := settle(tc.rescans, tc.looks[0], differs, func(n int, problems []string) answers {
				seen = append(seen, problems)
				return tc.looks[n]
			})
			if got.scan != tc.want || extra != tc.extra || (len(problems) > 0) != tc.differ {
				t.Errorf("settle: the scan with %d evidence lines after %d rescans, differing %q; want %d lines after %d",
					len(got.scan.Findings[0].RootCause.Evidence), extra, problems, len(tc.want.Findings[0].RootCause.Evidence), tc.extra)
			}
			// Each fresh look is taken because of the last one's differences, and told them.
			for i, p := range seen {
				if want := differs(tc.looks[i]); !slices.Equal(p, want) {
					t.Errorf("look %d was told %q, want %q", i+1, p, want)
				}
			}
		})
	}
}
