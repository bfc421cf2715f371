package checks

import (
	"slices"
	"testing"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

type revisionStub struct {
	stubCheck
	want []snapshot.RevisionRead
}

func (c *revisionStub) RevisionCandidates(*snapshot.Snapshot) []snapshot.RevisionRead { return c.want }

// Two checks asking for one revision get one read of it, in full if either needs the data.
func TestRevisionsAskedOnce(t *testing.T) {
	a := &revisionStub{stubCheck: *stub("a"), want: []snapshot.RevisionRead{{Namespace: "shop", Name: "web-1"}, {Namespace: "shop", Name: "web-2"}}}
	b := &revisionStub{stubCheck: *stub("b"), want: []snapshot.RevisionRead{{Namespace: "shop", Name: "web-1", Full: true}}}
	got := Revisions([]Check{a, stub("c"), b})(&snapshot.Snapshot{})
	want := []snapshot.RevisionRead{{Namespace: "shop", Name: "web-1", Full: true}, {Namespace: "shop", Name: "web-2"}}
	if !slices.Equal(got, want) {
		t.Errorf("Revisions = %+v, want %+v", got, want)
	}
}
