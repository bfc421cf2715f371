package rollout

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"

	ct "github.com/workloaddoctor/kubectl-workloaddoctor/internal/checktest"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

const (
	meshHash    = "v2hash"
	meshOldHash = "v1hash"
)

// mesh is SidecarSet "mesh" at hash v2hash, its spec changed specAgo, with the status
// calculateStatus (pkg/controller/sidecarset/sidecarset_processor.go, kruise v1.9.0) writes for
// matched pods of which updated carry the current hash.
func mesh(t *testing.T, specAgo time.Duration, matched, updated, ready int64, opts ...ct.Option) *kruise.SidecarSet {
	base := []ct.Option{ct.Annotations(map[string]string{kruise.AnnotationSidecarHash: meshHash}),
		ct.ManagedFields(ct.Managed("kubectl-client-side-apply", "", specAgo, `{"f:spec":{}}`)),
		ct.Status(map[string]any{"observedGeneration": int64(1), "matchedPods": matched, "updatedPods": updated, "readyPods": ready,
			"updatedReadyPods": updated, "latestRevision": "mesh-6b7f"})}
	return ct.SidecarSetObject(t, "mesh", append(base, opts...)...)
}

// injected is a pod the SidecarSet webhook injected, its kruise.io/sidecarset-hash entry at hash,
// written updatedAgo (SidecarSetUpgradeSpec, pkg/control/sidecarcontrol/util.go).
func injected(name, hash string, updatedAgo time.Duration) *corev1.Pod {
	entry := `{"mesh":{"updateTimestamp":"` + ct.Ago(updatedAgo).Format(time.RFC3339) + `","hash":"` + hash +
		`","sidecarSetName":"mesh","sidecarList":["proxy"],"controllerRevision":"mesh-6b7f"}}`
	return ct.Pod("shop", name, ct.Labels(map[string]string{"app": "web"}),
		ct.Annotations(map[string]string{kruise.AnnotationSidecarInjects: "mesh", kruise.AnnotationSidecarHash: entry}))
}

// inFlightLog is the leader's line after UpdateExpectations.SatisfiedExpectations failed.
const inFlightLog = `2026-06-12T11:59:58.123456789Z I0612 11:59:58.123456       1 sidecarset_processor.go:108] "Sidecarset matched pods has some update in flight, will sync later" sidecarSet="mesh" pods=["shop/web-b"]`

func leaderLog(text string) map[string]string {
	return map[string]string{"kruise-system/" + kruise.HolderPod(ct.KruiseHolder): text}
}

func meshCluster(ss *kruise.SidecarSet, log map[string]string) ct.Cluster {
	return ct.Cluster{SidecarSets: []*kruise.SidecarSet{ss}, Logs: log,
		Deployments: []*appsv1.Deployment{ct.KruiseManager("v1.9.0", 1)}, Leases: []*coordinationv1.Lease{ct.KruiseLeaderLease(time.Second)},
		MetaOnlyPods: []*corev1.Pod{injected("web-a", meshHash, 50*time.Minute), injected("web-b", meshOldHash, 3*time.Hour), injected("web-c", meshOldHash, 3*time.Hour)}}
}

func TestSidecarSetUpdateInFlight(t *testing.T) {
	f := only(t, run(t, meshCluster(mesh(t, time.Hour, 3, 1, 3), leaderLog(inFlightLog)), -1))
	if f.RootCause.ID != RootCauseSidecarSetInFlight || f.Object.Kind != kruise.KindSidecarSet || f.Object.Name != "mesh" {
		t.Fatalf("got %s on %s", f.RootCause.ID, f.Object)
	}
	evidenceHas(t, f, "has some update in flight")
	evidenceHas(t, f, "shop/web-b, shop/web-c")
	if len(f.Fixes) != 1 || f.Fixes[0].Action != "restart-controller-leader" {
		t.Fatalf("fixes %+v, want restart-controller-leader", f.Fixes)
	}
	// One manager replica: the restart stops the pod webhook (kruiseenv.RestartFix).
	if f.Fixes[0].Risk != report.RiskHigh {
		t.Errorf("risk %s, want high for a single replica", f.Fixes[0].Risk)
	}
	if !f.Since.Equal(ct.Ago(50 * time.Minute)) {
		t.Errorf("since %s, want the last pod updated (50m ago)", f.Since)
	}
}

