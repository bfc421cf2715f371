package fix

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// workload builds a workload as the apiserver returns it; strategy is the spec's strategy map
// (Deployment: spec.strategy; the others: spec.updateStrategy), nil when absent.
func workload(apiVersion, kind string, replicas int64, strategy map[string]any) *unstructured.Unstructured {
	spec := map[string]any{}
	if replicas >= 0 {
		spec["replicas"] = replicas
	}
	if strategy != nil {
		key := "updateStrategy"
		if kind == "Deployment" {
			key = "strategy"
		}
		spec[key] = strategy
	}
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind,
		"metadata": map[string]any{"name": "web", "namespace": "shop", "uid": "w-1"}, "spec": spec}}
	if strings.HasSuffix(kind, "DaemonSet") {
		u.Object["status"] = map[string]any{"desiredNumberScheduled": replicas}
		delete(spec, "replicas")
	}
	return u
}

func rolling(fields map[string]any) map[string]any {
	return map[string]any{"type": "RollingUpdate", "rollingUpdate": fields}
}

// TestBudgetOf resolves maxUnavailable per workload kind, for each way it is given: absent (the
// controller's default), a number, a percentage rounded as the controller rounds it.
func TestBudgetOf(t *testing.T) {
	const cs, asts, ads = "apps.kruise.io/v1alpha1", "apps.kruise.io/v1beta1", "apps.kruise.io/v1alpha1"
	tests := []struct {
		name     string
		u        *unstructured.Unstructured
		replicas int32
		want     int32
		source   string
	}{
		// OpenKruise v1.9.0 pkg/controller/cloneset/sync/cloneset_sync_utils.go
		// calculateDiffsWithExpectation: ValueOrDefault(maxUnavailable, DefaultCloneSetMaxUnavailable
		// "20%"), GetValueFromIntOrPercent(..., replicas, maxSurge == 0).
		{"CloneSet absent: 20% of 2 rounded up", workload(cs, "CloneSet", 2, map[string]any{"type": "InPlaceIfPossible"}), 2, 1, "default 20% of 2, rounded up"},
		{"CloneSet absent: 20% of 12 rounded up", workload(cs, "CloneSet", 12, nil), 12, 3, "default 20%"},
		{"CloneSet replicas absent defaults to 1", workload(cs, "CloneSet", -1, nil), 1, 1, "20% of 1"},
		{"CloneSet number", workload(cs, "CloneSet", 5, map[string]any{"maxUnavailable": int64(3)}), 5, 3, "maxUnavailable 3"},
		{"CloneSet percentage rounded up", workload(cs, "CloneSet", 3, map[string]any{"maxUnavailable": "50%"}), 3, 2, "50% of 3, rounded up"},
		{"CloneSet percentage rounded down when maxSurge > 0", workload(cs, "CloneSet", 3, map[string]any{"maxUnavailable": "50%", "maxSurge": int64(1)}), 3, 1, "rounded down"},
		{"CloneSet paused surges 0: rounded up", workload(cs, "CloneSet", 3, map[string]any{"maxUnavailable": "50%", "maxSurge": "10%", "paused": true}), 3, 2, "rounded up"},
		{"CloneSet maxUnavailable 0", workload(cs, "CloneSet", 4, map[string]any{"maxUnavailable": int64(0), "maxSurge": int64(1)}), 4, 0, "maxUnavailable 0"},

		// OpenKruise apis/apps/defaults/v1beta1.go SetDefaultsStatefulSet (maxUnavailable 1) and
		// pkg/controller/statefulset/stateful_set_control.go: GetValueFromIntOrPercent(..., false), at least 1.
		{"Advanced StatefulSet absent: 1", workload(asts, "StatefulSet", 5, nil), 5, 1, "default 1"},
		{"Advanced StatefulSet percentage rounded down", workload(asts, "StatefulSet", 5, rolling(map[string]any{"maxUnavailable": "50%"})), 5, 2, "50% of 5, rounded down"},
		{"Advanced StatefulSet small percentage raised to 1", workload(asts, "StatefulSet", 5, rolling(map[string]any{"maxUnavailable": "10%"})), 5, 1, "raised to 1"},
		{"Advanced StatefulSet number", workload(asts, "StatefulSet", 5, rolling(map[string]any{"maxUnavailable": int64(3)})), 5, 3, "maxUnavailable 3"},

		// kubernetes pkg/controller/deployment/util/deployment_util.go ResolveFenceposts: maxSurge
		// rounded up, maxUnavailable rounded down, both 0 -> maxUnavailable 1; defaults 25% (apps/v1 SetDefaults_Deployment).
		{"Deployment absent: 25% of 4 rounded down", workload("apps/v1", "Deployment", 4, nil), 4, 1, "default 25% of 4, rounded down"},
		{"Deployment absent, one replica: 0 (surge 1)", workload("apps/v1", "Deployment", 1, nil), 1, 0, "25% of 1, rounded down"},
		{"Deployment percentage rounded down", workload("apps/v1", "Deployment", 5, rolling(map[string]any{"maxUnavailable": "50%", "maxSurge": "25%"})), 5, 2, "50% of 5, rounded down"},
		{"Deployment number", workload("apps/v1", "Deployment", 5, rolling(map[string]any{"maxUnavailable": int64(2), "maxSurge": int64(0)})), 5, 2, "maxUnavailable 2"},
		{"Deployment both 0: 1", workload("apps/v1", "Deployment", 3, rolling(map[string]any{"maxUnavailable": "10%", "maxSurge": int64(0)})), 3, 1, "both 0"},
		{"Deployment surge only: 0", workload("apps/v1", "Deployment", 3, rolling(map[string]any{"maxUnavailable": int64(0), "maxSurge": int64(1)})), 3, 0, "maxUnavailable 0"},
		{"Deployment Recreate: one at a time", workload("apps/v1", "Deployment", 3, map[string]any{"type": "Recreate"}), 3, 1, "Recreate"},

		// kubernetes pkg/controller/statefulset/stateful_set_utils.go getStatefulSetMaxUnavailable:
		// default 1, GetScaledValueFromIntOrPercent(..., false), at least 1.
		{"StatefulSet absent: 1", workload("apps/v1", "StatefulSet", 4, nil), 4, 1, "default 1"},
		{"StatefulSet percentage rounded down", workload("apps/v1", "StatefulSet", 4, rolling(map[string]any{"maxUnavailable": "60%"})), 4, 2, "60% of 4, rounded down"},
		{"StatefulSet small percentage raised to 1", workload("apps/v1", "StatefulSet", 4, rolling(map[string]any{"maxUnavailable": "10%"})), 4, 1, "raised to 1"},
		{"StatefulSet OnDelete: one at a time", workload("apps/v1", "StatefulSet", 4, map[string]any{"type": "OnDelete"}), 4, 1, "OnDelete"},

		// kubernetes pkg/controller/daemon/update.go updatedDesiredNodeCounts with
		// util.UnavailableCount (GetScaledValueFromIntOrPercent(..., desired, true)); default 1;
		// both 0 -> 1. OpenKruise pkg/controller/daemonset/daemonset_util.go unavailableCount likewise.
		{"DaemonSet absent: 1", workload("apps/v1", "DaemonSet", 10, nil), 10, 1, "default 1"},
		{"DaemonSet percentage rounded up", workload("apps/v1", "DaemonSet", 10, rolling(map[string]any{"maxUnavailable": "25%"})), 10, 3, "25% of 10, rounded up"},
		{"DaemonSet surge: 0", workload("apps/v1", "DaemonSet", 10, rolling(map[string]any{"maxUnavailable": int64(0), "maxSurge": int64(1)})), 10, 0, "maxUnavailable 0"},
		{"DaemonSet both 0: 1", workload("apps/v1", "DaemonSet", 10, rolling(map[string]any{"maxUnavailable": int64(0), "maxSurge": int64(0)})), 10, 1, "both 0"},
		{"Advanced DaemonSet percentage rounded up", workload(ads, "DaemonSet", 5, rolling(map[string]any{"maxUnavailable": "10%"})), 5, 1, "10% of 5, rounded up"},

		{"ReplicaSet: one at a time", workload("apps/v1", "ReplicaSet", 3, nil), 3, 1, "no update strategy"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := BudgetOf(tt.u)
			if err != nil {
				t.Fatal(err)
			}
			if b.Replicas != tt.replicas || b.MaxUnavailable != tt.want {
				t.Errorf("replicas %d maxUnavailable %d, want %d and %d (%s)", b.Replicas, b.MaxUnavailable, tt.replicas, tt.want, b.Source)
			}
			if !strings.Contains(b.Source, tt.source) {
				t.Errorf("source %q does not say %q", b.Source, tt.source)
			}
			if b.Workload.Kind != tt.u.GetKind() || b.Workload.UID != "w-1" {
				t.Errorf("workload %+v", b.Workload)
			}
		})
	}
}

