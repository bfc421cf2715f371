package resizepolicy

import (
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/checktest"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

func TestResizePolicyDriftPodCandidates(t *testing.T) {
	inPlace := inPlaceWorkload(t, kruise.KindCloneSet, kruise.UpdateInPlaceOnly, []corev1.Container{appContainer("app:v1", nil)})
	recreate := inPlaceWorkload(t, kruise.KindCloneSet, kruise.UpdateReCreate, []corev1.Container{appContainer("app:v1", nil)})
	recreate.Name, recreate.UID = "batch", "uid-batch"

	owned := workloadPod(inPlace, "web-a", newRev, time.Hour)
	released := workloadPod(inPlace, "web-b", newRev, time.Hour) // labels no longer match the selector
	released.Labels["app"] = "debug"
	other := workloadPod(recreate, "batch-a", newRev, time.Hour)
	notController := workloadPod(inPlace, "web-c", newRev, time.Hour)
	notController.OwnerReferences[0].Controller = nil

	s := scene{server: "v1.37.1", workloads: []*kruise.Workload{inPlace, recreate},
		pods: []*corev1.Pod{owned, released, other, notController}, metaOnly: true}.snapshot()
	got := podsDue(s)
	if len(got) != 1 || got[0] != owned.UID {
		t.Fatalf("pods due = %v, want only %s", got, owned.UID)
	}
}

// A group of pods one revision created is read through its oldest and newest pod, and whole once
// a sample shows drift; pods updated in place are always read. Pods the rollout still has to
// update (web-old, web-named: off the update revision, no partition) are read only when an old
// kruise-manager may fail their in-place update, and then always when a failed update names them.
func TestResizePolicyDriftCandidateSampling(t *testing.T) {
	w := inPlaceWorkload(t, kruise.KindCloneSet, kruise.UpdateInPlaceIfPossible,
		[]corev1.Container{appContainer("app:v1", checktest.ResizePolicy("cpu", "NotRequired", "memory", "RestartContainer"))})
	same := checktest.ResizePolicy("memory", "RestartContainer", "cpu", "NotRequired") // equal, written in another order
	var pods []*corev1.Pod
	for i, age := range []time.Duration{3, 9, 1, 5, 7} { // hours; web-1 is the oldest, web-2 the newest
		pods = append(pods, workloadPod(w, fmt.Sprintf("web-%d", i), newRev, age*time.Hour, appContainer("app:v1", same)))
	}
	oldPod := workloadPod(w, "web-old", oldRev, 20*time.Hour, appContainer("app:v1", same))
	updated := workloadPod(w, "web-upd", newRev, 30*time.Hour, appContainer("app:v1", same))
	updated.Annotations = map[string]string{kruise.AnnotationInPlaceState: `{"revision":"` + newRev + `"}`}
	named := workloadPod(w, "web-named", oldRev, 2*time.Hour, appContainer("app:v1", same))
	all := append(pods, oldPod, updated, named)

	manager := "v1.7.0"
	candidates := func(full ...*corev1.Pod) []string {
		s := scene{server: "v1.37.1", manager: manager, workloads: []*kruise.Workload{w}, pods: all, metaOnly: true,
			events: []*corev1.Event{failedInPlace(w, "web-named", time.Hour, 3)}}.snapshot()
		// Declared once on the metadata-only snapshot, due on the pods read since.
		reads := New().(checks.ReadDeclarer).DeclareReads(s)
		s.FullPods = full
		s.Index()
		var names []string
		for _, uid := range reads.PodsDue(s) {
			p, _ := s.Pod(uid)
			names = append(names, p.Name)
		}
		sort.Strings(names)
		return names
	}
	want := []string{"web-1", "web-2", "web-upd"}
	if got := candidates(); !slices.Equal(got, want) {
		t.Fatalf("first round = %v, want %v", got, want)
	}
	manager = "v1.6.3"
	if got, want := candidates(), []string{"web-1", "web-2", "web-named", "web-old", "web-upd"}; !slices.Equal(got, want) {
		t.Fatalf("first round with kruise v1.6.3 = %v, want %v", got, want)
	}
	manager = "v1.7.0"
	// Samples read in full and equal to the template: the group stays sampled.
	if got := candidates(pods[1], pods[2], oldPod, updated, named); !slices.Equal(got, want) {
		t.Errorf("clean samples = %v, want %v", got, want)
	}
	// The newest sample differs: its group is read whole, the other group stays sampled.
	drifted := workloadPod(w, "web-2", newRev, time.Hour, appContainer("app:v1", checktest.ResizePolicy("cpu", "RestartContainer")))
	want = []string{"web-0", "web-1", "web-2", "web-3", "web-4", "web-upd"}
	if got := candidates(pods[1], drifted, oldPod, updated, named); !slices.Equal(got, want) {
		t.Errorf("drifted sample = %v, want %v", got, want)
	}

	// Pods created within minutes of each other (one rollout): the oldest stands for them.
	var rollout []*corev1.Pod
	for i := range 5 {
		rollout = append(rollout, workloadPod(w, fmt.Sprintf("web-r%d", i), newRev, 3*time.Hour+time.Duration(i)*time.Minute, appContainer("app:v1", same)))
	}
	s := scene{server: "v1.37.1", manager: "v1.7.0", workloads: []*kruise.Workload{w}, pods: rollout, metaOnly: true}.snapshot()
	if got := podsDue(s); len(got) != 1 || got[0] != rollout[4].UID {
		t.Errorf("one rollout's candidates = %v, want only the oldest pod %s", got, rollout[4].UID)
	}
}

// podsDue are the pods the check's declaration has due on s.
func podsDue(s *snapshot.Snapshot) []types.UID {
	return New().(checks.ReadDeclarer).DeclareReads(s).PodsDue(s)
}

// Pods a partition keeps are judged against the current revision's template: declared once, their
// reads wait for that revision, then their group is sampled, and read whole once the sample
// differs. Each round of reads makes the next due, as the collector carries them out.
func TestResizePolicyDriftDeclaresKeptPodsAfterTheirRevision(t *testing.T) {
	restart := checktest.ResizePolicy("memory", "RestartContainer")
	w := rolloutWorkload(t, kruise.KindCloneSet, kruise.UpdateInPlaceIfPossible, 4, 1, []corev1.Container{appContainer("app:v2", restart)}, checktest.Partition(int64(3)))
	kept := pods(workloadPod(w, "web-a", oldRev, 30*24*time.Hour, appContainer("app:v1", nil)),
		workloadPod(w, "web-b", oldRev, 30*24*time.Hour-time.Minute, appContainer("app:v1", nil)),
		workloadPod(w, "web-c", oldRev, 30*24*time.Hour-2*time.Minute, appContainer("app:v1", nil)))
	updated := workloadPod(w, "web-d", newRev, time.Hour, appContainer("app:v2", restart))
	rev := controllerRevision(t, w, oldRev, 60*24*time.Hour, false, appContainer("app:v1", restart))

	s := onV19(w, append(slices.Clone(kept), updated)).snapshot()
	s.FullPods = nil
	s.Index()
	reads := New().(checks.ReadDeclarer).DeclareReads(s)
	names := func(uids []types.UID) []string {
		var out []string
		for _, uid := range uids {
			if _, full := s.FullPod(uid); !full {
				p, _ := s.Pod(uid)
				out = append(out, p.Name)
			}
		}
		sort.Strings(out)
		return out
	}
	revisions := func() []string {
		var out []string
		for _, r := range reads.RevisionsDue(s) {
			out = append(out, fmt.Sprintf("%s full=%v", r.Name, r.Full))
		}
		return out
	}
	for i, round := range []struct {
		pods, revisions []string
		read            []*corev1.Pod
	}{
		{pods: []string{"web-d"}, revisions: []string{oldRev + " full=true"}, read: pods(updated)},
		{pods: []string{"web-a"}, read: kept[:1]},
		{pods: []string{"web-b", "web-c"}, read: kept[1:]},
		{},
	} {
		if got := names(reads.PodsDue(s)); !slices.Equal(got, round.pods) {
			t.Errorf("round %d: pods due = %v, want %v", i+1, got, round.pods)
		}
		s.FullPods = append(s.FullPods, round.read...)
		s.Index()
		if got := revisions(); !slices.Equal(got, round.revisions) {
			t.Errorf("round %d: revisions due = %v, want %v", i+1, got, round.revisions)
		}
		if i == 0 {
			s.Revisions = append(s.Revisions, rev)
		}
	}
}
