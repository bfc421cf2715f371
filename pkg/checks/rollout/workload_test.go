package rollout

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	ct "github.com/workloaddoctor/kubectl-workloaddoctor/internal/checktest"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

func evidenceHas(t *testing.T, f report.Finding, want string) {
	t.Helper()
	for _, e := range f.RootCause.Evidence {
		if strings.Contains(e, want) {
			return
		}
	}
	t.Errorf("evidence lacks %q: %q", want, f.RootCause.Evidence)
}

// A template update whose new pods cannot be scheduled, as observed with the real v1.9.0
// manager (domain.md): ProgressDeadlineExceeded after progressDeadlineSeconds (30s), the new pod
// Pending with PodScheduled=False/Unschedulable and, with no preNormal hook, PreparingNormal until
// it is bound (refreshPodState, pkg/controller/cloneset/sync/cloneset_update.go). The CloneSet's
// own deadline is the threshold, so the default 10m does not hide it.
func TestUnschedulableRolloutPastDeadline(t *testing.T) {
	w := cloneSet(t, 1, 0, ct.SpecField(int64(30), "progressDeadlineSeconds"), withConditions(1, 0, deadlineExceeded(4*time.Minute)))
	pending := clonePod(w, "web-new", newRev, 5*time.Minute, ct.Unschedulable("0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector.", 5*time.Minute),
		ct.Lifecycle(kruise.StatePreparingNormal, 5*time.Minute), notReady())
	c := ct.Cluster{Workloads: []*kruise.Workload{w}, Pods: []*corev1.Pod{pending,
		clonePod(w, "web-a", oldRev, 2*time.Hour), clonePod(w, "web-b", oldRev, 2*time.Hour)}}
	f := only(t, run(t, c, -1))
	if f.RootCause.ID != RootCausePodsUnschedulable || f.Object.Kind != kruise.KindCloneSet || f.Object.Name != "web" {
		t.Fatalf("got %s on %s", f.RootCause.ID, f.Object)
	}
	evidenceHas(t, f, "didn't match Pod's node affinity/selector")
	evidenceHas(t, f, "ProgressDeadlineExceeded")
	// The PreparingNormal pod is stuck-preparing-normal's: pointed at, not judged as a finding here.
	if len(f.BlockedBy) != 1 || f.BlockedBy[0].Name != "web-new" || f.BlockedBy[0].Kind != "Pod" {
		t.Errorf("blockedBy = %+v, want pod web-new", f.BlockedBy)
	}
	if len(f.Fixes) != 0 {
		t.Errorf("a rollout a person must unblock proposes no write, got %+v", f.Fixes)
	}
	if want := ct.Ago(4*time.Minute + 30*time.Second).Truncate(time.Second); !f.Since.Equal(want) {
		t.Errorf("since = %s, want %s (the deadline counted back from the condition)", f.Since, want)
	}
}

// Causes read from the kubelet on pods recreated from the new revision (ReCreate), none past a
// CloneSet deadline: the 10m default applies from the newest pod's creation.
func TestPodCauses(t *testing.T) {
	cases := []struct {
		name, cause, evidence string
		opt                   ct.Option
	}{
		{"image pull", RootCauseImagePullFailing, "ImagePullBackOff", ct.Waiting("app", "ImagePullBackOff", `Back-off pulling image "nginx:1.28"`, 0)},
		{"crash loop", RootCauseCrashLooping, "CrashLoopBackOff after 7 restarts", ct.Waiting("app", "CrashLoopBackOff", "back-off 5m0s restarting failed container", 7)},
		{"readiness gate", RootCausePodsNotReady, "readiness gate KruisePodReady not True", setCondition("KruisePodReady", corev1.ConditionFalse, "", "")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := cloneSet(t, 1, 0)
			bad := clonePod(w, "web-new", newRev, 25*time.Minute, tc.opt, notReady())
			c := ct.Cluster{Workloads: []*kruise.Workload{w}, Pods: []*corev1.Pod{bad, clonePod(w, "web-a", oldRev, 2*time.Hour), clonePod(w, "web-b", oldRev, 2*time.Hour)}}
			f := only(t, run(t, c, -1))
			if f.RootCause.ID != tc.cause {
				t.Fatalf("root cause %s, want %s (%q)", f.RootCause.ID, tc.cause, f.RootCause.Evidence)
			}
			evidenceHas(t, f, tc.evidence)
			evidenceHas(t, f, "1 of 3 pods to update are on revision "+newRev+", 0 of them ready")
			// The same pod five minutes old is a rollout still within the threshold.
			young := clonePod(w, "web-new", newRev, 5*time.Minute, tc.opt, notReady())
			c.Pods[0] = young
			none(t, run(t, c, -1))
		})
	}
}

