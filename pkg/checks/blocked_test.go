package checks

import (
	"strings"
	"testing"
	"time"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
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

// fakeCheck is a check with a root-cause table and no findings of its own.
type fakeCheck struct{ info Info }

func (c fakeCheck) Info() Info { return c.info }

func (fakeCheck) Run(*snapshot.Snapshot, time.Duration) []report.Finding { return nil }

func TestLinkChainsToRoot(t *testing.T) {
	deleting := fakeCheck{Info{ID: "stuck-terminating", RootCauses: []RootCause{
		{ID: "held", ChainsToRoot: true}, {ID: "node-gone"}}}}
	rolling := fakeCheck{Info{ID: "rollout-stalled", RootCauses: []RootCause{{ID: "blocked"}}}}
	ref := func(kind, name string) report.ObjectRef {
		return report.ObjectRef{APIVersion: "v1", Kind: kind, Namespace: "ns", Name: name}
	}
	block := func(kind, name string) report.BlockRef {
		return report.BlockRef{APIVersion: "v1", Kind: kind, Namespace: "ns", Name: name}
	}
	fix := []report.Fix{{Action: ActionRemoveFinalizer}}
	fs := []report.Finding{
		{ID: "wd-pv", Check: "stuck-terminating", Object: ref("PersistentVolume", "pv"), Summary: "volume bound",
			RootCause: report.RootCause{ID: "held"}, Fixes: fix,
			// No finding on the first blocker: the next one is the nearest stuck object.
			BlockedBy: []report.BlockRef{block("Pod", "gone"), block("PersistentVolumeClaim", "data")}},
		{ID: "wd-claim", Check: "stuck-terminating", Object: ref("PersistentVolumeClaim", "data"), Summary: "claim used by pod ns/web",
			RootCause: report.RootCause{ID: "held"}, BlockedBy: []report.BlockRef{block("Pod", "web")}},
		{ID: "wd-pod", Check: "stuck-terminating", Object: ref("Pod", "web"), Summary: "node gone",
			RootCause: report.RootCause{ID: "node-gone"}, Fixes: fix},
		{ID: "wd-rs", Check: "rollout-stalled", Object: ref("CloneSet", "web"), Summary: "waits on pod web",
			RootCause: report.RootCause{ID: "blocked"}, Fixes: fix, BlockedBy: []report.BlockRef{block("Pod", "web")}},
	}
	link(fs, []Check{deleting, rolling})
	pv, claim, pod, rs := fs[0], fs[1], fs[2], fs[3]
	if len(pv.BlockedBy) != 2 || pv.BlockedBy[0].FindingID != "wd-claim" || pv.BlockedBy[1].FindingID != "wd-pod" {
		t.Errorf("volume blockedBy %+v, want the claim then the pod", pv.BlockedBy)
	}
	if pv.Summary != "volume bound; root: pod ns/web, node gone" || len(pv.Fixes) != 0 || pv.Fixes == nil {
		t.Errorf("volume: summary %q fixes %v", pv.Summary, pv.Fixes)
	}
	// The claim's summary names the root already: it is not repeated.
	if len(claim.BlockedBy) != 1 || claim.Summary != "claim used by pod ns/web" ||
		!strings.HasSuffix(claim.RootCause.Message, "the root is pod ns/web (finding wd-pod, node-gone): what fixes that one lets this deletion finish on its own.") {
		t.Errorf("claim: blockedBy %+v summary %q message %q", claim.BlockedBy, claim.Summary, claim.RootCause.Message)
	}
	if len(pod.BlockedBy) != 0 || len(pod.Fixes) != 1 {
		t.Errorf("root: blockedBy %+v fixes %v", pod.BlockedBy, pod.Fixes)
	}
	// A root cause that does not chain keeps its blockers, summary and fixes; its blocker names
	// the finding.
	if len(rs.BlockedBy) != 1 || rs.BlockedBy[0].FindingID != "wd-pod" || rs.Summary != "waits on pod web" || len(rs.Fixes) != 1 {
		t.Errorf("rollout: blockedBy %+v summary %q fixes %v", rs.BlockedBy, rs.Summary, rs.Fixes)
	}
}
