package checks

import (
	"testing"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

func TestLinkBlockers(t *testing.T) {
	pod := report.ObjectRef{APIVersion: "v1", Kind: "Pod", Namespace: "ns", Name: "web-a", UID: "u1"}
	podFinding := report.Finding{ID: "wd-pod", Check: "stuck-preparing-normal", Object: pod}
	rollout := report.Finding{ID: "wd-rollout", Check: "rollout-stalled",
		Object: report.ObjectRef{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Namespace: "ns", Name: "web"},
		BlockedBy: []report.BlockRef{
			{APIVersion: "v1", Kind: "Pod", Namespace: "ns", Name: "web-a"},
			// No finding on this pod in the scan: nothing to name.
			{APIVersion: "v1", Kind: "Pod", Namespace: "ns", Name: "web-b"},
			// Same name in another namespace is another object.
			{APIVersion: "v1", Kind: "Pod", Namespace: "other", Name: "web-a"},
			// Already linked by its own check: kept.
			{APIVersion: "v1", Kind: "Pod", Namespace: "ns", Name: "web-a", FindingID: "wd-kept"},
		}}
	fs := []report.Finding{rollout, podFinding}
	linkBlockers(fs)
	got := fs[0].BlockedBy
	want := []string{"wd-pod", "", "", "wd-kept"}
	for i, w := range want {
		if got[i].FindingID != w {
			t.Errorf("blockedBy[%d] (%s/%s): findingId %q, want %q", i, got[i].Namespace, got[i].Name, got[i].FindingID, w)
		}
	}
	if len(fs[1].BlockedBy) != 0 {
		t.Errorf("the pod's own finding gained blockedBy: %+v", fs[1].BlockedBy)
	}
}

func TestLinkBlockersNotItself(t *testing.T) {
	// A finding that names its own object (a chain back to itself) is not linked to itself.
	self := report.ObjectRef{APIVersion: "v1", Kind: "Pod", Namespace: "ns", Name: "p"}
	fs := []report.Finding{{ID: "wd-self", Check: "stuck-terminating", Object: self,
		BlockedBy: []report.BlockRef{{APIVersion: "v1", Kind: "Pod", Namespace: "ns", Name: "p"}}}}
	linkBlockers(fs)
	if fs[0].BlockedBy[0].FindingID != "" {
		t.Fatalf("linked to itself: %q", fs[0].BlockedBy[0].FindingID)
	}
}
