package collect

import (
	"context"

	"golang.org/x/sync/errgroup"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/fault"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// readReplicaSets lists the ReplicaSets of each Deployment declared, by its selector in its
// namespace, a bounded number of lists at a time, and keeps those the Deployment controls. The
// checks declare only Deployments whose rollout is not done, so a list each costs less than
// listing every ReplicaSet in scope (each keeps its template). It returns how many it listed.
func (col *collector) readReplicaSets(ctx context.Context, reads []snapshot.ReplicaSetRead) int {
	read := make([][]*appsv1.ReplicaSet, len(reads))
	errs := make([]error, len(reads))
	var g errgroup.Group
	g.SetLimit(col.opts.Concurrency)
	for i, r := range reads {
		g.Go(func() error {
			l, err := get(ctx, col, func(ctx context.Context) (*appsv1.ReplicaSetList, error) {
				return col.c.Kube.AppsV1().ReplicaSets(r.Namespace).List(ctx, metav1.ListOptions{LabelSelector: r.Selector})
			})
			if err != nil {
				errs[i] = readErr("list", "replicasets in "+r.Namespace, err)
				return nil // recorded below: a failed read never stops the others
			}
			for j := range l.Items {
				rs := &l.Items[j]
				if ref := snapshot.ControllerOf(rs); ref != nil && ref.UID == r.Deployment {
					rs.ManagedFields = nil
					read[i] = append(read[i], rs)
				}
			}
			return nil
		})
	}
	_ = g.Wait()
	col.add(func(s *snapshot.Snapshot) {
		for _, rss := range read {
			s.ReplicaSets = append(s.ReplicaSets, rss...)
		}
	})
	if err := fault.Join(errs...); err != nil {
		col.unread(snapshot.InputReplicaSets, err)
	}
	return len(reads)
}