// inPlacePod is a pod the CloneSet started to update in place as Update and updatePodInPlace
// (pkg/util/inplaceupdate/inplace_update.go, kruise v1.9.0) leave it: revision label moved to
// newRev, spec image nginx:1.28, state annotation recording the old image ID, InPlaceUpdateReady
// False reason StartInPlaceUpdate, lifecycle Updating; the kubelet still reports the old image.
func inPlacePod(w *kruise.Workload, state string, opts ...ct.Option) *corev1.Pod {
	base := []ct.Option{ct.Annotations(map[string]string{kruise.AnnotationInPlaceState: state}),
		ct.Lifecycle(kruise.StateUpdating, 20*time.Minute), ct.ContainerImage("app", "nginx:1.27", "sha256:old"),
		setCondition(kruise.ConditionInPlaceReady, corev1.ConditionFalse, "StartInPlaceUpdate", ""), notReady()}
	return clonePod(w, "web-a", newRev, 2*time.Hour, append(base, opts...)...)
}

func TestInPlaceUpdateNeverCompleted(t *testing.T) {
	imageState := `{"revision":"` + newRev + `","updateTimestamp":"2026-06-12T11:40:00Z","lastContainerStatuses":{"app":{"imageID":"sha256:old"}},"updateImages":true}`
	cases := []struct {
		name, cause, evidence string
		pod                   func(w *kruise.Workload) *corev1.Pod
	}{
		{"old image still running", RootCauseInPlaceUpdateIncomplete, "app runs nginx:1.27, spec asks nginx:1.28",
			func(w *kruise.Workload) *corev1.Pod { return inPlacePod(w, imageState) }},
		{"new image cannot be pulled", RootCauseImagePullFailing, "(in-place update) waits with ErrImagePull",
			func(w *kruise.Workload) *corev1.Pod {
				return inPlacePod(w, imageState, ct.Waiting("app", "ErrImagePull", "manifest unknown", 0))
			}},
		{"resize infeasible", RootCauseInPlaceResizePending, "PodResizePending reason Infeasible",
			func(w *kruise.Workload) *corev1.Pod {
				return inPlacePod(w, `{"revision":"`+newRev+`","updateResources":true}`,
					setCondition(conditionResizePending, corev1.ConditionTrue, "Infeasible", "Node didn't have enough capacity: cpu"))
			}},
		{"env from metadata without kruise-daemon", RootCauseInPlaceDaemonMissing, "DaemonSet kruise-daemon was not found",
			func(w *kruise.Workload) *corev1.Pod {
				return inPlacePod(w, `{"revision":"`+newRev+`","updateEnvFromMetadata":true}`)
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := cloneSet(t, 1, 0, ct.UpdateStrategy(kruise.UpdateInPlaceIfPossible))
			c := ct.Cluster{Workloads: []*kruise.Workload{w}, Pods: []*corev1.Pod{tc.pod(w),
				clonePod(w, "web-b", oldRev, 2*time.Hour), clonePod(w, "web-c", oldRev, 2*time.Hour)}}
			f := only(t, run(t, c, -1))
			if f.RootCause.ID != tc.cause {
				t.Fatalf("root cause %s, want %s (%q)", f.RootCause.ID, tc.cause, f.RootCause.Evidence)
			}
			evidenceHas(t, f, tc.evidence)
		})
	}
	// Completed: the kubelet reports the new image and InPlaceUpdateReady is True again.
	w := cloneSet(t, 3, 3, ct.UpdateStrategy(kruise.UpdateInPlaceIfPossible))
	done := clonePod(w, "web-a", newRev, 2*time.Hour, ct.Annotations(map[string]string{kruise.AnnotationInPlaceState: imageState}),
		ct.ContainerImage("app", "nginx:1.28", "sha256:new"))
	none(t, run(t, ct.Cluster{Workloads: []*kruise.Workload{w}, Pods: []*corev1.Pod{done}}, 0))
}

