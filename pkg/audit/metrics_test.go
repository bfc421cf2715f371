package audit

import (
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// exposition scrapes m's registry as Prometheus does and keeps the auditor's own families, HELP
// and TYPE lines included; the Go runtime's and the process's vary from run to run.
func exposition(t *testing.T, m *Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	var keep []string
	for _, l := range strings.Split(rec.Body.String(), "\n") {
		if strings.HasPrefix(strings.TrimPrefix(strings.TrimPrefix(l, "# HELP "), "# TYPE "), "workloaddoctor_") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n") + "\n"
}

// The whole exposition of a small known state, byte for byte: names, HELP, TYPE, labels, values
// and order are the contract (docs/contract.md, "Auditor") that dashboards and alerts rely on.
func TestExpositionOfAKnownState(t *testing.T) {
	owner := &report.ObjectRef{APIVersion: "apps/v1", Kind: "ReplicaSet", Namespace: "shop", Name: "web-5d8"}
	widget := finding("shop", "Widget", "w", "stuck-terminating", "finalizer-owner-not-acting", report.SeverityWarning, time.Minute, nil)
	otherWidget := widget
	otherWidget.Object.APIVersion, otherWidget.Object.UID = "other.example.com/v1", "other"
	// The apps/v1 workloads are named in the label kube-state-metrics gives their kind; an
	// OpenKruise StatefulSet of the same name, and a pod whose owner is a StatefulSet, are not.
	apps := func(group, kind, name, cause string) report.Finding {
		f := finding("shop", kind, name, "rollout-stalled", cause, report.SeverityError, 20*time.Minute, nil)
		f.Object.APIVersion, f.Object.UID = group, group+"/"+name
		return f
	}
	dbOwner := &report.ObjectRef{APIVersion: "apps/v1", Kind: "StatefulSet", Namespace: "shop", Name: "db"}
	good := newReport(looked,
		finding("shop", "Pod", "web-1", "stuck-terminating", "finalizer-owner-missing", report.SeverityError, 90*time.Second, owner),
		finding("shop", "Pod", "web-2", "stuck-terminating", "finalizer-owner-missing", report.SeverityError, 30*time.Second, owner),
		finding("", "Namespace", "old", "stuck-terminating", "namespace-discovery-failed", report.SeverityWarning, time.Hour, nil),
		widget, otherWidget,
		apps("apps/v1", "Deployment", "web", "image-pull-failing"),
		apps("apps/v1", "StatefulSet", "db", "statefulset-broken-pod"),
		apps("apps.kruise.io/v1beta1", "StatefulSet", "db", "pods-unschedulable"),
		apps("apps/v1", "DaemonSet", "agent", "daemonset-nodes-unavailable"),
		finding("shop", "Pod", "db-0", "stuck-terminating", "finalizer-owner-missing", report.SeverityError, time.Minute, dbOwner),
	)
	// Accepted findings are counted apart, by check, root cause and namespace, and not as findings.
	accepted := finding("shop", "Pod", "web-9", "stuck-terminating", "finalizer-owner-missing", report.SeverityError, time.Minute, owner)
	good.Suppressed = []report.Suppressed{{Finding: accepted, Reason: "vendor"}, {Finding: accepted, Reason: "vendor"}}
	m := NewMetrics()
	m.SetLeader(true)
	m.observe(Cycle{Report: good, Finished: t0, Duration: 1500 * time.Millisecond})
	m.CountFix("delete-pod", "applied")
	m.CountFix("delete-pod", "applied")
	m.CountFix("remove-finalizer", "failed")
	m.observe(Cycle{Err: errors.New("connection refused"), Finished: t0.Add(time.Minute), Duration: 30 * time.Second})

	const want = `# HELP workloaddoctor_coverage_complete 1 when the last scan read everything its checks need, else 0.
# TYPE workloaddoctor_coverage_complete gauge
workloaddoctor_coverage_complete 0
# HELP workloaddoctor_finding_age_seconds How long each current finding's object has been stuck, as of the last complete scan.
# TYPE workloaddoctor_finding_age_seconds gauge
workloaddoctor_finding_age_seconds{check="rollout-stalled",daemonset="",deployment="",kind="StatefulSet",name="db",namespace="shop",owner_kind="",owner_name="",pod="",root_cause="pods-unschedulable",severity="error",statefulset=""} 1200
workloaddoctor_finding_age_seconds{check="rollout-stalled",daemonset="",deployment="",kind="StatefulSet",name="db",namespace="shop",owner_kind="",owner_name="",pod="",root_cause="statefulset-broken-pod",severity="error",statefulset="db"} 1200
workloaddoctor_finding_age_seconds{check="rollout-stalled",daemonset="",deployment="web",kind="Deployment",name="web",namespace="shop",owner_kind="",owner_name="",pod="",root_cause="image-pull-failing",severity="error",statefulset=""} 1200
workloaddoctor_finding_age_seconds{check="rollout-stalled",daemonset="agent",deployment="",kind="DaemonSet",name="agent",namespace="shop",owner_kind="",owner_name="",pod="",root_cause="daemonset-nodes-unavailable",severity="error",statefulset=""} 1200
workloaddoctor_finding_age_seconds{check="stuck-terminating",daemonset="",deployment="",kind="Namespace",name="old",namespace="",owner_kind="",owner_name="",pod="",root_cause="namespace-discovery-failed",severity="warning",statefulset=""} 3600
workloaddoctor_finding_age_seconds{check="stuck-terminating",daemonset="",deployment="",kind="Pod",name="db-0",namespace="shop",owner_kind="StatefulSet",owner_name="db",pod="db-0",root_cause="finalizer-owner-missing",severity="error",statefulset=""} 60
workloaddoctor_finding_age_seconds{check="stuck-terminating",daemonset="",deployment="",kind="Pod",name="web-1",namespace="shop",owner_kind="ReplicaSet",owner_name="web-5d8",pod="web-1",root_cause="finalizer-owner-missing",severity="error",statefulset=""} 90
workloaddoctor_finding_age_seconds{check="stuck-terminating",daemonset="",deployment="",kind="Pod",name="web-2",namespace="shop",owner_kind="ReplicaSet",owner_name="web-5d8",pod="web-2",root_cause="finalizer-owner-missing",severity="error",statefulset=""} 30
workloaddoctor_finding_age_seconds{check="stuck-terminating",daemonset="",deployment="",kind="Widget",name="w",namespace="shop",owner_kind="",owner_name="",pod="",root_cause="finalizer-owner-not-acting",severity="warning",statefulset=""} 60
# HELP workloaddoctor_findings Current findings of the last complete scan.
# TYPE workloaddoctor_findings gauge
workloaddoctor_findings{check="rollout-stalled",kind="DaemonSet",namespace="shop",root_cause="daemonset-nodes-unavailable",severity="error"} 1
workloaddoctor_findings{check="rollout-stalled",kind="Deployment",namespace="shop",root_cause="image-pull-failing",severity="error"} 1
workloaddoctor_findings{check="rollout-stalled",kind="StatefulSet",namespace="shop",root_cause="pods-unschedulable",severity="error"} 1
workloaddoctor_findings{check="rollout-stalled",kind="StatefulSet",namespace="shop",root_cause="statefulset-broken-pod",severity="error"} 1
workloaddoctor_findings{check="stuck-terminating",kind="Namespace",namespace="",root_cause="namespace-discovery-failed",severity="warning"} 1
workloaddoctor_findings{check="stuck-terminating",kind="Pod",namespace="shop",root_cause="finalizer-owner-missing",severity="error"} 3
workloaddoctor_findings{check="stuck-terminating",kind="Widget",namespace="shop",root_cause="finalizer-owner-not-acting",severity="warning"} 2
# HELP workloaddoctor_fixes_total Fix actions the auditor ran on its own, by action and result status (applied, refused, failed, ...).
# TYPE workloaddoctor_fixes_total counter
workloaddoctor_fixes_total{action="delete-pod",result="applied"} 2
workloaddoctor_fixes_total{action="remove-finalizer",result="failed"} 1
# HELP workloaddoctor_last_success_timestamp_seconds Unix time of the last successful scan.
# TYPE workloaddoctor_last_success_timestamp_seconds gauge
workloaddoctor_last_success_timestamp_seconds 1.7776368e+09
# HELP workloaddoctor_leader 1 on the replica that writes reports and fixes.
# TYPE workloaddoctor_leader gauge
workloaddoctor_leader 1
# HELP workloaddoctor_scan_duration_seconds Duration of each scan cycle, failed ones included.
# TYPE workloaddoctor_scan_duration_seconds histogram
workloaddoctor_scan_duration_seconds_bucket{le="0.25"} 0
workloaddoctor_scan_duration_seconds_bucket{le="0.5"} 0
workloaddoctor_scan_duration_seconds_bucket{le="1"} 0
workloaddoctor_scan_duration_seconds_bucket{le="2.5"} 1
workloaddoctor_scan_duration_seconds_bucket{le="5"} 1
workloaddoctor_scan_duration_seconds_bucket{le="10"} 1
workloaddoctor_scan_duration_seconds_bucket{le="20"} 1
workloaddoctor_scan_duration_seconds_bucket{le="40"} 2
workloaddoctor_scan_duration_seconds_bucket{le="80"} 2
workloaddoctor_scan_duration_seconds_bucket{le="160"} 2
workloaddoctor_scan_duration_seconds_bucket{le="320"} 2
workloaddoctor_scan_duration_seconds_bucket{le="+Inf"} 2
workloaddoctor_scan_duration_seconds_sum 31.5
workloaddoctor_scan_duration_seconds_count 2
# HELP workloaddoctor_scans_total Scan cycles by result: success, or error (the scan failed or could not read an input checks detect from).
# TYPE workloaddoctor_scans_total counter
workloaddoctor_scans_total{result="error"} 1
workloaddoctor_scans_total{result="success"} 1
# HELP workloaddoctor_suppressed_findings Findings of the last complete scan that exemptions (annotations or the --exemptions file) hold back; they are not in workloaddoctor_findings.
# TYPE workloaddoctor_suppressed_findings gauge
workloaddoctor_suppressed_findings{check="stuck-terminating",namespace="shop",root_cause="finalizer-owner-missing"} 2
`
	if got := exposition(t, m); got != want {
		t.Errorf("exposition:\n%s\nwant:\n%s", got, want)
	}
}

// Before any cycle every family but the per-series ones is there, both scan results included, so
// that rate() and increase() see the first error.
func TestExpositionBeforeAnyCycle(t *testing.T) {
	const want = `# HELP workloaddoctor_coverage_complete 1 when the last scan read everything its checks need, else 0.
# TYPE workloaddoctor_coverage_complete gauge
workloaddoctor_coverage_complete 0
# HELP workloaddoctor_last_success_timestamp_seconds Unix time of the last successful scan.
# TYPE workloaddoctor_last_success_timestamp_seconds gauge
workloaddoctor_last_success_timestamp_seconds 0
# HELP workloaddoctor_leader 1 on the replica that writes reports and fixes.
# TYPE workloaddoctor_leader gauge
workloaddoctor_leader 0
# HELP workloaddoctor_scan_duration_seconds Duration of each scan cycle, failed ones included.
# TYPE workloaddoctor_scan_duration_seconds histogram
workloaddoctor_scan_duration_seconds_bucket{le="0.25"} 0
workloaddoctor_scan_duration_seconds_bucket{le="0.5"} 0
workloaddoctor_scan_duration_seconds_bucket{le="1"} 0
workloaddoctor_scan_duration_seconds_bucket{le="2.5"} 0
workloaddoctor_scan_duration_seconds_bucket{le="5"} 0
workloaddoctor_scan_duration_seconds_bucket{le="10"} 0
workloaddoctor_scan_duration_seconds_bucket{le="20"} 0
workloaddoctor_scan_duration_seconds_bucket{le="40"} 0
workloaddoctor_scan_duration_seconds_bucket{le="80"} 0
workloaddoctor_scan_duration_seconds_bucket{le="160"} 0
workloaddoctor_scan_duration_seconds_bucket{le="320"} 0
workloaddoctor_scan_duration_seconds_bucket{le="+Inf"} 0
workloaddoctor_scan_duration_seconds_sum 0
workloaddoctor_scan_duration_seconds_count 0
# HELP workloaddoctor_scans_total Scan cycles by result: success, or error (the scan failed or could not read an input checks detect from).
# TYPE workloaddoctor_scans_total counter
workloaddoctor_scans_total{result="error"} 0
workloaddoctor_scans_total{result="success"} 0
`
	if got := exposition(t, NewMetrics()); got != want {
		t.Errorf("exposition:\n%s\nwant:\n%s", got, want)
	}
}

// A scraper that asks for the protobuf format gets the counters' and the histogram's created
// time, which it uses to tell a reset from a counter that never moved.
func TestCountersCarryTheirCreatedTime(t *testing.T) {
	m := NewMetrics()
	m.CountFix("delete-pod", "applied")
	mfs, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, mf := range mfs {
		for _, s := range mf.GetMetric() {
			var ct interface{ GetSeconds() int64 }
			switch {
			case s.GetCounter() != nil && strings.HasPrefix(mf.GetName(), "workloaddoctor_"):
				ct = s.GetCounter().GetCreatedTimestamp()
			case s.GetHistogram() != nil && strings.HasPrefix(mf.GetName(), "workloaddoctor_"):
				ct = s.GetHistogram().GetCreatedTimestamp()
			default:
				continue
			}
			seen++
			if ct.GetSeconds() <= 0 {
				t.Errorf("%s %v has no created time", mf.GetName(), s.GetLabel())
			}
		}
	}
	if seen != 4 {
		t.Errorf("%d counter and histogram series, want 4 (2 scans, 1 fix, the duration)", seen)
	}
}
