package resizepolicy

import (
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/checktest"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
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
	got := New().(checks.PodSelector).PodCandidates(s)
	if len(got) != 1 || got[0] != owned.UID {
		t.Fatalf("PodCandidates = %v, want only %s", got, owned.UID)
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
		s.FullPods = full
		s.Index()
		var names []string
		for _, uid := range New().(checks.PodSelector).PodCandidates(s) {
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
	if got := New().(checks.PodSelector).PodCandidates(s); len(got) != 1 || got[0] != rollout[4].UID {
		t.Errorf("one rollout's candidates = %v, want only the oldest pod %s", got, rollout[4].UID)
	}
}
