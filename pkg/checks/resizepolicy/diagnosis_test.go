package resizepolicy

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/checktest"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

func TestResizePolicyDriftRootCauses(t *testing.T) {
	cs := func(t *testing.T, tpl ...corev1.Container) *kruise.Workload {
		return inPlaceWorkload(t, kruise.KindCloneSet, kruise.UpdateInPlaceIfPossible, tpl)
	}
	defaulted := checktest.ResizePolicy("cpu", "NotRequired", "memory", "NotRequired")
	tests := []struct {
		name     string
		cluster  func(t *testing.T) scene
		want     string // root cause; "" for no finding
		evidence []string
		absent   []string // evidence must not contain
		fix      bool     // evict-pod offered
		since    time.Time
	}{
		{
			name: "old kruise, v1.37 apiserver, pod defaulted before the upgrade, update rejected",
			cluster: func(t *testing.T) scene {
				w := cs(t, appContainer("app:v2", nil))
				w.Status.RawConditions = []kruise.WorkloadCondition{{Type: "FailedUpdate", Status: "True",
					Message: fmt.Sprintf(forbidden, "web-x7k2p")}}
				p := startedInPlace(workloadPod(w, "web-x7k2p", oldRev, 30*24*time.Hour, appContainer("app:v1", defaulted)), 20*time.Minute)
				return scene{server: "v1.37.1", manager: "v1.6.3", workloads: []*kruise.Workload{w}, pods: []*corev1.Pod{p},
					events: []*corev1.Event{failedInPlace(w, "web-x7k2p", 19*time.Minute, 12)}}
			},
			want: RootCauseKruiseDropsResizePolicy, fix: true, since: checktest.Now.Add(-20 * time.Minute),
			evidence: []string{
				"apiserver v1.37.1 (from /version) does not default resizePolicy",
				"openkruise/kruise-manager:v1.6.3 (v1.6.3): versions < v1.7.0 are built against a Kubernetes API without resizePolicy",
				"container app: pod resizePolicy cpu=NotRequired,memory=NotRequired; template unset",
				"inferred: apiserver v1.37.1 does not default resizePolicy, so an update without the field changes every container that carries it: app",
				`event FailedUpdatePodInPlace on cloneset/web (x12) at 2026-06-12T11:59:00Z: "failed to update pod web-x7k2p in-place(revision web-7c9f5d8b6): Pod \"web-x7k2p\" is invalid: spec: Forbidden: pod updates may not change fields other than ..."; the apiserver's diff changes ResizePolicy`,
				"pod condition InPlaceUpdateReady=False (reason StartInPlaceUpdate) since 2026-06-12T11:40:00Z: an in-place update started and never completed",
				"pod is on revision web-6b8d7f9c4; cloneset/web is rolling out updateRevision web-7c9f5d8b6 (1 of 1 pods not updated, partition 0): the rollout replaces it",
				`cloneset/web condition FailedUpdate: "Pod \"web-x7k2p\" is invalid: spec: Forbidden: pod updates may not change fields other than ..."`,
			},
			absent: []string{"SECRET_TOKEN", "s3cr3t", "spec.tolerations"},
		},
		{
			name: "old kruise, v1.37 apiserver, no event yet: rejection inferred and said so",
			cluster: func(t *testing.T) scene {
				w := cs(t, appContainer("app:v1", nil))
				p := workloadPod(w, "web-x7k2p", newRev, time.Hour, appContainer("app:v1", checktest.ResizePolicy("memory", "RestartContainer")))
				return scene{server: "v1.37.1", manager: "v1.6.3", workloads: []*kruise.Workload{w}, pods: []*corev1.Pod{p}}
			},
			want: RootCauseKruiseDropsResizePolicy, fix: true,
			evidence: []string{"no FailedUpdatePodInPlace event about this pod in the snapshot: the rejection is inferred, not observed",
				"container app: pod resizePolicy memory=RestartContainer; template unset (differs for memory)"},
		},
		{
			name: "old kruise, v1.32 apiserver, explicit policy the re-defaulting does not restore",
			cluster: func(t *testing.T) scene {
				w := cs(t, appContainer("app:v2", checktest.ResizePolicy("memory", "RestartContainer")))
				p := workloadPod(w, "web-x7k2p", oldRev, time.Hour, appContainer("app:v1", checktest.ResizePolicy("memory", "RestartContainer", "cpu", "NotRequired")))
				return scene{server: "v1.32.2", manager: "v1.6.3", workloads: []*kruise.Workload{w}, pods: []*corev1.Pod{p}}
			},
			want: RootCauseKruiseDropsResizePolicy, fix: true,
			evidence: []string{
				"apiserver v1.32.2 (from /version) defaults resizePolicy on pods when InPlacePodVerticalScaling is on (>= v1.27.0, < v1.33.0)",
				"InPlacePodVerticalScaling inferred on for apiserver v1.32.2: pod web-x7k2p container app carries resizePolicy",
				"inferred: apiserver v1.32.2 re-defaults only NotRequired for requested cpu, then memory, so an update without the field changes these containers' lists: app",
			},
		},
		{
			name: "old kruise, v1.32 apiserver, defaulted entries in another order: re-defaulting reorders them",
			cluster: func(t *testing.T) scene {
				w := cs(t, appContainer("app:v1", nil))
				p := workloadPod(w, "web-x7k2p", newRev, time.Hour, appContainer("app:v1", checktest.ResizePolicy("memory", "NotRequired", "cpu", "NotRequired")))
				return scene{server: "v1.32.2", manager: "v1.6.3", workloads: []*kruise.Workload{w}, pods: []*corev1.Pod{p}}
			},
			want: RootCauseKruiseDropsResizePolicy, fix: true,
			evidence: []string{"changes these containers' lists: app"},
		},
		{
			name: "old kruise, v1.32 apiserver, a rejection event is observed even where the inference says the drop is re-defaulted",
			cluster: func(t *testing.T) scene {
				w := cs(t, appContainer("app:v2", nil))
				p := startedInPlace(workloadPod(w, "web-x7k2p", oldRev, time.Hour, appContainer("app:v1", defaulted)), 10*time.Minute)
				return scene{server: "v1.32.2", manager: "v1.6.3", workloads: []*kruise.Workload{w}, pods: []*corev1.Pod{p},
					events: []*corev1.Event{failedInPlace(w, "web-x7k2p", 9*time.Minute, 3)}}
			},
			want: RootCauseKruiseDropsResizePolicy, fix: true,
			evidence: []string{"event FailedUpdatePodInPlace on cloneset/web (x3)"},
			absent:   []string{"re-defaults only", "the rejection is inferred"},
		},
		{
			name: "old kruise, v1.32 apiserver, defaulted pod: the apiserver re-defaults the dropped list, so benign",
			cluster: func(t *testing.T) scene {
				w := cs(t, appContainer("app:v1", nil))
				p := workloadPod(w, "web-x7k2p", newRev, time.Hour, appContainer("app:v1", defaulted))
				return scene{server: "v1.32.2", manager: "v1.6.3", workloads: []*kruise.Workload{w}, pods: []*corev1.Pod{p}}
			},
			want: RootCauseBenignDefaulting,
			evidence: []string{
				"container app: pod resizePolicy cpu=NotRequired,memory=NotRequired; template unset; defaulted cpu,memory=NotRequired",
				"kruise-manager v1.6.3 drops resizePolicy on in-place updates, but this apiserver re-defaults the same list, so they pass; upgrade kruise to >= v1.7.0 before the apiserver to >= v1.33",
			},
		},
		{
			name: "stale rejection event: the pod has since reached the update revision",
			cluster: func(t *testing.T) scene {
				w := cs(t, appContainer("app:v1", nil))
				p := workloadPod(w, "web-x7k2p", newRev, time.Hour, appContainer("app:v1", defaulted))
				return scene{server: "v1.32.2", manager: "v1.6.3", workloads: []*kruise.Workload{w}, pods: []*corev1.Pod{p},
					events: []*corev1.Event{failedInPlace(w, "web-x7k2p", 50*time.Minute, 1)}}
			},
			want: RootCauseBenignDefaulting,
		},
		{
			name: "new kruise, v1.32 apiserver defaulted the pod: benign",
			cluster: func(t *testing.T) scene {
				w := cs(t, appContainer("app:v1", nil))
				p := workloadPod(w, "web-x7k2p", newRev, time.Hour, appContainer("app:v1", defaulted))
				return scene{server: "v1.32.2", manager: "v1.7.0", workloads: []*kruise.Workload{w}, pods: []*corev1.Pod{p}}
			},
			want: RootCauseBenignDefaulting,
			evidence: []string{"kruise-manager v1.7.0 keeps resizePolicy on in-place updates (>= v1.7.0)",
				"pod is on cloneset/web updateRevision web-7c9f5d8b6"},
		},
		{
			name: "v1.32 apiserver, kruise-manager not found: still benign, and the evidence says the version is unknown",
			cluster: func(t *testing.T) scene {
				w := cs(t, appContainer("app:v1", nil))
				p := workloadPod(w, "web-x7k2p", newRev, time.Hour, appContainer("app:v1", defaulted))
				return scene{server: "v1.32.2", workloads: []*kruise.Workload{w}, pods: []*corev1.Pod{p}}
			},
			want:     RootCauseBenignDefaulting,
			evidence: []string{"kruise-manager not found", "kruise-manager version unknown"},
		},
		{
			name: "pod on the update revision differs from the template on v1.37: the pod cannot take it in place",
			cluster: func(t *testing.T) scene {
				w := cs(t, appContainer("app:v1", checktest.ResizePolicy("cpu", "NotRequired", "memory", "RestartContainer")))
				p := workloadPod(w, "web-x7k2p", newRev, 2*time.Hour, appContainer("app:v1", checktest.ResizePolicy("cpu", "NotRequired", "memory", "NotRequired")))
				return scene{server: "v1.37.1", manager: "v1.7.0", workloads: []*kruise.Workload{w}, pods: []*corev1.Pod{p}}
			},
			want: RootCauseResizePolicyImmutable, fix: true,
			evidence: []string{"InPlacePodVerticalScaling: on by default from v1.33 (beta, GA in v1.35) on apiserver v1.37.1; inferred from the version",
				"container app: pod resizePolicy cpu=NotRequired,memory=NotRequired; template cpu=NotRequired,memory=RestartContainer (differs for memory)"},
		},
		{
			name: "template changed resizePolicy, v1.32 apiserver with the gate on: immutable there too",
			cluster: func(t *testing.T) scene {
				w := cs(t, appContainer("app:v1", checktest.ResizePolicy("memory", "RestartContainer")))
				p := workloadPod(w, "web-x7k2p", newRev, 2*time.Hour, appContainer("app:v1", defaulted))
				return scene{server: "v1.32.2", manager: "v1.7.0", workloads: []*kruise.Workload{w}, pods: []*corev1.Pod{p}}
			},
			want: RootCauseResizePolicyImmutable, fix: true,
		},
		{
			name: "Advanced StatefulSet with podUpdatePolicy InPlaceOnly is checked too",
			cluster: func(t *testing.T) scene {
				w := inPlaceWorkload(t, kruise.KindStatefulSet, kruise.UpdateInPlaceOnly, []corev1.Container{appContainer("app:v1", checktest.ResizePolicy("memory", "RestartContainer"))})
				p := workloadPod(w, "web-0", newRev, 2*time.Hour, appContainer("app:v1", nil))
				return scene{server: "v1.37.1", manager: "v1.8.0", workloads: []*kruise.Workload{w}, pods: []*corev1.Pod{p}}
			},
			want: RootCauseResizePolicyImmutable, fix: true,
			evidence: []string{"container app: pod resizePolicy unset; template memory=RestartContainer (differs for memory)"},
		},
		{
			name: "old kruise creates pods without the template's resizePolicy: evicting would not help, no fix",
			cluster: func(t *testing.T) scene {
				w := cs(t, appContainer("app:v1", checktest.ResizePolicy("memory", "RestartContainer")))
				p := workloadPod(w, "web-x7k2p", newRev, 2*time.Hour, appContainer("app:v1", nil))
				return scene{server: "v1.37.1", manager: "v1.6.3", workloads: []*kruise.Workload{w}, pods: []*corev1.Pod{p}}
			},
			want: RootCauseResizePolicyImmutable, fix: false,
			evidence: []string{"kruise-manager < v1.7.0 creates pods without resizePolicy: a recreated pod would not get the template's either"},
		},
		{
			name: "SidecarSet changed its sidecar's resizePolicy",
			cluster: func(t *testing.T) scene {
				w := cs(t, appContainer("app:v1", nil))
				side := appContainer("envoy:1.30", checktest.ResizePolicy("memory", "NotRequired"))
				side.Name = "envoy"
				side.Env = []corev1.EnvVar{{Name: "IS_INJECTED", Value: "true"}, {Name: "MESH_TOKEN", Value: "tok-123"}}
				p := workloadPod(w, "web-x7k2p", newRev, 2*time.Hour, appContainer("app:v1", nil), side)
				p.Annotations = map[string]string{kruise.AnnotationSidecarInjects: "mesh", kruise.AnnotationSidecarHash: `{"mesh":{"hash":"x"}}`}
				decl := appContainer("envoy:1.30", checktest.ResizePolicy("memory", "RestartContainer"))
				decl.Name = "envoy"
				return scene{server: "v1.37.1", manager: "v1.7.0", workloads: []*kruise.Workload{w}, pods: []*corev1.Pod{p},
					sidecars: []*kruise.SidecarSet{checktest.SidecarSet(t, "mesh", decl)}}
			},
			want: RootCauseSidecarResizePolicyDrift, fix: true,
			evidence: []string{"container envoy: pod resizePolicy memory=NotRequired; SidecarSet mesh memory=RestartContainer (differs for memory); injected by SidecarSet mesh"},
			absent:   []string{"MESH_TOKEN", "tok-123"},
		},
		{
			name: "sidecar named only in the injected-list annotation (no env marker)",
			cluster: func(t *testing.T) scene {
				w := cs(t, appContainer("app:v1", nil))
				side := appContainer("log-agent:2", nil)
				side.Name = "log-agent"
				p := workloadPod(w, "web-x7k2p", newRev, 2*time.Hour, appContainer("app:v1", nil), side)
				p.Annotations = map[string]string{kruise.AnnotationSidecarInjects: "logging"}
				decl := appContainer("log-agent:2", checktest.ResizePolicy("cpu", "RestartContainer"))
				decl.Name = "log-agent"
				return scene{server: "v1.37.1", manager: "v1.7.0", workloads: []*kruise.Workload{w}, pods: []*corev1.Pod{p},
					sidecars: []*kruise.SidecarSet{checktest.SidecarSet(t, "logging", decl)}}
			},
			want: RootCauseSidecarResizePolicyDrift, fix: true,
			evidence: []string{"container log-agent: pod resizePolicy unset; SidecarSet logging cpu=RestartContainer (differs for cpu); injected by SidecarSet logging"},
		},
		{
			name: "a template container is not a sidecar because a listed SidecarSet has one of the same name",
			cluster: func(t *testing.T) scene {
				w := cs(t, appContainer("app:v1", nil))
				p := workloadPod(w, "web-x7k2p", newRev, 2*time.Hour, appContainer("app:v1", nil))
				p.Annotations = map[string]string{kruise.AnnotationSidecarInjects: "mesh"}
				return scene{server: "v1.37.1", manager: "v1.7.0", workloads: []*kruise.Workload{w}, pods: []*corev1.Pod{p},
					sidecars: []*kruise.SidecarSet{checktest.SidecarSet(t, "mesh", appContainer("envoy", checktest.ResizePolicy("memory", "RestartContainer")))}}
			},
		},
		{
			name: "injected sidecar whose SidecarSet is unreadable is not compared, and evidence says so",
			cluster: func(t *testing.T) scene {
				w := cs(t, appContainer("app:v1", checktest.ResizePolicy("memory", "RestartContainer")))
				side := appContainer("envoy:1.30", checktest.ResizePolicy("memory", "NotRequired"))
				side.Name = "envoy"
				side.Env = []corev1.EnvVar{{Name: "IS_INJECTED", Value: "true"}}
				p := workloadPod(w, "web-x7k2p", newRev, 2*time.Hour, appContainer("app:v1", nil), side)
				return scene{server: "v1.37.1", manager: "v1.7.0", workloads: []*kruise.Workload{w}, pods: []*corev1.Pod{p}, unreadSets: true}
			},
			want: RootCauseResizePolicyImmutable, fix: true,
			evidence: []string{"container envoy is an injected sidecar whose SidecarSet is not in the snapshot: not compared (forbidden: list apps.kruise.io/sidecarsets)"},
		},
		// Near misses: equal policies written differently, and what the check must leave alone.
		{
			name: "order of entries differs, same policies",
			cluster: func(t *testing.T) scene {
				w := cs(t, appContainer("app:v1", checktest.ResizePolicy("cpu", "RestartContainer", "memory", "NotRequired")))
				p := workloadPod(w, "web-x7k2p", newRev, 2*time.Hour, appContainer("app:v1", checktest.ResizePolicy("memory", "NotRequired", "cpu", "RestartContainer")))
				return scene{server: "v1.37.1", manager: "v1.7.0", workloads: []*kruise.Workload{w}, pods: []*corev1.Pod{p}}
			},
		},
		{
			name: "template sets the default explicitly, pod leaves it unset",
			cluster: func(t *testing.T) scene {
				w := cs(t, appContainer("app:v1", defaulted))
				p := workloadPod(w, "web-x7k2p", newRev, 2*time.Hour, appContainer("app:v1", nil))
				return scene{server: "v1.37.1", manager: "v1.7.0", workloads: []*kruise.Workload{w}, pods: []*corev1.Pod{p}}
			},
		},
		{
			name: "pod carries the default, template leaves it unset, on an apiserver that does not default",
			cluster: func(t *testing.T) scene {
				w := cs(t, appContainer("app:v1", nil))
				p := workloadPod(w, "web-x7k2p", newRev, 2*time.Hour, appContainer("app:v1", defaulted))
				return scene{server: "v1.37.1", manager: "v1.7.0", workloads: []*kruise.Workload{w}, pods: []*corev1.Pod{p}}
			},
		},
		{
			name: "ReCreate CloneSet: pods are never updated in place",
			cluster: func(t *testing.T) scene {
				w := inPlaceWorkload(t, kruise.KindCloneSet, kruise.UpdateReCreate, []corev1.Container{appContainer("app:v1", checktest.ResizePolicy("memory", "RestartContainer"))})
				p := workloadPod(w, "web-x7k2p", newRev, 2*time.Hour, appContainer("app:v1", checktest.ResizePolicy("cpu", "NotRequired")))
				return scene{server: "v1.37.1", manager: "v1.6.3", workloads: []*kruise.Workload{w}, pods: []*corev1.Pod{p}}
			},
		},
		{
			name: "v1.32 apiserver with the gate off: the pod cannot carry the template's policy, eviction would not help",
			cluster: func(t *testing.T) scene {
				w := cs(t, appContainer("app:v1", checktest.ResizePolicy("memory", "RestartContainer")))
				p := workloadPod(w, "web-x7k2p", newRev, 2*time.Hour, appContainer("app:v1", nil))
				return scene{server: "v1.32.2", manager: "v1.7.0", workloads: []*kruise.Workload{w}, pods: []*corev1.Pod{p}}
			},
		},
		{
			name: "old kruise but no pod carries resizePolicy: nothing is dropped",
			cluster: func(t *testing.T) scene {
				w := cs(t, appContainer("app:v2", nil))
				p := workloadPod(w, "web-x7k2p", oldRev, 2*time.Hour, appContainer("app:v1", nil))
				return scene{server: "v1.37.1", manager: "v1.6.3", workloads: []*kruise.Workload{w}, pods: []*corev1.Pod{p}}
			},
		},
		{
			name: "pod younger than the threshold",
			cluster: func(t *testing.T) scene {
				w := cs(t, appContainer("app:v1", checktest.ResizePolicy("memory", "RestartContainer")))
				p := workloadPod(w, "web-x7k2p", newRev, time.Minute, appContainer("app:v1", nil))
				return scene{server: "v1.37.1", manager: "v1.7.0", workloads: []*kruise.Workload{w}, pods: []*corev1.Pod{p}}
			},
		},
		{
			name: "pod not read in full: nothing is guessed from metadata",
			cluster: func(t *testing.T) scene {
				w := cs(t, appContainer("app:v1", checktest.ResizePolicy("memory", "RestartContainer")))
				p := workloadPod(w, "web-x7k2p", newRev, 2*time.Hour, appContainer("app:v1", nil))
				return scene{server: "v1.37.1", manager: "v1.7.0", workloads: []*kruise.Workload{w}, pods: []*corev1.Pod{p}, metaOnly: true}
			},
		},
		{
			name: "unparsable apiserver version: no inference presented as fact",
			cluster: func(t *testing.T) scene {
				w := cs(t, appContainer("app:v1", checktest.ResizePolicy("memory", "RestartContainer")))
				p := workloadPod(w, "web-x7k2p", newRev, 2*time.Hour, appContainer("app:v1", defaulted))
				return scene{server: "weird", manager: "v1.6.3", workloads: []*kruise.Workload{w}, pods: []*corev1.Pod{p}}
			},
		},
	}
	check := New()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.cluster(t).snapshot()
			got := check.Run(s, check.Info().Threshold)
			if tt.want == "" {
				if len(got) != 0 {
					t.Fatalf("want no finding, got %s: %s", got[0].RootCause.ID, strings.Join(got[0].RootCause.Evidence, "\n"))
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("want 1 finding, got %d: %+v", len(got), got)
			}
			f := got[0]
			all := strings.Join(f.RootCause.Evidence, "\n")
			if f.RootCause.ID != tt.want {
				t.Fatalf("root cause = %s, want %s\nevidence:\n%s", f.RootCause.ID, tt.want, all)
			}
			if f.Check != ID || f.Object.Kind != "Pod" || f.Object.UID == "" || f.Object.ResourceVersion != "4711" {
				t.Errorf("finding object = %+v (check %s)", f.Object, f.Check)
			}
			if f.Owner == nil || f.Owner.UID != "uid-web" || f.Owner.Kind != s.Workloads[0].Kind {
				t.Errorf("owner = %+v", f.Owner)
			}
			for _, e := range tt.evidence {
				if !strings.Contains(all, e) {
					t.Errorf("evidence lacks %q:\n%s", e, all)
				}
			}
			for _, e := range tt.absent {
				if strings.Contains(all+f.Summary+f.RootCause.Message, e) {
					t.Errorf("finding shows %q:\n%s", e, all)
				}
			}
			hasEvict := slices.ContainsFunc(f.Fixes, func(x report.Fix) bool { return x.Action == checks.ActionEvictPod })
			if hasEvict != tt.fix {
				t.Errorf("evict-pod offered = %v, want %v (fixes %+v)", hasEvict, tt.fix, f.Fixes)
			}
			if !tt.since.IsZero() && !f.Since.Equal(tt.since) {
				t.Errorf("since = %s, want %s", f.Since, tt.since)
			}
			if tt.want == RootCauseKruiseDropsResizePolicy && !strings.Contains(f.RootCause.Message, "Upgrade kruise to >= v1.7.0") {
				t.Errorf("message does not say to upgrade kruise: %s", f.RootCause.Message)
			}
		})
	}
}
