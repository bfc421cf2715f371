package collect

import (
	"context"

	"golang.org/x/sync/errgroup"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/fault"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// maxReplicaSetLists is how many Deployments' ReplicaSets are listed whole, one Deployment at a
// time; beyond it one metadata-only list of every ReplicaSet in scope costs fewer requests and
// bytes (at 100k pods with one Deployment in 100 stalled: 35 lists against one, and the
// ReplicaSets' templates not read).
const maxReplicaSetLists = 2

// readReplicaSets lists the ReplicaSets of each Deployment declared and keeps those the
// Deployment controls: by the Deployment's selector in its namespace, a bounded number of lists
// at a time, or, for more than maxReplicaSetLists Deployments, in one list of the scan's scope
// (one by one again when the credentials refuse that list). The checks declare only Deployments
// whose rollout is not done. It returns how many lists it made.
func (col *collector) readReplicaSets(ctx context.Context, reads []snapshot.ReplicaSetRead) int {
	if len(reads) == 0 {
		return 0
	}
	n := 0
	if len(reads) > maxReplicaSetLists {
		wanted := map[types.UID]bool{}
		for _, r := range reads {
			wanted[r.Deployment] = true
		}
		err := col.listReplicaSetsMeta(ctx, wanted)
		if !fault.Limit(err) {
			if err != nil {
				col.unread(snapshot.InputReplicaSets, err)
			}
			return 1
		}
		n = 1
	}
	if err := col.listReplicaSets(ctx, reads, func(r snapshot.ReplicaSetRead, owner types.UID) bool { return owner == r.Deployment }); err != nil {
		col.unread(snapshot.InputReplicaSets, err)
	}
	return n + len(reads)
}

// listReplicaSetsMeta lists every ReplicaSet in scope metadata-only and keeps, without spec or
// status, those whose controller is wanted.
func (col *collector) listReplicaSetsMeta(ctx context.Context, wanted map[types.UID]bool) error {
	ns := col.namespace()
	l, err := get(ctx, col, func(ctx context.Context) (*metav1.PartialObjectMetadataList, error) {
		return col.c.Metadata.Resource(appsv1.SchemeGroupVersion.WithResource("replicasets")).Namespace(ns).List(ctx, metav1.ListOptions{})
	})
	if err != nil {
		where := "in all namespaces"
		if ns != "" {
			where = "in " + ns
		}
		return readErr("list", "replicasets "+where, err)
	}
	var kept []*appsv1.ReplicaSet
	for i := range l.Items {
		m := &l.Items[i]
		if ref := snapshot.ControllerOf(m); ref != nil && wanted[ref.UID] {
			m.ManagedFields = nil
			kept = append(kept, &appsv1.ReplicaSet{TypeMeta: m.TypeMeta, ObjectMeta: m.ObjectMeta})
		}
	}
	col.add(func(s *snapshot.Snapshot) { s.ReplicaSets = append(s.ReplicaSets, kept...) })
	return nil
}

// listReplicaSets makes the lists, a bounded number at a time, and keeps the ReplicaSets whose
// controller keep accepts.
func (col *collector) listReplicaSets(ctx context.Context, lists []snapshot.ReplicaSetRead, keep func(snapshot.ReplicaSetRead, types.UID) bool) error {
	read := make([][]*appsv1.ReplicaSet, len(lists))
	errs := make([]error, len(lists))
	var g errgroup.Group
	g.SetLimit(col.opts.Concurrency)
	for i, r := range lists {
		g.Go(func() error {
			l, err := get(ctx, col, func(ctx context.Context) (*appsv1.ReplicaSetList, error) {
				return col.c.Kube.AppsV1().ReplicaSets(r.Namespace).List(ctx, metav1.ListOptions{LabelSelector: r.Selector})
			})
			if err != nil {
				where := "in all namespaces"
				if r.Namespace != "" {
					where = "in " + r.Namespace
				}
				errs[i] = readErr("list", "replicasets "+where, err)
				return nil // joined below: a failed read never stops the others
			}
			for j := range l.Items {
				rs := &l.Items[j]
				if ref := snapshot.ControllerOf(rs); ref != nil && keep(r, ref.UID) {
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
	return fault.Join(errs...)
}
