package snapshot

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// A sample is read first, its group once the sample read shows it is worth it; a conditional
// read waits for its condition, on the snapshot as read so far.
func TestReadsDue(t *testing.T) {
	s := &Snapshot{}
	s.Index()
	read := func(uid types.UID) bool { _, full := s.FullPod(uid); return full }
	r := Reads{
		Pods: []PodReads{
			{UIDs: []types.UID{"a"}},
			{UIDs: []types.UID{"g1"}, All: []types.UID{"g1", "g2", "g3"}, Widen: func(*Snapshot) bool { return read("g1") }},
			{UIDs: []types.UID{"later"}, When: func(*Snapshot) bool { return read("a") }},
		},
		Revisions: []RevisionReads{
			{Reads: []RevisionRead{{Namespace: "shop", Name: "web-1"}}},
			{Reads: []RevisionRead{{Namespace: "shop", Name: "web-1", Full: true}, {Namespace: "shop", Name: "web-2"}},
				When: func(*Snapshot) bool { return read("g2") }},
		},
	}
	if got, want := r.PodsDue(s), []types.UID{"a", "g1"}; !slices.Equal(got, want) {
		t.Errorf("first pods due = %v, want %v", got, want)
	}
	if got, want := r.RevisionsDue(s), []RevisionRead{{Namespace: "shop", Name: "web-1"}}; !slices.Equal(got, want) {
		t.Errorf("first revisions due = %v, want %v", got, want)
	}
	for _, uid := range []types.UID{"a", "g1"} {
		s.FullPods = append(s.FullPods, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: uid}})
	}
	s.Index()
	if got, want := r.PodsDue(s), []types.UID{"a", "g1", "g2", "g3", "later"}; !slices.Equal(got, want) {
		t.Errorf("pods due once the first are read = %v, want %v", got, want)
	}
	s.FullPods = append(s.FullPods, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "g2"}})
	s.Index()
	want := []RevisionRead{{Namespace: "shop", Name: "web-1", Full: true}, {Namespace: "shop", Name: "web-2"}}
	if got := r.RevisionsDue(s); !slices.Equal(got, want) {
		t.Errorf("revisions due once g2 is read = %v, want %v", got, want)
	}
}
