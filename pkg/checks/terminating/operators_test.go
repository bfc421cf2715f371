package terminating

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/checktest"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

var backupsGVR = schema.GroupVersionResource{Group: "backup.example.com", Version: "v1", Resource: "backups"}

// operatorLeaseAt is the leader Lease a kubebuilder operator of backup.example.com leaves: its
// LeaderElectionID "<hash>.<domain>", 15s duration (controller-runtime's default), held by its
// pod, renewed renewedAgo (the operator's leaderelection renews every 2s while it runs).
func operatorLeaseAt(renewedAgo time.Duration) *coordinationv1.Lease {
	return checktest.Lease("backup-system", "7d3e2a1b.backup.example.com", "backup-operator-5c9d7f6b8-x2x4k_3f1c2d4e-9a8b-4c7d-8e6f-1a2b3c4d5e6f",
		15, renewedAgo)
}

// An operator uninstalled before its custom resources: its Lease renewed days ago by a pod that
// no longer exists, nothing left in its namespace. That is proof: finalizer-owner-missing, with
// the Lease named and the remove-finalizer fix. Around it, each part of the proof missing leaves
// the owner not found, and a Lease being renewed is an operator that runs.
func TestOperatorGoneByItsLease(t *testing.T) {
	backup := func() snapshot.Object {
		return deletedObject(backupsGVR, "Backup", "shop", "target", 20*time.Minute, "manager", "backup.example.com/finalizer")
	}
	holder := "backup-system/backup-operator-5c9d7f6b8-x2x4k"
	for _, tc := range []struct {
		name string
		c    checktest.Cluster
		want want
	}{
		{"uninstalled", checktest.Cluster{Objects: []snapshot.Object{backup()}, LeaderLeases: []*coordinationv1.Lease{operatorLeaseAt(72 * time.Hour)},
			LeaseHolders: map[string]bool{holder: false}},
			want{rootCause: RootCauseFinalizerOwnerMissing, fixes: []string{"remove-finalizer:backup.example.com/finalizer"},
				evidence: []string{"uninstalled: its leader Lease backup-system/7d3e2a1b.backup.example.com (named after API group backup.example.com, " +
					"as controller-runtime names its leader election) was last renewed 3d ago by pod backup-operator-5c9d7f6b8-x2x4k, a pod that no longer exists"}}},
		{"renewed now", checktest.Cluster{Objects: []snapshot.Object{backup()}, LeaderLeases: []*coordinationv1.Lease{operatorLeaseAt(2 * time.Second)}},
			want{rootCause: RootCauseFinalizerOwnerNotActing, evidence: []string{"renewed 2s ago by pod backup-operator-5c9d7f6b8-x2x4k: the operator runs"}}},
		{"holder still there", checktest.Cluster{Objects: []snapshot.Object{backup()}, LeaderLeases: []*coordinationv1.Lease{operatorLeaseAt(72 * time.Hour)},
			LeaseHolders: map[string]bool{holder: true}},
			want{rootCause: RootCauseFinalizerOwnerNotActing, evidence: []string{"and that pod still exists"}}},
		{"holder not read", checktest.Cluster{Objects: []snapshot.Object{backup()}, LeaderLeases: []*coordinationv1.Lease{operatorLeaseAt(72 * time.Hour)}},
			want{rootCause: RootCauseFinalizerOwnerNotActing, evidence: []string{"whether that pod exists could not be read"}}},
		{"scaled down", checktest.Cluster{Objects: []snapshot.Object{backup()}, LeaderLeases: []*coordinationv1.Lease{operatorLeaseAt(72 * time.Hour)},
			LeaseHolders: map[string]bool{holder: false},
			Deployments:  []*appsv1.Deployment{checktest.Deployment("backup-system", "backup-operator", "manager", "acme/backup:1.2", 0, 0)}},
			want{rootCause: RootCauseFinalizerOwnerNotActing, evidence: []string{"but Deployment backup-system/backup-operator remains in namespace backup-system"}}},
		{"stale within an hour", checktest.Cluster{Objects: []snapshot.Object{backup()}, LeaderLeases: []*coordinationv1.Lease{operatorLeaseAt(20 * time.Minute)},
			LeaseHolders: map[string]bool{holder: false}},
			want{rootCause: RootCauseFinalizerOwnerNotActing}},
		{"another group's Lease", checktest.Cluster{Objects: []snapshot.Object{backup()},
			LeaderLeases: []*coordinationv1.Lease{checktest.Lease("db-system", "9f8e7d6c.db.example.org", "db-operator-0_x", 15, 72*time.Hour)},
			LeaseHolders: map[string]bool{"db-system/db-operator-0": false}},
			want{rootCause: RootCauseFinalizerOwnerNotActing, noEvid: []string{"db.example.org"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			expect(t, New().Run(tc.c.Snapshot(), 5*time.Minute), "target", tc.want)
		})
	}
}
