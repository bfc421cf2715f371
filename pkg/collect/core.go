package collect

import (
	"context"

	"golang.org/x/sync/errgroup"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// readNodes reads every node.
func (col *collector) readNodes(ctx context.Context) error {
	nodes, err := listAll(ctx, col, "nodes", col.c.Kube.CoreV1().Nodes().List,
		func(l *corev1.NodeList) []corev1.Node { return l.Items })
	col.add(func(s *snapshot.Snapshot) { s.Nodes = nodes })
	return err
}

// readNodeLeases reads the node heartbeat Leases.
func (col *collector) readNodeLeases(ctx context.Context) error {
	ns := corev1.NamespaceNodeLease
	leases, err := listAll(ctx, col, "coordination.k8s.io/leases in "+ns, col.c.Kube.CoordinationV1().Leases(ns).List,
		func(l *coordinationv1.LeaseList) []coordinationv1.Lease { return l.Items })
	col.add(func(s *snapshot.Snapshot) { s.NodeLeases = append(s.NodeLeases, leases...) })
	return err
}

// readNamespaces reads the namespace in scope, or every namespace; with a label selector only
// those matching it, since a namespace is itself something a check can report.
func (col *collector) readNamespaces(ctx context.Context) error {
	if ns := col.namespace(); ns != "" {
		n, err := get(ctx, col, func(ctx context.Context) (*corev1.Namespace, error) {
			return col.c.Kube.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		})
		if err != nil {
			return readErr("get", "namespaces/"+ns, err)
		}
		if col.opts.Scope.InScope(n.Labels) {
			col.add(func(s *snapshot.Snapshot) { s.Namespaces = []*corev1.Namespace{n} })
		}
		return nil
	}
	list := col.c.Kube.CoreV1().Namespaces().List
	out, err := listAll(ctx, col, "namespaces", func(ctx context.Context, o metav1.ListOptions) (*corev1.NamespaceList, error) {
		o.LabelSelector = col.opts.Scope.LabelSelector
		return list(ctx, o)
	}, func(l *corev1.NamespaceList) []corev1.Namespace { return l.Items })
	col.add(func(s *snapshot.Snapshot) { s.Namespaces = out })
	return err
}

// readNamedNodes reads, one GET each, the nodes named and their heartbeat Leases, for a
// collection that reads nodes by name instead of listing them (Options.NodesByName). A name
// whose GET says NotFound is recorded as read: the node is known to be gone.
func (col *collector) readNamedNodes(ctx context.Context, names []string) {
	var todo []string
	col.add(func(s *snapshot.Snapshot) {
		for _, n := range names {
			if !s.NodesByName[n] {
				todo = append(todo, n)
			}
		}
	})
	if len(todo) == 0 {
		return
	}
	nodes := make([]*corev1.Node, len(todo))
	leases := make([]*coordinationv1.Lease, len(todo))
	var g errgroup.Group
	g.SetLimit(col.opts.Concurrency)
	for i, name := range todo {
		g.Go(func() error {
			n, err := get(ctx, col, func(ctx context.Context) (*corev1.Node, error) {
				return col.c.Kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			})
			switch {
			case err == nil:
				nodes[i] = n
			case !apierrors.IsNotFound(err):
				col.unread(snapshot.InputNodes, readErr("get", "nodes/"+name, err))
			}
			l, err := get(ctx, col, func(ctx context.Context) (*coordinationv1.Lease, error) {
				return col.c.Kube.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, name, metav1.GetOptions{})
			})
			switch {
			case err == nil:
				l.ManagedFields = nil
				leases[i] = l
			case !apierrors.IsNotFound(err):
				col.unread(snapshot.InputNodeLeases, readErr("get", "coordination.k8s.io/leases "+corev1.NamespaceNodeLease+"/"+name, err))
			}
			return nil // recorded: one node's failure never stops the others
		})
	}
	_ = g.Wait()
	col.add(func(s *snapshot.Snapshot) {
		for i, name := range todo {
			s.NodesByName[name] = true
			if nodes[i] != nil {
				s.Nodes = append(s.Nodes, nodes[i])
			}
			if leases[i] != nil {
				s.NodeLeases = append(s.NodeLeases, leases[i])
			}
		}
	})
}