// An inPlaceUpdate hook whose finalizer nobody removes keeps the pod PreparingUpdate on the old
// revision (updatePod, cloneset_update.go: IsPodHooked returns early).
func TestPreparingUpdateHeldByHook(t *testing.T) {
	hook := ct.LifecycleHooks(map[string]any{"inPlaceUpdate": map[string]any{"finalizersHandler": []any{"example.com/drain"}}})
	w := cloneSet(t, 0, 0, ct.UpdateStrategy(kruise.UpdateInPlaceIfPossible), hook)
	held := clonePod(w, "web-a", oldRev, 2*time.Hour, ct.Lifecycle(kruise.StatePreparingUpdate, 40*time.Minute), ct.Finalizers("drainer", "example.com/drain"))
	c := ct.Cluster{Workloads: []*kruise.Workload{w}, Pods: []*corev1.Pod{held, clonePod(w, "web-b", oldRev, 2*time.Hour)}}
	f := only(t, run(t, c, -1))
	if f.RootCause.ID != RootCauseInPlaceHookPending {
		t.Fatalf("root cause %s", f.RootCause.ID)
	}
	evidenceHas(t, f, "held by the inPlaceUpdate hook's finalizer example.com/drain")
	// Released: the finalizer is gone, the pod is the controller's to move on.
	released := clonePod(w, "web-a", oldRev, 2*time.Hour, ct.Lifecycle(kruise.StatePreparingUpdate, 40*time.Minute))
	c.Pods[0] = released
	none(t, run(t, c, -1))
}

// A Terminating new pod is stuck-terminating's: the rollout finding points at it.
func TestTerminatingPodBlocksRollout(t *testing.T) {
	w := cloneSet(t, 1, 0)
	gone := clonePod(w, "web-new", newRev, time.Hour, ct.Deleted(30*time.Minute, 30), notReady())
	f := only(t, run(t, ct.Cluster{Workloads: []*kruise.Workload{w}, Pods: []*corev1.Pod{gone}}, -1))
	if f.RootCause.ID != RootCauseBlockedByStuckPod || len(f.BlockedBy) != 1 || f.BlockedBy[0].Name != "web-new" {
		t.Fatalf("got %s blockedBy %+v", f.RootCause.ID, f.BlockedBy)
	}
	evidenceHas(t, f, "stuck-terminating judges it")
}

// Past its deadline with every new pod Ready (a slow readiness the deadline caught): the
// controller's own verdict is reported, as a warning without a pod cause.
func TestDeadlineWithoutPodCause(t *testing.T) {
	w := cloneSet(t, 1, 1, ct.SpecField(int64(60), "progressDeadlineSeconds"), withConditions(1, 1, deadlineExceeded(time.Minute)))
	c := ct.Cluster{Workloads: []*kruise.Workload{w}, Pods: []*corev1.Pod{clonePod(w, "web-new", newRev, 3*time.Minute)}}
	f := only(t, run(t, c, -1))
	if f.RootCause.ID != RootCauseProgressDeadline || f.Severity != report.SeverityWarning {
		t.Fatalf("got %s/%s", f.RootCause.ID, f.Severity)
	}
}

