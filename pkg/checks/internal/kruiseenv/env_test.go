package kruiseenv

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/checktest"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
)

func cluster(mgr *appsv1.Deployment, lease *coordinationv1.Lease) checktest.Cluster {
	var c checktest.Cluster
	if mgr != nil {
		c.Deployments = []*appsv1.Deployment{mgr}
	}
	if lease != nil {
		c.Leases = []*coordinationv1.Lease{lease}
	}
	return c
}

func TestKruiseEnvUnavailable(t *testing.T) {
	tests := []struct {
		name  string
		mgr   *appsv1.Deployment
		lease *coordinationv1.Lease
		want  bool
		frag  string
	}{
		{"healthy", checktest.KruiseManager("v1.7.0", 1), checktest.KruiseLeaderLease(2 * time.Second), false, ""},
		// Without a Lease to judge the leader by, the Deployment's status decides.
		{"no available replica, no Lease", checktest.KruiseManager("v1.7.0", 0), nil, true, "has no available replica"},
		{"no available replica, expired Lease", checktest.KruiseManager("v1.7.0", 0), checktest.KruiseLeaderLease(time.Minute), true, "has no available replica"},
		{"lease expired", checktest.KruiseManager("v1.7.0", 1), checktest.KruiseLeaderLease(40 * time.Second), true, "longer than its leaseDurationSeconds 15"},
		{"lease renewed just within its duration", checktest.KruiseManager("v1.7.0", 1), checktest.KruiseLeaderLease(15 * time.Second), false, ""},
		{"manager unknown", nil, nil, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := New(cluster(tt.mgr, tt.lease).Snapshot())
			got, why := env.Unavailable()
			if got != tt.want || (tt.frag != "" && !strings.Contains(strings.Join(why, "\n"), tt.frag)) {
				t.Errorf("unavailable = %v %q, want %v with %q", got, why, tt.want, tt.frag)
			}
		})
	}
}

func TestKruiseEnvFindsManagerByImage(t *testing.T) {
	d := checktest.KruiseManager("v1.8.2", 1, "--leader-election-id=kruise-leader", "--leader-election-namespace=openkruise")
	d.Namespace, d.Name = "openkruise", "kruise"
	l := checktest.KruiseLeaderLease(time.Second)
	l.Namespace, l.Name = "openkruise", "kruise-leader"
	env := New(cluster(d, l).Snapshot())
	if env.Manager == nil || env.Manager.Version.String() != "v1.8.2" || env.holderPod != kruise.HolderPod(checktest.KruiseHolder) {
		t.Fatalf("manager not found by image: %+v", env.Manager)
	}
	if fx, ok := env.RestartFix(); !ok || fx.Params["leaseNamespace"] != "openkruise" || fx.Params["leaseName"] != "kruise-leader" || fx.Params["holderIdentity"] != checktest.KruiseHolder {
		t.Errorf("restart fix = %+v", fx)
	}
}
