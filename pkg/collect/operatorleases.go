package collect

import (
	"context"
	"strings"

	"golang.org/x/sync/errgroup"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/fault"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// maxHolderReads bounds the holder pods read by name: a cluster has a few abandoned Leases, not
// hundreds.
const maxHolderReads = 20

// readLeaderLeases lists every Lease outside kube-node-lease (the node heartbeats, read on their
// own), then reads by name the holder pod of each Lease abandoned long ago: a holder that no
// longer exists is what shows the controller gone, where a stale Lease alone does not.
func (col *collector) readLeaderLeases(ctx context.Context) error {
	opts := metav1.ListOptions{FieldSelector: "metadata.namespace!=" + corev1.NamespaceNodeLease}
	l, err := get(ctx, col, func(ctx context.Context) (*coordinationv1.LeaseList, error) {
		return col.c.Kube.CoordinationV1().Leases("").List(ctx, opts)
	})
	if err != nil {
		return readErr("list", "coordination.k8s.io/leases in all namespaces", err)
	}
	now, _ := col.now()
	leases := make([]*coordinationv1.Lease, 0, len(l.Items))
	var holders []string // "namespace/pod"
	for i := range l.Items {
		lease := &l.Items[i]
		lease.ManagedFields = nil
		leases = append(leases, lease)
		if _, abandoned := snapshot.LeaseAbandoned(lease, now); abandoned && len(holders) < maxHolderReads {
			if pod := snapshot.LeaseHolderPod(lease); pod != "" {
				holders = append(holders, lease.Namespace+"/"+pod)
			}
		}
	}
	exists := make([]bool, len(holders))
	errs := make([]error, len(holders))
	var g errgroup.Group
	g.SetLimit(col.opts.Concurrency)
	for i, h := range holders {
		ns, name, _ := strings.Cut(h, "/")
		g.Go(func() error {
			_, err := get(ctx, col, func(ctx context.Context) (*metav1.PartialObjectMetadata, error) {
				return col.c.Metadata.Resource(corev1.SchemeGroupVersion.WithResource("pods")).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
			})
			switch {
			case apierrors.IsNotFound(err):
			case err != nil:
				errs[i] = readErr("get", "pod "+h, err)
			default:
				exists[i] = true
			}
			return nil // recorded: a failed read never stops the others
		})
	}
	_ = g.Wait()
	col.add(func(s *snapshot.Snapshot) {
		s.LeaderLeases = append(s.LeaderLeases, leases...)
		if s.LeaseHolders == nil {
			s.LeaseHolders = map[string]bool{}
		}
		for i, h := range holders {
			if errs[i] == nil {
				s.LeaseHolders[h] = exists[i]
			}
		}
	})
	return fault.Join(errs...)
}
