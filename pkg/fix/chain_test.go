package fix

import (
	"reflect"
	"testing"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// A finding higher in a chain offers no write of its own: naming it plans its root's fix, once,
// however many findings of the chain are named.
func TestPlanFindingAboveARootAppliesTheRootsFix(t *testing.T) {
	root := finding("wd-pod", "stuck-terminating", "node-not-ready", pod("shop", "web-0", "up", "10"), forceFix)
	rs := finding("wd-rs", "stuck-terminating", "dependents-remaining",
		report.ObjectRef{APIVersion: "apps/v1", Kind: "ReplicaSet", Namespace: "shop", Name: "web-1", UID: "urs"})
	rs.BlockedBy = []report.BlockRef{{APIVersion: "v1", Kind: "Pod", Namespace: "shop", Name: "web-0", FindingID: "wd-pod"}}
	dep := finding("wd-dep", "stuck-terminating", "dependents-remaining",
		report.ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web", UID: "ud"})
	dep.BlockedBy = append([]report.BlockRef{{APIVersion: "apps/v1", Kind: "ReplicaSet", Namespace: "shop", Name: "web-1", FindingID: "wd-rs"}}, rs.BlockedBy...)
	gone := finding("wd-gone", "stuck-terminating", "dependents-remaining", pod("shop", "x", "ux", "1"))
	gone.BlockedBy = []report.BlockRef{{Kind: "Pod", Name: "y", FindingID: "wd-resolved"}}
	all := []report.Finding{dep, rs, root, gone}

	for _, ids := range [][]string{{"wd-dep"}, {"wd-dep", "wd-rs"}} {
		steps, refused := Select(NewCatalog(), all, Selection{IDs: ids})
		if got, want := stepSummary(steps), []string{"force-delete shop/pod/web-0  wd-pod"}; !reflect.DeepEqual(got, want) {
			t.Errorf("%v: steps %v, want %v", ids, got, want)
		}
		if len(refused) != 0 {
			t.Errorf("%v: refused %v", ids, refused)
		}
	}
	// A rollout waiting on two stuck pods side by side: both are fixed.
	other := finding("wd-pod2", "stuck-terminating", "node-not-ready", pod("shop", "web-1", "up2", "11"), forceFix)
	rollout := finding("wd-roll", "rollout-stalled", "blocked-by-stuck-pod",
		report.ObjectRef{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Namespace: "shop", Name: "web", UID: "ucs"})
	rollout.BlockedBy = []report.BlockRef{{Kind: "Pod", Name: "web-0", FindingID: "wd-pod"}, {Kind: "Pod", Name: "web-1", FindingID: "wd-pod2"}}
	steps, refused := Select(NewCatalog(), append(all, other, rollout), Selection{IDs: []string{"wd-roll"}})
	if got, want := stepSummary(steps), []string{"force-delete shop/pod/web-0  wd-pod", "force-delete shop/pod/web-1  wd-pod2"}; !reflect.DeepEqual(got, want) || len(refused) != 0 {
		t.Errorf("side by side: steps %v refused %v, want %v", got, refused, want)
	}
	// A root no longer among the findings: the finding is refused as offering no fix.
	if steps, refused := Select(NewCatalog(), all, Selection{IDs: []string{"wd-gone"}}); len(steps) != 0 || len(refused) != 1 {
		t.Errorf("chain whose root is gone: steps %v refused %v", stepSummary(steps), refused)
	}
}

// rootsOfChains answers with maps of its own: the IDs the user gave stay as they were.
func TestRootsOfChainsLeavesTheGivenIDs(t *testing.T) {
	root := finding("wd-pod", "stuck-terminating", "node-not-ready", pod("shop", "web-0", "up", "10"), forceFix)
	rs := finding("wd-rs", "stuck-terminating", "dependents-remaining",
		report.ObjectRef{APIVersion: "apps/v1", Kind: "ReplicaSet", Namespace: "shop", Name: "web-1", UID: "urs"})
	rs.BlockedBy = []report.BlockRef{{Kind: "Pod", Name: "web-0", FindingID: "wd-pod"}}
	given := map[string]bool{"wd-rs": true}
	named, via := rootsOfChains([]report.Finding{rs, root}, given)
	if want := map[string]bool{"wd-rs": true}; !reflect.DeepEqual(given, want) {
		t.Errorf("given changed to %v", given)
	}
	if want := map[string]bool{"wd-rs": true, "wd-pod": true}; !reflect.DeepEqual(named, want) {
		t.Errorf("named %v, want %v", named, want)
	}
	if want := map[string]bool{"wd-rs": true}; !reflect.DeepEqual(via, want) {
		t.Errorf("via %v, want %v", via, want)
	}
}
