package audit

import (
	"strings"
	"testing"
	"time"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/fix"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

func rmFinalizer(name string) report.Fix {
	return report.Fix{Action: "remove-finalizer", Risk: report.RiskMedium, Params: map[string]string{"finalizer": name}}
}

// Only named root causes, never a high-risk action, at most max steps.
func TestSelectAutoFixes(t *testing.T) {
	var fs []report.Finding
	for _, n := range []string{"m1", "m2", "m3"} {
		f := finding("capi", "Machine", n, "stuck-terminating", "finalizer-owner-missing", report.SeverityError, time.Hour, nil)
		f.Object.APIVersion, f.Object.ResourceVersion, f.Fixes = "cluster.x-k8s.io/v1beta1", "7", []report.Fix{rmFinalizer("machine.cluster.x-k8s.io")}
		fs = append(fs, f)
	}
	other := finding("shop", "ConfigMap", "cfg", "stuck-terminating", "finalizer-owner-not-acting", report.SeverityWarning, time.Hour, nil)
	other.Fixes = []report.Fix{rmFinalizer("example.com/x")} // a fix, but its root cause is not named
	forced := finding("shop", "Pod", "web-1", "stuck-terminating", "node-not-ready", report.SeverityError, time.Hour, nil)
	forced.Object.ResourceVersion = "9"
	forced.Fixes = []report.Fix{{Action: "force-delete", Risk: report.RiskHigh}}
	r := newReport(looked, append(fs, other, forced)...)
	cat := fix.NewCatalog()

	steps, refused := SelectAutoFixes(cat, r.Findings, map[string]bool{"finalizer-owner-missing": true, "node-not-ready": true}, 2)
	var got []string
	for _, s := range steps {
		got = append(got, s.Action+" "+s.Target.Name)
	}
	if strings.Join(got, ",") != "remove-finalizer m1,remove-finalizer m2" {
		t.Errorf("steps = %v, want the first two Machines' finalizer removals", got)
	}
	if len(refused) != 1 || refused[0].Action != "force-delete" || refused[0].Status != fix.StatusRefused || !strings.Contains(refused[0].Reason, "high risk") {
		t.Errorf("refused = %+v, want the force-delete refused as high risk", refused)
	}
	if steps, refused := SelectAutoFixes(cat, r.Findings, map[string]bool{"namespace-content-remaining": true}, 5); len(steps)+len(refused) != 0 {
		t.Errorf("a root cause no finding has selected %d steps, %d refusals", len(steps), len(refused))
	}
	if steps, _ := SelectAutoFixes(cat, r.Findings, map[string]bool{"finalizer-owner-missing": true}, 0); len(steps) != 0 {
		t.Errorf("max 0 selected %d steps", len(steps))
	}
}

// delete-pod is of risk medium: the auditor applies it when statefulset-broken-pod is named, and
// only then (docs/contract.md, auditor: --auto-fix).
func TestSelectAutoFixesDeletePod(t *testing.T) {
	f := finding("shop", "StatefulSet", "db", "rollout-stalled", "statefulset-broken-pod", report.SeverityError, time.Hour, nil)
	f.Object.APIVersion, f.Object.ResourceVersion = "apps/v1", "40"
	f.Fixes = []report.Fix{{Action: "delete-pod", Risk: report.RiskMedium,
		Params: map[string]string{"pod": "db-2", "podUID": "u2", "revision": "db-7c4f88d5b", "updateRevision": "db-5d8c7f9b6"}}}
	cat := fix.NewCatalog()
	steps, refused := SelectAutoFixes(cat, []report.Finding{f}, map[string]bool{"statefulset-broken-pod": true}, 5)
	if len(steps) != 1 || steps[0].Action != "delete-pod" || steps[0].Target.Name != "db-2" || len(refused) != 0 {
		t.Errorf("steps %+v, refused %+v; want delete-pod of db-2", steps, refused)
	}
	if steps, refused := SelectAutoFixes(cat, []report.Finding{f}, map[string]bool{"crash-looping": true}, 5); len(steps)+len(refused) != 0 {
		t.Errorf("an unnamed root cause selected %d steps, %d refusals", len(steps), len(refused))
	}
}
