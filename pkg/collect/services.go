package collect

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// readDeletedServices lists Services whole and keeps those being deleted: whether a service
// controller ever acted on one (spec.loadBalancerClass, status.loadBalancer) is not in its
// metadata. The objects input takes them from here rather than listing Services again.
func (col *collector) readDeletedServices(ctx context.Context) error {
	list := col.c.Kube.CoreV1().Services(col.namespace()).List
	var kept []*corev1.Service
	svcs, err := listAll(ctx, col, "services", func(ctx context.Context, o metav1.ListOptions) (*corev1.ServiceList, error) {
		// With a label selector only Services matching it can be findings.
		o.LabelSelector = col.opts.Scope.LabelSelector
		return list(ctx, o)
	}, func(l *corev1.ServiceList) []corev1.Service { return l.Items })
	for _, s := range svcs {
		if s.DeletionTimestamp != nil {
			kept = append(kept, s)
		}
	}
	col.add(func(s *snapshot.Snapshot) { s.DeletedServices = kept })
	return err
}