// Rollouts held or still moving are the user's choice or the controller's work: no finding.
func TestHealthyRollouts(t *testing.T) {
	unschedulable := ct.Unschedulable("0/3 nodes are available: 3 Insufficient cpu.", 40*time.Minute)
	cases := []struct {
		name   string
		w      func(t *testing.T) *kruise.Workload
		pods   func(w *kruise.Workload) []*corev1.Pod
		minAge time.Duration
	}{
		{"within its deadline", func(t *testing.T) *kruise.Workload {
			// Progressing=True since 2m, deadline 600s: calculateProgressingStatus default branch.
			return cloneSet(t, 1, 0, ct.SpecField(int64(600), "progressDeadlineSeconds"), withConditions(1, 0, progressing("CloneSetUpdated", 2*time.Minute)))
		}, func(w *kruise.Workload) []*corev1.Pod {
			return []*corev1.Pod{clonePod(w, "web-new", newRev, 2*time.Minute, ct.Unschedulable("0/3 nodes are available", 2*time.Minute), notReady())}
		}, -1},
		{"paused", func(t *testing.T) *kruise.Workload {
			return cloneSet(t, 1, 0, ct.Paused(), withConditions(1, 0, progressing("CloneSetPaused", time.Hour)))
		}, func(w *kruise.Workload) []*corev1.Pod {
			return []*corev1.Pod{clonePod(w, "web-new", newRev, time.Hour, unschedulable, notReady())}
		}, 0},
		{"partition reached", func(t *testing.T) *kruise.Workload {
			// partition 2 of 3: one pod updated and available is CloneSetPartitionAvailable.
			return cloneSet(t, 1, 1, ct.Partition(int64(2)), withConditions(1, 1, progressing("ProgressPartitionAvailable", time.Hour)))
		}, func(w *kruise.Workload) []*corev1.Pod {
			return []*corev1.Pod{clonePod(w, "web-new", newRev, time.Hour), clonePod(w, "web-a", oldRev, 2*time.Hour, ct.Waiting("app", "CrashLoopBackOff", "", 3), notReady())}
		}, 0},
		{"limited by maxUnavailable", func(t *testing.T) *kruise.Workload {
			// One pod at a time, the new one Ready: the next waits for the controller, not a person.
			return cloneSet(t, 1, 1, ct.SpecField(int64(1), "updateStrategy", "maxUnavailable"))
		}, func(w *kruise.Workload) []*corev1.Pod {
			return []*corev1.Pod{clonePod(w, "web-new", newRev, time.Hour), clonePod(w, "web-a", oldRev, 2*time.Hour), clonePod(w, "web-b", oldRev, 2*time.Hour)}
		}, 0},
		{"OnDelete", func(t *testing.T) *kruise.Workload {
			return cloneSet(t, 1, 0, ct.UpdateStrategy(kruise.UpdateOnDelete))
		}, func(w *kruise.Workload) []*corev1.Pod {
			return []*corev1.Pod{clonePod(w, "web-new", newRev, time.Hour, unschedulable, notReady())}
		}, 0},
		{"status not written for this generation", func(t *testing.T) *kruise.Workload {
			return cloneSet(t, 1, 0, ct.Generation(3))
		}, func(w *kruise.Workload) []*corev1.Pod {
			return []*corev1.Pod{clonePod(w, "web-new", newRev, time.Hour, unschedulable, notReady())}
		}, 0},
		{"done", func(t *testing.T) *kruise.Workload { return cloneSet(t, 3, 3) }, func(w *kruise.Workload) []*corev1.Pod {
			return []*corev1.Pod{clonePod(w, "web-a", newRev, time.Hour), clonePod(w, "web-b", newRev, time.Hour), clonePod(w, "web-c", newRev, time.Hour)}
		}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := tc.w(t)
			none(t, run(t, ct.Cluster{Workloads: []*kruise.Workload{w}, Pods: tc.pods(w)}, tc.minAge))
		})
	}
}

