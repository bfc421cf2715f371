package resizepolicy

import (
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/checktest"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// rolloutWorkload is an in-place workload "web" of replicas pods, updated of them on newRev, as
// its controller's status reports it: currentRevision moves to updateRevision only once every pod
// is updated (cloneset_status.go calculateStatus in kruise v1.9.0).
func rolloutWorkload(t *testing.T, kind, updateType string, replicas, updated int64, tpl []corev1.Container, opts ...checktest.Option) *kruise.Workload {
	current := oldRev
	if updated == replicas {
		current = newRev
	}
	opts = append([]checktest.Option{checktest.Generation(2), checktest.CreatedAgo(90 * 24 * time.Hour), checktest.Replicas(replicas),
		checktest.Template(tpl...), checktest.UpdateStrategy(updateType),
		checktest.Status(map[string]any{"observedGeneration": int64(2), "replicas": replicas, "updatedReplicas": updated,
			"updateRevision": newRev, "currentRevision": current, "labelSelector": "app=web"})}, opts...)
	return checktest.Workload(t, kind, "shop", "web", opts...)
}

// stsRollingUpdate sets an Advanced StatefulSet's rollingUpdate partition (and unorderedUpdate).
func stsRollingUpdate(partition int64, unordered bool) checktest.Option {
	return func(m metav1.Object) {
		u := m.(*unstructured.Unstructured).Object
		_ = unstructured.SetNestedField(u, partition, "spec", "updateStrategy", "rollingUpdate", "partition")
		if unordered {
			_ = unstructured.SetNestedField(u, map[string]any{}, "spec", "updateStrategy", "rollingUpdate", "unorderedUpdate")
		}
	}
}

// onV19 is the workload on a v1.37 apiserver with kruise-manager v1.9.0, and the revisions read.
func onV19(w *kruise.Workload, ps []*corev1.Pod, revs ...*appsv1.ControllerRevision) scene {
	return scene{server: "v1.37.1", manager: "v1.9.0", workloads: []*kruise.Workload{w}, pods: ps, revisions: revs}
}

func pods(ps ...*corev1.Pod) []*corev1.Pod { return ps }

// refused sets the FailedUpdate condition a CloneSet's InPlaceOnly rollout leaves when it cannot
// update the pod in place.
func refused(pod string) checktest.Option {
	return func(m metav1.Object) {
		_ = unstructured.SetNestedSlice(m.(*unstructured.Unstructured).Object, []any{map[string]any{"type": "FailedUpdate", "status": "True",
			"lastTransitionTime": checktest.Ago(time.Hour).Format(time.RFC3339),
			"message":            "find Pod " + pod + " update strategy is InPlaceOnly but can not update in-place"}}, "status", "conditions")
	}
}

// podResult is what the check says about one pod: root cause ("" for none) and evict-pod.
type podResult struct {
	rootCause string
	evict     bool
	since     time.Time
	evidence  []string
}

func runByPod(t *testing.T, sc scene) map[string]podResult {
	t.Helper()
	out := map[string]podResult{}
	for _, f := range New().Run(sc.snapshot(), 0) {
		out[f.Object.Name] = podResult{rootCause: f.RootCause.ID, since: f.Since, evidence: f.RootCause.Evidence,
			evict: slices.ContainsFunc(f.Fixes, func(x report.Fix) bool { return x.Action == checks.ActionEvictPod })}
	}
	return out
}

func TestResizePolicyDriftFollowsTheRollout(t *testing.T) {
	restart := checktest.ResizePolicy("cpu", "NotRequired", "memory", "RestartContainer")
	oldTpl := appContainer("app:v1", nil)
	newTpl := appContainer("app:v1", restart)
	const day = 24 * time.Hour
	tests := []struct {
		name  string
		scene func(t *testing.T) scene
		want  map[string]podResult // pods with a finding; every other pod has none
		// revisions are what the declaration has due ("name" or "name full").
		revisions []string
	}{
		{
			// CloneSet partition 2 of 3: calculateDiffsWithExpectation (cloneset_sync_utils.go)
			// gives updateOldDiff = oldRevisionActiveCount - partition = 0, so web-a and web-b stay
			// on currentRevision; a deleted one comes back from currentRevision
			// (scaleUpNumOldRevision, cloneset_scale.go createPods). They match that template.
			name: "CloneSet partition keeps pods on the old revision: judged against its template, no finding",
			scene: func(t *testing.T) scene {
				w := rolloutWorkload(t, kruise.KindCloneSet, kruise.UpdateInPlaceIfPossible, 3, 1, []corev1.Container{newTpl}, checktest.Partition(int64(2)))
				return onV19(w, pods(workloadPod(w, "web-a", oldRev, 30*day, oldTpl), workloadPod(w, "web-b", oldRev, 30*day, oldTpl),
					workloadPod(w, "web-c", newRev, time.Hour, newTpl)), controllerRevision(t, w, oldRev, 60*day, false, oldTpl), controllerRevision(t, w, newRev, 2*time.Hour, true))
			},
		},
		{
			name: "CloneSet partition, old revision not read: the kept pods are not judged, and the revision is asked for",
			scene: func(t *testing.T) scene {
				w := rolloutWorkload(t, kruise.KindCloneSet, kruise.UpdateInPlaceIfPossible, 3, 1, []corev1.Container{newTpl}, checktest.Partition("50%"))
				return onV19(w, pods(workloadPod(w, "web-a", oldRev, 30*day, oldTpl), workloadPod(w, "web-b", oldRev, 30*day, oldTpl),
					workloadPod(w, "web-c", newRev, time.Hour, newTpl)))
			},
			revisions: []string{oldRev + " full"},
		},
		{
			// kruise < v1.7.0 created web-a without the template's resizePolicy (domain.md); the
			// manager now runs v1.9.0, which creates pods from currentRevision with it.
			name: "CloneSet partition, a kept pod differs from its own revision's template: finding with evict-pod",
			scene: func(t *testing.T) scene {
				w := rolloutWorkload(t, kruise.KindCloneSet, kruise.UpdateInPlaceIfPossible, 3, 1, []corev1.Container{appContainer("app:v2", restart)}, checktest.Partition(int64(2)))
				return onV19(w, pods(workloadPod(w, "web-a", oldRev, 30*day, oldTpl), workloadPod(w, "web-b", oldRev, 10*day, newTpl),
					workloadPod(w, "web-c", newRev, time.Hour, appContainer("app:v2", restart))), controllerRevision(t, w, oldRev, 60*day, false, newTpl))
			},
			want: map[string]podResult{"web-a": {rootCause: RootCauseResizePolicyImmutable, evict: true, since: checktest.Ago(30 * day),
				evidence: []string{
					"pod is on revision web-6b8d7f9c4, kept off cloneset/web updateRevision web-7c9f5d8b6 by partition 2; a recreated pod gets currentRevision web-6b8d7f9c4",
					"container app: pod resizePolicy unset; revision web-6b8d7f9c4 template cpu=NotRequired,memory=RestartContainer (differs for memory)",
					"differs from revision web-6b8d7f9c4 since 2026-05-13T12:00:00Z: the pod's creation"}}},
		},
		{
			// The template's resizePolicy changed: CanUpdateInPlace is false for a patch outside
			// image and resources (inplace_update_defaults.go defaultCalculateInPlaceUpdateSpec), so
			// InPlaceIfPossible backs off to ReCreate (cloneset_update.go updatePod) and replaces
			// the old pods one by one. They are not drift.
			name: "recreate rollout in progress: the pods not yet updated are not findings",
			scene: func(t *testing.T) scene {
				w := rolloutWorkload(t, kruise.KindCloneSet, kruise.UpdateInPlaceIfPossible, 3, 1, []corev1.Container{newTpl})
				return onV19(w, pods(workloadPod(w, "web-a", oldRev, 30*day, oldTpl), workloadPod(w, "web-b", oldRev, 30*day, oldTpl),
					workloadPod(w, "web-c", newRev, 10*time.Minute, newTpl)))
			},
		},
		{
			// InPlaceOnly cannot make a resizePolicy change in place and never recreates: updatePod
			// (cloneset_update.go) returns "find Pod %s update strategy is InPlaceOnly but can not
			// update in-place", which syncCloneSet (cloneset_controller.go) sets as FailedUpdate.
			// The rollout stops; an evicted pod comes back on updateRevision (scaleUpNumOldRevision 0).
			name: "InPlaceOnly rollout refused: the pods it cannot update are findings, dated from the revision",
			scene: func(t *testing.T) scene {
				w := rolloutWorkload(t, kruise.KindCloneSet, kruise.UpdateInPlaceOnly, 2, 0, []corev1.Container{newTpl}, refused("web-a"))
				return onV19(w, pods(workloadPod(w, "web-a", oldRev, 30*day, oldTpl), workloadPod(w, "web-b", oldRev, 30*day, oldTpl)),
					controllerRevision(t, w, newRev, 2*day, true))
			},
			want: map[string]podResult{
				"web-a": {rootCause: RootCauseResizePolicyImmutable, evict: true, since: checktest.Ago(2 * day),
					evidence: []string{`cloneset/web updateStrategy InPlaceOnly cannot update it in place to updateRevision web-7c9f5d8b6 and never recreates it (condition FailedUpdate: "find Pod web-a update strategy is InPlaceOnly but can not update in-place")`}},
				"web-b": {rootCause: RootCauseResizePolicyImmutable, evict: true, since: checktest.Ago(2 * day)},
			},
		},
		{
			name: "InPlaceOnly rollout with a stale refusal (the named pod was updated since): the rollout proceeds, no finding",
			scene: func(t *testing.T) scene {
				w := rolloutWorkload(t, kruise.KindCloneSet, kruise.UpdateInPlaceOnly, 2, 1, []corev1.Container{newTpl}, refused("web-a"))
				return onV19(w, pods(workloadPod(w, "web-a", newRev, 30*day, newTpl), workloadPod(w, "web-b", oldRev, 30*day, oldTpl)))
			},
		},
		{
			name: "InPlaceOnly rollout without a refusal: the rollout proceeds, no finding",
			scene: func(t *testing.T) scene {
				w := rolloutWorkload(t, kruise.KindCloneSet, kruise.UpdateInPlaceOnly, 2, 0, []corev1.Container{newTpl})
				return onV19(w, pods(workloadPod(w, "web-a", oldRev, 30*day, oldTpl), workloadPod(w, "web-b", oldRev, 30*day, oldTpl)))
			},
		},
		{
			name: "pods on their way out (PreparingDelete, specified-delete, deleted) are not judged",
			scene: func(t *testing.T) scene {
				w := rolloutWorkload(t, kruise.KindCloneSet, kruise.UpdateInPlaceIfPossible, 3, 3, []corev1.Container{newTpl})
				a, b, c := workloadPod(w, "web-a", newRev, 30*day, oldTpl), workloadPod(w, "web-b", newRev, 30*day, oldTpl), workloadPod(w, "web-c", newRev, 30*day, oldTpl)
				a.Labels[kruise.LabelLifecycleState] = kruise.StatePreparingDelete
				b.Labels["apps.kruise.io/specified-delete"] = "true"
				checktest.Deleted(time.Minute, 30)(c)
				return onV19(w, pods(a, b, c), controllerRevision(t, w, newRev, 3*day, true))
			},
		},
		{
			name: "paused rollout: the pods it holds back are not findings",
			scene: func(t *testing.T) scene {
				w := rolloutWorkload(t, kruise.KindCloneSet, kruise.UpdateInPlaceIfPossible, 2, 0, []corev1.Container{newTpl}, checktest.Paused())
				return onV19(w, pods(workloadPod(w, "web-a", oldRev, 30*day, oldTpl), workloadPod(w, "web-b", oldRev, 30*day, oldTpl)))
			},
		},
		{
			// Fully updated: every pod on updateRevision, so currentRevision = updateRevision. web-a
			// was created by kruise < v1.7.0 before the template asked for RestartContainer.
			name: "real drift on a fully updated workload: dated from the revision change, evict-pod",
			scene: func(t *testing.T) scene {
				w := rolloutWorkload(t, kruise.KindCloneSet, kruise.UpdateInPlaceIfPossible, 2, 2, []corev1.Container{newTpl})
				return onV19(w, pods(workloadPod(w, "web-a", newRev, 30*day, oldTpl), workloadPod(w, "web-b", newRev, day, newTpl)), controllerRevision(t, w, newRev, 3*day, true))
			},
			want: map[string]podResult{"web-a": {rootCause: RootCauseResizePolicyImmutable, evict: true, since: checktest.Ago(3 * day),
				evidence: []string{"pod is on cloneset/web updateRevision web-7c9f5d8b6",
					"differs from revision web-7c9f5d8b6 since 2026-06-09T12:00:00Z: ControllerRevision web-7c9f5d8b6's creation (the template change)"}}},
		},
		{
			name: "fully updated workload, pod updated in place after the revision: dated from the in-place update",
			scene: func(t *testing.T) scene {
				w := rolloutWorkload(t, kruise.KindCloneSet, kruise.UpdateInPlaceIfPossible, 1, 1, []corev1.Container{newTpl})
				p := workloadPod(w, "web-a", newRev, 30*day, oldTpl)
				p.Annotations = map[string]string{kruise.AnnotationInPlaceState: `{"revision":"` + newRev + `","updateTimestamp":"` +
					checktest.Ago(2*day).Format(time.RFC3339) + `","lastContainerStatuses":{"app":{"imageID":"x"}}}`}
				return onV19(w, pods(p), controllerRevision(t, w, newRev, 3*day, true))
			},
			want: map[string]podResult{"web-a": {rootCause: RootCauseResizePolicyImmutable, evict: true, since: checktest.Ago(2 * day),
				evidence: []string{"the pod's in-place update to web-7c9f5d8b6"}}},
		},
		{
			name: "fully updated workload, revision not read yet: asked for, the finding dated from the pod",
			scene: func(t *testing.T) scene {
				w := rolloutWorkload(t, kruise.KindCloneSet, kruise.UpdateInPlaceIfPossible, 1, 1, []corev1.Container{newTpl})
				return onV19(w, pods(workloadPod(w, "web-a", newRev, 30*day, oldTpl)))
			},
			want: map[string]podResult{"web-a": {rootCause: RootCauseResizePolicyImmutable, evict: true, since: checktest.Ago(30 * day),
				evidence: []string{"(ControllerRevision web-7c9f5d8b6 not read)"}}},
			revisions: []string{newRev},
		},
		{
			// Partition raised to 3 after web-c was updated: with fewer than `partition` pods off
			// updateRevision, a deleted pod comes back on currentRevision (scaleUpNumOldRevision).
			name: "CloneSet pod on the update revision that a recreation would take back: not judged",
			scene: func(t *testing.T) scene {
				w := rolloutWorkload(t, kruise.KindCloneSet, kruise.UpdateInPlaceIfPossible, 3, 1, []corev1.Container{newTpl}, checktest.Partition(int64(3)))
				return onV19(w, pods(workloadPod(w, "web-a", oldRev, 30*day, oldTpl), workloadPod(w, "web-b", oldRev, 30*day, oldTpl),
					workloadPod(w, "web-c", newRev, day, oldTpl)), controllerRevision(t, w, oldRev, 60*day, false, oldTpl))
			},
		},
		{
			// Advanced StatefulSet, ordered: sortPodsToUpdate (stateful_update_utils.go) updates
			// ordinals >= partition only, and isCurrentRevisionNeeded (stateful_set_utils.go)
			// recreates ordinals below it on currentRevision.
			name: "Advanced StatefulSet partition 2 of 4: web-0 and web-1 judged against the old revision, no finding",
			scene: func(t *testing.T) scene {
				w := rolloutWorkload(t, kruise.KindStatefulSet, kruise.UpdateInPlaceIfPossible, 4, 2, []corev1.Container{newTpl}, stsRollingUpdate(2, false))
				return onV19(w, pods(workloadPod(w, "web-0", oldRev, 30*day, oldTpl), workloadPod(w, "web-1", oldRev, 30*day, oldTpl),
					workloadPod(w, "web-2", newRev, time.Hour, newTpl), workloadPod(w, "web-3", newRev, 2*time.Hour, newTpl)), controllerRevision(t, w, oldRev, 60*day, false, oldTpl))
			},
		},
		{
			name: "Advanced StatefulSet partition 1 of 3 while web-1 still waits: the rollout replaces it, no finding",
			scene: func(t *testing.T) scene {
				w := rolloutWorkload(t, kruise.KindStatefulSet, kruise.UpdateInPlaceIfPossible, 3, 1, []corev1.Container{newTpl}, stsRollingUpdate(1, false))
				return onV19(w, pods(workloadPod(w, "web-0", oldRev, 30*day, oldTpl), workloadPod(w, "web-1", oldRev, 30*day, oldTpl),
					workloadPod(w, "web-2", newRev, time.Hour, newTpl)), controllerRevision(t, w, oldRev, 60*day, false, oldTpl))
			},
		},
		{
			name: "Advanced StatefulSet partition, a kept ordinal drifted from its revision: finding with evict-pod",
			scene: func(t *testing.T) scene {
				w := rolloutWorkload(t, kruise.KindStatefulSet, kruise.UpdateInPlaceIfPossible, 2, 1, []corev1.Container{appContainer("app:v2", restart)}, stsRollingUpdate(1, true))
				return onV19(w, pods(workloadPod(w, "web-0", oldRev, 30*day, oldTpl), workloadPod(w, "web-1", newRev, time.Hour, appContainer("app:v2", restart))), controllerRevision(t, w, oldRev, 60*day, false, newTpl))
			},
			want: map[string]podResult{"web-0": {rootCause: RootCauseResizePolicyImmutable, evict: true, since: checktest.Ago(30 * day),
				evidence: []string{"kept off statefulset/web updateRevision web-7c9f5d8b6 by partition 1"}}},
		},
		{
			// An Advanced DaemonSet creates every pod from the current template (syncNodes), so
			// evicting a pod its partition holds back would update it past the partition.
			name: "Advanced DaemonSet partition: held-back pods are not judged",
			scene: func(t *testing.T) scene {
				w := checktest.Workload(t, kruise.KindDaemonSet, "shop", "web", checktest.Template(newTpl),
					checktest.Status(map[string]any{"daemonSetHash": "7c9f5d8b6", "desiredNumberScheduled": int64(2)}),
					func(m metav1.Object) {
						_ = unstructured.SetNestedField(m.(*unstructured.Unstructured).Object,
							map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{"type": "InPlaceIfPossible", "partition": int64(1)}},
							"spec", "updateStrategy")
					})
				return onV19(w, pods(workloadPod(w, "web-a", "6b8d7f9c4", 30*day, oldTpl), workloadPod(w, "web-b", "7c9f5d8b6", time.Hour, newTpl)))
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := tt.scene(t)
			got := runByPod(t, sc)
			for _, p := range sc.pods {
				g, w := got[p.Name], tt.want[p.Name]
				if g.rootCause != w.rootCause || g.evict != w.evict {
					t.Errorf("pod %s: root cause %q evict %v, want %q evict %v\n%s", p.Name, g.rootCause, g.evict, w.rootCause, w.evict, strings.Join(g.evidence, "\n"))
					continue
				}
				if !w.since.IsZero() && !g.since.Equal(w.since) {
					t.Errorf("pod %s: since %s, want %s", p.Name, g.since.UTC(), w.since.UTC())
				}
				all := strings.Join(g.evidence, "\n")
				for _, e := range w.evidence {
					if !strings.Contains(all, e) {
						t.Errorf("pod %s: evidence lacks %q:\n%s", p.Name, e, all)
					}
				}
			}
			// Declared on the metadata-only snapshot, due once the pods and revisions are read.
			meta := sc
			meta.metaOnly, meta.revisions = true, nil
			reads := New().(checks.ReadDeclarer).DeclareReads(meta.snapshot())
			var asked []string
			for _, r := range reads.RevisionsDue(sc.snapshot()) {
				name := r.Name
				if r.Full {
					name += " full"
				}
				asked = append(asked, name)
			}
			if !slices.Equal(asked, tt.revisions) {
				t.Errorf("revisions asked for = %v, want %v", asked, tt.revisions)
			}
		})
	}
}