func TestBudgetOfRefusesWhatItDoesNotKnow(t *testing.T) {
	for _, u := range []*unstructured.Unstructured{
		workload("batch/v1", "Job", 3, nil),
		workload("argoproj.io/v1alpha1", "Rollout", 3, nil),
		workload("apps.kruise.io/v1alpha1", "CloneSet", 3, map[string]any{"maxUnavailable": "lots"}),
		workload("apps.kruise.io/v1alpha1", "CloneSet", 3, map[string]any{"maxUnavailable": true}),
	} {
		if b, err := BudgetOf(u); err == nil {
			t.Errorf("%s %v: budget %+v, want an error", u.GetKind(), u.Object["spec"], b)
		}
	}
}

// TestGroupJudge: a workload whose budget allows no pod away is refused unless the action was named.
func TestGroupJudge(t *testing.T) {
	one := Budget{Workload: ref("CloneSet", "inventory"), Replicas: 1, MaxUnavailable: 1, Source: "x"}
	zero := Budget{Workload: ref("Deployment", "api"), Replicas: 3, MaxUnavailable: 0, Source: "its rolling update strategy"}
	two := Budget{Workload: ref("CloneSet", "web"), Replicas: 2, MaxUnavailable: 1}
	tests := []struct {
		name     string
		g        Group
		refusal  string
		wave     int32
		minReady int32
	}{
		{"single replica refused", Group{Budget: one}, "has 1 replica", 1, 0},
		{"single replica, action named", Group{Budget: one, ActionChosen: true}, "", 1, 0},
		{"maxUnavailable 0 refused", Group{Budget: zero}, "allows no unavailable pod", 0, 3},
		{"maxUnavailable 0, action named: one at a time", Group{Budget: zero, ActionChosen: true}, "", 1, 2},
		{"two replicas", Group{Budget: two}, "", 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := tt.g
			g.judge("evict-pod")
			if (tt.refusal == "") != (g.Refusal == "") || !strings.Contains(g.Refusal, tt.refusal) {
				t.Errorf("refusal %q, want %q", g.Refusal, tt.refusal)
			}
			if tt.refusal != "" && !strings.Contains(g.Refusal, "--action evict-pod") {
				t.Errorf("refusal %q does not say how to go ahead", g.Refusal)
			}
			if g.WaveSize() != tt.wave || g.MinReady() != tt.minReady {
				t.Errorf("wave %d minReady %d, want %d and %d", g.WaveSize(), g.MinReady(), tt.wave, tt.minReady)
			}
		})
	}
}

