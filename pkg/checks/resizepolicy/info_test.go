// The check as the registry and the fix catalog see it, from outside the package: pkg/fix may
// import the check for its root-cause IDs.
package resizepolicy_test

import (
	"slices"
	"testing"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks/resizepolicy"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/fix"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

func TestResizePolicyDriftInfo(t *testing.T) {
	info := resizepolicy.New().Info()
	want := []string{resizepolicy.RootCauseKruiseDropsResizePolicy, resizepolicy.RootCauseResizePolicyImmutable, resizepolicy.RootCauseSidecarResizePolicyDrift, resizepolicy.RootCauseBenignDefaulting}
	for _, id := range want {
		i := slices.IndexFunc(info.RootCauses, func(r checks.RootCause) bool { return r.ID == id })
		if i < 0 {
			t.Errorf("root cause %s missing", id)
			continue
		}
		rc := info.RootCauses[i]
		if rc.Title == "" || rc.Description == "" || len(rc.References) == 0 || rc.Severity == "" {
			t.Errorf("root cause %s is incomplete: %+v", id, rc)
		}
		for _, a := range rc.Actions {
			if _, ok := fix.NewCatalog().Lookup(a); !ok {
				t.Errorf("root cause %s names unknown action %s", id, a)
			}
		}
	}
	sev := map[string]report.Severity{}
	for _, rc := range info.RootCauses {
		sev[rc.ID] = rc.Severity
	}
	if sev[resizepolicy.RootCauseKruiseDropsResizePolicy] != report.SeverityError || sev[resizepolicy.RootCauseBenignDefaulting] != report.SeverityInfo {
		t.Errorf("severities = %v", sev)
	}
}