// The pods a rollout will replace are not read in full when nothing could be reported on them:
// a recreate rollout of many pods costs no reads beyond the updated pods' sample.
func TestResizePolicyDriftCandidatesSkipPendingPods(t *testing.T) {
	w := rolloutWorkload(t, kruise.KindCloneSet, kruise.UpdateInPlaceIfPossible, 3, 1,
		[]corev1.Container{appContainer("app:v1", checktest.ResizePolicy("memory", "RestartContainer"))})
	pods := []*corev1.Pod{workloadPod(w, "web-a", oldRev, time.Hour, appContainer("app:v1", nil)),
		workloadPod(w, "web-b", oldRev, time.Hour, appContainer("app:v1", nil)), workloadPod(w, "web-c", newRev, time.Minute)}
	s := scene{server: "v1.37.1", manager: "v1.9.0", workloads: []*kruise.Workload{w}, pods: pods, metaOnly: true}.snapshot()
	got := podsDue(s)
	if len(got) != 1 || got[0] != pods[2].UID {
		t.Errorf("candidates = %v, want only the updated pod %s", got, pods[2].UID)
	}
}

// With `scan -l`, a workload whose pods the selector cut cannot have its controller's counts
// redone: with web-b left out, web-a looks kept by partition 1 (one pod off updateRevision) while
// the controller sees two and will update one of them. Such a workload is not judged; with every
// pod in the scan it is (partition 2: both old pods kept, both differ from their revision).
func TestResizePolicyDriftSelectorCutPods(t *testing.T) {
	restart := checktest.ResizePolicy("memory", "RestartContainer")
	w := rolloutWorkload(t, kruise.KindCloneSet, kruise.UpdateInPlaceIfPossible, 3, 1, []corev1.Container{appContainer("app:v2", restart)}, checktest.Partition(int64(1)))
	a := workloadPod(w, "web-a", oldRev, 30*24*time.Hour, appContainer("app:v1", nil))
	b := workloadPod(w, "web-b", oldRev, 30*24*time.Hour, appContainer("app:v1", nil))
	c := workloadPod(w, "web-c", newRev, time.Hour, appContainer("app:v2", restart))
	rev := controllerRevision(t, w, oldRev, 60*24*time.Hour, false, appContainer("app:v1", restart))
	partition2 := rolloutWorkload(t, kruise.KindCloneSet, kruise.UpdateInPlaceIfPossible, 3, 1, []corev1.Container{appContainer("app:v2", restart)}, checktest.Partition(int64(2)))
	for _, tt := range []struct {
		w    *kruise.Workload
		pods []*corev1.Pod
		want int
	}{{w, pods(a, c), 0}, {w, pods(a, b, c), 0}, {partition2, pods(a, c), 0}, {partition2, pods(a, b, c), 2}} {
		s := onV19(tt.w, tt.pods, rev).snapshot()
		s.Scope.LabelSelector = "tier=web"
		if got := New().Run(s, 0); len(got) != tt.want {
			t.Errorf("partition %d, %d pods in the scan: %d findings, want %d", *tt.w.Partition, len(tt.pods), len(got), tt.want)
		}
	}
}
