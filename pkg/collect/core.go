package collect

import (
	"context"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
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
