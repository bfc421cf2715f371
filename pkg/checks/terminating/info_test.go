// The check as the registry and the fix catalog see it, from outside the package: pkg/fix may
// import the check for its root-cause IDs.
package terminating_test

import (
	"testing"
	"time"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks/terminating"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/fix"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

func TestStuckTerminatingInfo(t *testing.T) {
	info := terminating.New().Info()
	if info.ID != "stuck-terminating" || info.Threshold != 5*time.Minute || info.Title == "" || info.Description == "" {
		t.Fatalf("info = %+v", info)
	}
	contract := []string{"finalizer-owner-missing", "finalizer-owner-not-acting", "kruise-predelete-hook-pending",
		"kwok-stage-not-run", "node-missing", "node-not-ready", "kubelet-kill-failing", "owner-paused",
		"finalizer-readd-race", "namespace-content-remaining", "namespace-discovery-failed",
		"protected-resource-in-use", "dependents-remaining", "kruise-hook-bypassed", "admission-webhook-unavailable",
		"conversion-webhook-unavailable"}
	have := map[string]checks.RootCause{}
	for _, rc := range info.RootCauses {
		have[rc.ID] = rc
		if rc.Title == "" || rc.Description == "" || rc.Severity.Rank() == 0 {
			t.Errorf("root cause %s lacks title, description or severity", rc.ID)
		}
		for _, a := range rc.Actions {
			if _, ok := fix.NewCatalog().Lookup(a); !ok {
				t.Errorf("root cause %s names unknown action %s", rc.ID, a)
			}
		}
	}
	for _, id := range contract {
		if _, ok := have[id]; !ok {
			t.Errorf("root cause %s from the contract is missing", id)
		}
	}
	if len(have) != len(contract) {
		t.Errorf("root causes = %d, contract lists %d", len(have), len(contract))
	}
	for _, n := range info.Needs {
		if (n.Input == snapshot.InputPods) == n.Optional {
			t.Errorf("need %s optional=%v: only pods are required", n.Input, n.Optional)
		}
	}
}