func TestSidecarSetStalledWithoutLog(t *testing.T) {
	f := only(t, run(t, meshCluster(mesh(t, time.Hour, 3, 1, 3), nil), -1))
	if f.RootCause.ID != RootCauseSidecarSetStalled || len(f.Fixes) != 0 {
		t.Fatalf("got %s fixes %+v: without the log line nothing is written", f.RootCause.ID, f.Fixes)
	}
	evidenceHas(t, f, "matchedPods 3, updatedPods 1")
}

func TestSidecarSetHealthy(t *testing.T) {
	cases := map[string]struct {
		ss  *kruise.SidecarSet
		log map[string]string
	}{
		"paused":           {mesh(t, time.Hour, 3, 1, 3, ct.SpecField(true, "updateStrategy", "paused")), leaderLog(inFlightLog)},
		"NotUpdate":        {mesh(t, time.Hour, 3, 1, 3, ct.SpecField("NotUpdate", "updateStrategy", "type")), leaderLog(inFlightLog)},
		"partition of two": {mesh(t, time.Hour, 3, 1, 3, ct.SpecField(int64(2), "updateStrategy", "partition")), leaderLog(inFlightLog)},
		// maxUnavailable waits for the unready pod; no log line says otherwise.
		"unready pod": {mesh(t, time.Hour, 3, 1, 2), nil},
		// The spec changed 3 minutes ago: a line logged during a normal update is not a stall yet.
		"recent change": {mesh(t, 3*time.Minute, 3, 1, 3), leaderLog(inFlightLog)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) { none(t, run(t, meshCluster(tc.ss, tc.log), -1)) })
	}
	all := meshCluster(mesh(t, time.Hour, 3, 3, 3), leaderLog(inFlightLog))
	all.MetaOnlyPods = []*corev1.Pod{injected("web-a", meshHash, 50*time.Minute)}
	none(t, run(t, all, 0))
}

func TestParseInFlightPodForm(t *testing.T) {
	line := `I0612 11:59:58.123456       1 sidecarset_processor.go:102] "Sidecarset matched pods has some update in flight, will sync later" pod="shop/web-b" duration=12.5`
	ls := kruise.ParseInFlightLogs(line, ct.Now)
	if len(ls) != 1 || ls[0].Pod != "shop/web-b" || ls[0].Time.IsZero() {
		t.Fatalf("parsed %+v", ls)
	}
}

// Healthy states the v1.9.0 controller leaves on purpose, with an "update in flight" line in the
// log that does not show a leak: no finding, so no restart is offered.
func TestSidecarSetHealthyDespiteInFlightLines(t *testing.T) {
	t.Run("a line from an earlier batch, an unready pod held by maxUnavailable", func(t *testing.T) {
		old := `I0612 11:10:00.000000       1 sidecarset_processor.go:108] "Sidecarset matched pods has some update in flight, will sync later" sidecarSet="mesh" pods=["shop/web-a"]`
		none(t, run(t, meshCluster(mesh(t, time.Hour, 3, 1, 2), leaderLog(old)), -1))
	})
	t.Run("pods whose change is more than images wait to be recreated", func(t *testing.T) {
		// commonControl.IsSidecarSetUpgradable: the pods' hash without images differs from the
		// SidecarSet's, so its controller never updates them in place.
		ss := mesh(t, time.Hour, 3, 1, 3)
		ss.Annotations[kruise.AnnotationSidecarHashWithoutImage] = "noimage-v2"
		c := meshCluster(ss, leaderLog(inFlightLog))
		for _, p := range c.MetaOnlyPods {
			wi := "noimage-v1"
			if p.Name == "web-a" {
				wi = "noimage-v2"
			}
			p.Annotations[kruise.AnnotationSidecarHashWithoutImage] = `{"mesh":{"hash":"` + wi + `","sidecarSetName":"mesh"}}`
		}
		none(t, run(t, c, -1))
	})
}