// TestWavePick: a wave takes serving pods while the workload keeps MinReady, a PodDisruptionBudget
// over the pods caps it (one is still sent so the Eviction API answers), and pods that do not
// serve cost nothing.
func TestWavePick(t *testing.T) {
	g := &Group{Budget: Budget{Workload: ref("CloneSet", "web"), Replicas: 5, MaxUnavailable: 2}}
	pods := map[string]*corev1.Pod{}
	var steps []*Step
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		pods["u"+name] = readyPod(name, true, false)
		steps = append(steps, &Step{Action: "evict-pod", Target: pod("shop", name, "u"+name, "1")})
	}
	pods["ue"] = readyPod("e", false, false)
	pods["ud"] = readyPod("d", true, true)
	tests := []struct {
		name   string
		ready  int32
		pdbCap int32
		want   string
	}{
		{"budget 2 of 3 serving: 2 serving and the 2 not serving", 5, -1, "a,b,d,e"},
		{"one already away: 1", 4, -1, "a,d,e"},
		{"none left: only the pods that do not serve", 3, -1, "d,e"},
		{"a PDB allowing 1", 5, 1, "a,d,e"},
		{"a PDB allowing 0: one sent for the Eviction API to judge", 5, 0, "a,d,e"},
		{"a PDB allowing more than the budget", 5, 4, "a,b,d,e"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &wave{g: g, pending: steps, taken: map[types.UID]bool{}}
			picked := w.pick(waveState{ready: tt.ready, pods: pods, pdbCap: tt.pdbCap})
			var names []string
			for _, s := range picked {
				names = append(names, s.Target.Name)
			}
			if got := strings.Join(names, ","); got != tt.want {
				t.Errorf("picked %s, want %s", got, tt.want)
			}
			if len(w.pending)+len(picked) != len(steps) {
				t.Errorf("pending %d + picked %d != %d", len(w.pending), len(picked), len(steps))
			}
			for _, s := range picked {
				if p := pods[s.Target.UID]; serving(p) != w.taken[p.UID] {
					t.Errorf("pod %s serving %v, taken %v: only serving pods count against the budget", p.Name, serving(p), w.taken[p.UID])
				}
			}
		})
	}
}

func ref(kind, name string) report.ObjectRef {
	return report.ObjectRef{APIVersion: "apps.kruise.io/v1alpha1", Kind: kind, Namespace: "shop", Name: name, UID: name + "-uid"}
}

func readyPod(name string, ready, deleting bool) *corev1.Pod {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop", UID: types.UID("u" + name)},
		Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}}}
	if deleting {
		now := metav1.Now()
		p.DeletionTimestamp = &now
	}
	return p
}

