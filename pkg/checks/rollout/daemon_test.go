package rollout

import (
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	ct "github.com/workloaddoctor/kubectl-workloaddoctor/internal/checktest"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// daemonPod is a pod of the kruise-daemon DaemonSet on the node, Running and Ready unless options
// say otherwise.
func daemonPod(name, node string, opts ...ct.Option) *corev1.Pod {
	ds := ct.DaemonSet("kruise-system", kruiseDaemon, "daemon", "openkruise/kruise-manager:v1.9.0", 0, 0)
	base := []ct.Option{ct.OwnedBy("apps/v1", "DaemonSet", ds.Name, ds.UID), ct.Labels(ds.Spec.Selector.MatchLabels), ct.OnNode(node),
		ct.Containers(corev1.Container{Name: "daemon", Image: "openkruise/kruise-manager:v1.9.0"}), ct.Running(),
		ct.PodReady(corev1.ConditionTrue, time.Hour)}
	return ct.Pod("kruise-system", name, append(base, opts...)...)
}

// The evidence of inplace-daemon-missing says whether a kruise-daemon pod is on the updated
// pod's node (node-1) when the scan read the daemon's pods, and what it read when it did not.
func TestDaemonMissingNamesTheNodesDaemon(t *testing.T) {
	envState := `{"revision":"` + newRev + `","updateEnvFromMetadata":true}`
	cases := []struct {
		name       string
		pods, meta []*corev1.Pod
		scope      snapshot.Scope
		want       string
	}{
		{name: "daemon on other nodes only", pods: []*corev1.Pod{daemonPod("kruise-daemon-b", "node-2"), daemonPod("kruise-daemon-c", "node-3")},
			want: "DaemonSet kruise-system/kruise-daemon: 2 of 3 pods available; no kruise-daemon pod is on node node-1 (2 of its pods read, none there)"},
		{name: "daemon running there", pods: []*corev1.Pod{daemonPod("kruise-daemon-a", "node-1"), daemonPod("kruise-daemon-b", "node-2")},
			want: "kruise-daemon pod kruise-daemon-a on node node-1 is Running and Ready, yet has not reported the restart: read its log"},
		{name: "daemon pending there", pods: []*corev1.Pod{daemonPod("kruise-daemon-a", "node-1", ct.Phase(corev1.PodPending),
			ct.PodReady(corev1.ConditionFalse, time.Minute))},
			want: "kruise-daemon pod kruise-daemon-a on node node-1 is Pending, not Ready"},
		{name: "a replacement runs beside a terminating one", pods: []*corev1.Pod{daemonPod("kruise-daemon-a", "node-1", ct.Deleted(time.Minute, 30)),
			daemonPod("kruise-daemon-z", "node-1")},
			want: "kruise-daemon pod kruise-daemon-z on node node-1 is Running and Ready"},
		{name: "daemon pods listed, not read in full", meta: []*corev1.Pod{daemonPod("kruise-daemon-a", "node-1")},
			want: "0 of its 1 pods were read in full, none of them on node node-1"},
		{name: "no daemon pod at all",
			want: "2 of 3 pods available; no kruise-daemon pod is on node node-1: the DaemonSet has no pods"},
		{name: "scan of the workload's namespace", pods: []*corev1.Pod{daemonPod("kruise-daemon-a", "node-1")}, scope: snapshot.Scope{Namespace: "shop"},
			want: "DaemonSet kruise-system/kruise-daemon: 2 of 3 pods available; its pods were not read: the scan covers namespace shop only"},
		{name: "label selector the daemon need not match", scope: snapshot.Scope{AllNamespaces: true, LabelSelector: "app=web"},
			want: `its pods were not read: the scan's label selector "app=web" need not select them`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := cloneSet(t, 1, 0, ct.UpdateStrategy(kruise.UpdateInPlaceIfPossible))
			pods := append([]*corev1.Pod{inPlacePod(w, envState), clonePod(w, "web-b", oldRev, 2*time.Hour),
				clonePod(w, "web-c", oldRev, 2*time.Hour)}, tc.pods...)
			c := ct.Cluster{Workloads: []*kruise.Workload{w}, Pods: pods, MetaOnlyPods: tc.meta,
				DaemonSets: []*appsv1.DaemonSet{ct.DaemonSet("kruise-system", kruiseDaemon, "daemon", "openkruise/kruise-manager:v1.9.0", 3, 2)}}
			s := c.Snapshot()
			s.Scope = tc.scope
			f := only(t, New().Run(s, New().Info().Threshold))
			if f.RootCause.ID != RootCauseInPlaceDaemonMissing {
				t.Fatalf("root cause %s: %q", f.RootCause.ID, f.RootCause.Evidence)
			}
			evidenceHas(t, f, "waits for kruise-daemon on node node-1, but the pod has no "+annotationRuntimeMeta+" annotation; ")
			evidenceHas(t, f, tc.want)
		})
	}
}

// The daemon's pods are asked for once a pod read shows an in-place update waiting for it, and
// not for a rollout whose in-place update needs no daemon or whose pods are not read yet.
func TestDaemonPodsAskedForOnlyWhenAwaited(t *testing.T) {
	daemon := daemonPod("kruise-daemon-a", "node-1")
	ds := ct.DaemonSet("kruise-system", kruiseDaemon, "daemon", "openkruise/kruise-manager:v1.9.0", 1, 1)
	for _, tc := range []struct {
		name     string
		state    string
		metaOnly bool
		want     bool
	}{
		{"env from metadata awaited", `{"revision":"` + newRev + `","updateEnvFromMetadata":true}`, false, true},
		{"image update", `{"revision":"` + newRev + `","updateImages":true}`, false, false},
		{"candidate not read yet", `{"revision":"` + newRev + `","updateEnvFromMetadata":true}`, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := cloneSet(t, 1, 0, ct.UpdateStrategy(kruise.UpdateInPlaceIfPossible))
			updated := inPlacePod(w, tc.state)
			c := ct.Cluster{Workloads: []*kruise.Workload{w}, MetaOnlyPods: []*corev1.Pod{daemon}, DaemonSets: []*appsv1.DaemonSet{ds}}
			if tc.metaOnly {
				c.MetaOnlyPods = append(c.MetaOnlyPods, updated)
			} else {
				c.Pods = []*corev1.Pod{updated}
			}
			s := c.Snapshot()
			got := New().(check).DeclareReads(s).PodsDue(s)
			if !slices.Contains(got, updated.UID) {
				t.Errorf("candidates %v lack the updated pod", got)
			}
			if slices.Contains(got, daemon.UID) != tc.want {
				t.Errorf("candidates %v: daemon pod asked for = %v, want %v", got, !tc.want, tc.want)
			}
			// Declared before any pod is read, as the collector asks: the same reads once it is.
			meta := c
			meta.MetaOnlyPods, meta.Pods = append(slices.Clone(c.MetaOnlyPods), c.Pods...), nil
			if later := New().(check).DeclareReads(meta.Snapshot()).PodsDue(s); !slices.Equal(later, got) {
				t.Errorf("declared on the metadata-only snapshot: pods due once read = %v, want %v", later, got)
			}
		})
	}
}