// Advanced StatefulSet and DaemonSet rollouts are judged from their own counts.
func TestOtherKinds(t *testing.T) {
	sts := ct.Workload(t, kruise.KindStatefulSet, "shop", "db", ct.Replicas(2), ct.Generation(2),
		ct.Status(map[string]any{"observedGeneration": int64(2), "replicas": int64(2), "updatedReplicas": int64(1), "updatedReadyReplicas": int64(0),
			"updateRevision": "db-2", "currentRevision": "db-1"}))
	p := ct.Pod("shop", "db-1", ct.OwnedByWorkload(sts), ct.CreatedAgo(30*time.Minute), ct.Labels(map[string]string{"app": "db", revisionLabel: "db-2"}),
		ct.Containers(corev1.Container{Name: "app", Image: "pg:17"}), ct.Waiting("app", "ImagePullBackOff", "", 0), ct.PodReady(corev1.ConditionFalse, 30*time.Minute))
	f := only(t, run(t, ct.Cluster{Workloads: []*kruise.Workload{sts}, Pods: []*corev1.Pod{p}}, -1))
	if f.RootCause.ID != RootCauseImagePullFailing || f.Object.Kind != kruise.KindStatefulSet {
		t.Fatalf("got %s on %s", f.RootCause.ID, f.Object)
	}
	ds := ct.Workload(t, kruise.KindDaemonSet, "shop", "agent", ct.Generation(2),
		ct.Status(map[string]any{"observedGeneration": int64(2), "desiredNumberScheduled": int64(3), "updatedNumberScheduled": int64(1),
			"daemonSetHash": "agent-2"}))
	dp := ct.Pod("shop", "agent-x", ct.OwnedByWorkload(ds), ct.CreatedAgo(30*time.Minute), ct.Labels(map[string]string{"app": "agent", revisionLabel: "agent-2"}),
		ct.Containers(corev1.Container{Name: "app", Image: "agent:2"}), ct.Waiting("app", "CrashLoopBackOff", "", 9), ct.PodReady(corev1.ConditionFalse, 30*time.Minute))
	f = only(t, run(t, ct.Cluster{Workloads: []*kruise.Workload{ds}, Pods: []*corev1.Pod{dp}}, -1))
	if f.RootCause.ID != RootCauseCrashLooping || f.Object.Kind != kruise.KindDaemonSet {
		t.Fatalf("got %s on %s", f.RootCause.ID, f.Object)
	}
}

// Only the recent pods of workloads whose counts are short are read in full, at most ten each.
func TestPodCandidates(t *testing.T) {
	stalled := cloneSet(t, 12, 0, ct.Replicas(12))
	var pods []*corev1.Pod
	for i := 0; i < 12; i++ {
		pods = append(pods, clonePod(stalled, "web-"+string(rune('a'+i)), newRev, time.Duration(i+1)*time.Minute))
	}
	done := ct.Workload(t, kruise.KindCloneSet, "shop", "api", ct.Generation(2), ct.Status(ct.CloneSetStatus(2, 1, 1, "api-2", "api-2")))
	pods = append(pods, ct.Pod("shop", "api-a", ct.OwnedByWorkload(done), ct.Labels(map[string]string{"app": "api", revisionLabel: "api-2"})))
	s := ct.Cluster{Workloads: []*kruise.Workload{stalled, done}, MetaOnlyPods: pods}.Snapshot()
	got := New().(check).DeclareReads(s).PodsDue(s)
	if len(got) != maxCandidates {
		t.Fatalf("got %d candidates, want %d", len(got), maxCandidates)
	}
	if !slices.Contains(got, "uid-web-a") || slices.Contains(got, "uid-web-l") || slices.Contains(got, "uid-api-a") {
		t.Errorf("candidates %v: want the newest pods of web only", got)
	}
}

// v1.9.0 sets ProgressDeadlineExceeded the moment a CloneSet Available for longer than its
// deadline starts a rollout: CloneSetDeadlineExceeded reads the Available condition's
// lastUpdateTime, which SetCloneSetCondition kept from when it first became Available
// (pkg/controller/cloneset/utils/cloneset_utils.go). A rollout whose new pod was created seconds
// ago is not stalled whatever the condition says.
func TestDeadlineSetAtRolloutStart(t *testing.T) {
	w := cloneSet(t, 1, 0, ct.SpecField(int64(30), "progressDeadlineSeconds"), withConditions(1, 0, deadlineExceeded(5*time.Second)))
	starting := clonePod(w, "web-new", newRev, 5*time.Second, ct.Waiting("app", "ContainerCreating", "", 0), notReady())
	c := ct.Cluster{Workloads: []*kruise.Workload{w}, Pods: []*corev1.Pod{starting}}
	none(t, run(t, c, -1))
	// Once the pod has waited the deadline the finding comes, with the kubelet's reason.
	c.Pods[0] = clonePod(w, "web-new", newRev, 40*time.Second, ct.Waiting("app", "ErrImagePull", "not found", 0), notReady())
	if f := only(t, run(t, c, -1)); f.RootCause.ID != RootCauseImagePullFailing {
		t.Errorf("root cause %s", f.RootCause.ID)
	}
}

