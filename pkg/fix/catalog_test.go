package fix

import (
	"slices"
	"testing"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
)

// TestCatalog keeps the catalog in step with the action IDs checks propose (docs/contract.md, "Fix
// actions"): each is implemented and documented, and nothing else is.
func TestCatalog(t *testing.T) {
	cat := NewCatalog()
	var ids []string
	for _, a := range cat.All() {
		d := a.Doc()
		if d.Title == "" || d.Description == "" || d.Preconditions == "" || d.Risk == "" {
			t.Errorf("action %q is not fully documented: %+v", d.ID, d)
		}
		if got, ok := cat.Lookup(d.ID); !ok || got.Doc().ID != d.ID {
			t.Errorf("Lookup(%q) = %v, %v", d.ID, got, ok)
		}
		ids = append(ids, d.ID)
	}
	want := []string{checks.ActionRequeueWorkload, checks.ActionRestartControllerLeader, checks.ActionRemoveFinalizer, checks.ActionForceDelete, checks.ActionEvictPod, checks.ActionDeletePod}
	if !slices.Equal(ids, want) {
		t.Errorf("catalog = %q, want %q", ids, want)
	}
	if _, ok := cat.Lookup("reboot-cluster"); ok {
		t.Error("Lookup of an unknown action succeeded")
	}
	if docs := cat.Docs(); len(docs) != len(want) || docs[0].ID != want[0] {
		t.Errorf("Docs() = %+v", docs)
	}
}
