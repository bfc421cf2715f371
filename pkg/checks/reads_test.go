package checks

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

type readStub struct {
	stubCheck
	pods  []types.UID
	want  []snapshot.RevisionRead
	asked int
}

func (c *readStub) DeclareReads(*snapshot.Snapshot) snapshot.Reads {
	c.asked++
	return snapshot.Reads{Pods: []snapshot.PodReads{{UIDs: c.pods}}, Revisions: []snapshot.RevisionReads{{Reads: c.want}}}
}

// Two checks asking for one revision get one read of it, in full if either needs the data.
func TestRevisionsAskedOnce(t *testing.T) {
	a := &readStub{stubCheck: *stub("a"), want: []snapshot.RevisionRead{{Namespace: "shop", Name: "web-1"}, {Namespace: "shop", Name: "web-2"}}}
	b := &readStub{stubCheck: *stub("b"), want: []snapshot.RevisionRead{{Namespace: "shop", Name: "web-1", Full: true}}}
	s := &snapshot.Snapshot{}
	got := DeclareReads([]Check{a, stub("c"), b}, s).RevisionsDue(s)
	want := []snapshot.RevisionRead{{Namespace: "shop", Name: "web-1", Full: true}, {Namespace: "shop", Name: "web-2"}}
	if !slices.Equal(got, want) {
		t.Errorf("Revisions = %+v, want %+v", got, want)
	}
}

// Each check is asked once for its reads; a pod two checks declare is read once, in check order.
func TestReadsDeclaredOnce(t *testing.T) {
	a := &readStub{stubCheck: *stub("a"), pods: []types.UID{"p1", "p2"}}
	b := &readStub{stubCheck: *stub("b"), pods: []types.UID{"p2", "p3"}}
	s := &snapshot.Snapshot{}
	reads := DeclareReads([]Check{a, stub("c"), b}, s)
	for range 3 {
		if got, want := reads.PodsDue(s), []types.UID{"p1", "p2", "p3"}; !slices.Equal(got, want) {
			t.Errorf("pods due = %v, want %v", got, want)
		}
	}
	if a.asked != 1 || b.asked != 1 {
		t.Errorf("checks asked %d and %d times, want once each", a.asked, b.asked)
	}
}