// TestBudgetMinReadySeconds reads minReadySeconds where each controller keeps it, and counts a
// pod available only once it has been Ready that long, as IsPodAvailable does: a replacement
// Ready for less does not yet let the next wave go.
func TestBudgetMinReadySeconds(t *testing.T) {
	withMinReady := func(u *unstructured.Unstructured, v int64, fields ...string) *unstructured.Unstructured {
		if err := unstructured.SetNestedField(u.Object, v, fields...); err != nil {
			t.Fatal(err)
		}
		return u
	}
	for _, tt := range []struct {
		name string
		u    *unstructured.Unstructured
		want int32
	}{
		{"Deployment", withMinReady(workload("apps/v1", "Deployment", 3, nil), 30, "spec", "minReadySeconds"), 30},
		{"CloneSet", withMinReady(workload("apps.kruise.io/v1alpha1", "CloneSet", 3, nil), 20, "spec", "minReadySeconds"), 20},
		{"StatefulSet", withMinReady(workload("apps/v1", "StatefulSet", 3, nil), 10, "spec", "minReadySeconds"), 10},
		{"Advanced StatefulSet: in its rolling update strategy", withMinReady(workload("apps.kruise.io/v1beta1", "StatefulSet", 3, rolling(map[string]any{})), 40,
			"spec", "updateStrategy", "rollingUpdate", "minReadySeconds"), 40},
		{"Advanced StatefulSet: spec.minReadySeconds is not its field", withMinReady(workload("apps.kruise.io/v1beta1", "StatefulSet", 3, nil), 40, "spec", "minReadySeconds"), 0},
		{"absent", workload("apps/v1", "DaemonSet", 3, nil), 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b, err := BudgetOf(tt.u)
			if err != nil {
				t.Fatal(err)
			}
			if b.MinReadySeconds != tt.want {
				t.Errorf("minReadySeconds %d, want %d", b.MinReadySeconds, tt.want)
			}
		})
	}

	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	readyFor := func(name string, d time.Duration) *corev1.Pod {
		p := readyPod(name, true, false)
		p.Status.Conditions[0].LastTransitionTime = metav1.NewTime(now.Add(-d))
		return p
	}
	b := Budget{Workload: ref("CloneSet", "web"), Replicas: 3, MaxUnavailable: 1, MinReadySeconds: 30}
	// IsPodAvailable: Ready since strictly more than minReadySeconds.
	if !b.available(readyFor("old", time.Minute), now) || b.available(readyFor("new", 10*time.Second), now) || b.available(readyFor("edge", 30*time.Second), now) {
		t.Error("available: want Ready for more than minReadySeconds")
	}
	// The Advanced StatefulSet counts a pod outside lifecycle state Normal, or not Running,
	// unavailable (isRunningAndAvailable, kruise v1.9.0).
	asts := Budget{Workload: report.ObjectRef{APIVersion: "apps.kruise.io/v1beta1", Kind: "StatefulSet", Name: "db"}, Replicas: 3, MaxUnavailable: 1}
	running := readyFor("db-0", time.Hour)
	running.Status.Phase = corev1.PodRunning
	preparing := running.DeepCopy()
	preparing.Labels = map[string]string{"lifecycle.apps.kruise.io/state": "PreparingUpdate"}
	if !asts.available(running, now) || asts.available(preparing, now) || !(Budget{Workload: ref("CloneSet", "web")}).available(preparing, now) {
		t.Error("available: want the Advanced StatefulSet's lifecycle rule for its pods only")
	}
	// Three replicas, one a replacement Ready for 10s: the controller counts two available, so
	// no serving pod may go yet; the replacement itself costs nothing.
	pods := map[string]*corev1.Pod{"ua": readyFor("a", time.Hour), "ub": readyFor("b", time.Hour), "uc": readyFor("c", 10*time.Second)}
	steps := []*Step{{Action: "evict-pod", Target: pod("shop", "a", "ua", "1")}, {Action: "evict-pod", Target: pod("shop", "c", "uc", "1")}}
	w := &wave{g: &Group{Budget: b}, pending: steps, taken: map[types.UID]bool{}}
	var ready int32
	for _, p := range pods {
		if b.available(p, now) {
			ready++
		}
	}
	picked := w.pick(waveState{ready: ready, pods: pods, pdbCap: -1, now: now})
	if len(picked) != 1 || picked[0].Target.Name != "c" {
		t.Errorf("picked %d steps, want only the pod not yet available", len(picked))
	}
	// A PodDisruptionBudget counts the Ready replacement healthy, so it costs a disruption: with
	// one allowed, one pod goes in this wave, not the available one and the replacement both.
	w = &wave{g: &Group{Budget: b}, pending: steps, taken: map[types.UID]bool{}}
	if picked := w.pick(waveState{ready: 3, pods: pods, pdbCap: 1, now: now}); len(picked) != 1 {
		t.Errorf("with a PodDisruptionBudget allowing 1: picked %d steps, want 1", len(picked))
	}
}
