package checks

import (
	"strings"
	"testing"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

func TestNewFindingRefusesForeignFix(t *testing.T) {
	info := Info{ID: "stuck-terminating", RootCauses: []RootCause{
		{ID: "node-gone", Severity: report.SeverityWarning, Actions: []string{ActionForceDelete}}}}
	evidence := []string{"node gone"}
	f := NewFinding(info, Draft{RootCause: "node-gone", Evidence: evidence, Fixes: []report.Fix{
		{Action: ActionForceDelete}, {Action: ActionEvictPod}}})
	if len(f.Fixes) != 1 || f.Fixes[0].Action != ActionForceDelete {
		t.Errorf("fixes %v, want force-delete alone", f.Fixes)
	}
	if f.Severity != report.SeverityError || len(f.RootCause.Evidence) != 2 ||
		!strings.Contains(f.RootCause.Evidence[1], "fix evict-pod dropped: root cause node-gone does not offer it") {
		t.Errorf("severity %s evidence %q: want the refusal shown as an error", f.Severity, f.RootCause.Evidence)
	}
	if len(evidence) != 1 {
		t.Errorf("the draft's evidence was changed: %q", evidence)
	}
	ok := NewFinding(info, Draft{RootCause: "node-gone", Fixes: []report.Fix{{Action: ActionForceDelete}}})
	if ok.Severity != report.SeverityWarning || len(ok.RootCause.Evidence) != 0 || len(ok.Fixes) != 1 {
		t.Errorf("an offered fix changed the finding: %+v", ok)
	}
}