// A scale-up whose new pod waits PreparingNormal on its preNormal hook: stuck-preparing-normal
// reports the pod; the CloneSet's finding points at it, and does not call it merely not Ready
// (KruisePodReady is False while the pod is PreparingNormal). A pod retiring in PreparingDelete
// by design holds nothing.
func TestPreparingNormalAndPreparingDelete(t *testing.T) {
	w := cloneSet(t, 3, 2)
	waiting := clonePod(w, "web-new", newRev, 30*time.Minute, ct.Lifecycle(kruise.StatePreparingNormal, 30*time.Minute),
		setCondition("KruisePodReady", corev1.ConditionFalse, "", ""), notReady())
	c := ct.Cluster{Workloads: []*kruise.Workload{w}, Pods: []*corev1.Pod{waiting, clonePod(w, "web-a", newRev, time.Hour), clonePod(w, "web-b", newRev, time.Hour)}}
	f := only(t, run(t, c, -1))
	if f.RootCause.ID != RootCauseBlockedByStuckPod || len(f.BlockedBy) != 1 || f.BlockedBy[0].Name != "web-new" {
		t.Fatalf("got %s blockedBy %+v", f.RootCause.ID, f.BlockedBy)
	}
	retiring := clonePod(w, "web-new", newRev, 30*time.Minute, ct.Lifecycle(kruise.StatePreparingDelete, 30*time.Minute),
		setCondition("KruisePodReady", corev1.ConditionFalse, "", ""), notReady())
	c.Pods[0] = retiring
	none(t, run(t, c, 0))
	specified := clonePod(w, "web-new", newRev, 30*time.Minute, ct.Labels(map[string]string{kruise.LabelSpecifiedDelete: ""}), notReady())
	c.Pods[0] = specified
	none(t, run(t, c, 0))
}

// Every pod on the update revision (currentRevision caught up, calculateStatus in
// cloneset_status.go): a pod crashing or not Ready now is the app's trouble, not a stalled
// rollout. A pod that never got scheduled still holds a scale-up.
func TestFinishedRolloutWithUnhealthyPod(t *testing.T) {
	st := ct.CloneSetStatus(2, 3, 3, newRev, newRev)
	st["updatedReadyReplicas"] = int64(2)
	w := cloneSet(t, 3, 2, ct.Status(st))
	crashing := clonePod(w, "web-c", newRev, 3*time.Hour, ct.Waiting("app", "CrashLoopBackOff", "", 40), notReady())
	c := ct.Cluster{Workloads: []*kruise.Workload{w}, Pods: []*corev1.Pod{clonePod(w, "web-a", newRev, 3*time.Hour), clonePod(w, "web-b", newRev, 3*time.Hour), crashing}}
	none(t, run(t, c, 0))
	// The same with a partition: the canary step finished (currentRevision stays behind, as
	// v1.9.0 moves it only once every replica is updated), its crashing pod is the app's trouble.
	staged := cloneSet(t, 2, 1, ct.SpecField(int64(1), "updateStrategy", "partition"))
	none(t, run(t, ct.Cluster{Workloads: []*kruise.Workload{staged}, Pods: []*corev1.Pod{clonePod(staged, "web-a", oldRev, 3*time.Hour),
		clonePod(staged, "web-b", newRev, 3*time.Hour), clonePod(staged, "web-c", newRev, 3*time.Hour, ct.Waiting("app", "CrashLoopBackOff", "", 40), notReady())}}, 0))
	c.Pods[2] = clonePod(w, "web-c", newRev, time.Hour, ct.Unschedulable("0/3 nodes are available: 3 Insufficient memory.", time.Hour), notReady())
	if f := only(t, run(t, c, -1)); f.RootCause.ID != RootCausePodsUnschedulable {
		t.Errorf("root cause %s", f.RootCause.ID)
	}
}
