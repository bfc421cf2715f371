package scenario

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// indexer runs one pod on the edge node, before that node's kubelet dies.
func (b *builder) indexer(ctx context.Context, _ *Shop) error {
	spec := podSpec("edge", "registry.shop.example/indexer:0.9.2", nil)
	grace := int64(5)
	spec.TerminationGracePeriodSeconds = &grace
	if err := b.deployment(ctx, Namespace, "indexer", 1, spec); err != nil {
		return err
	}
	return b.waitDeploymentAvailable(ctx, Namespace, "indexer")
}

// retireIndexer: the indexer is retired with `kubectl delete deployment --cascade=foreground`
// after the edge node died. The garbage collector deletes the ReplicaSet (foreground too) and
// its pod, which no kubelet confirms: the Deployment and the ReplicaSet wait on the pod, whose
// force-delete (the root's fix) lets them go.
func (b *builder) retireIndexer(ctx context.Context, shop *Shop) error {
	rss, err := b.env.Kube.AppsV1().ReplicaSets(Namespace).List(ctx, metav1.ListOptions{LabelSelector: "app=indexer"})
	if err != nil || len(rss.Items) != 1 {
		return fmt.Errorf("the indexer's ReplicaSet: %d found (%v)", len(rss.Items), err)
	}
	pods, err := b.livePods(ctx, Namespace, "app=indexer")
	if err != nil || len(pods) != 1 {
		return fmt.Errorf("the indexer's pod: %d found (%v)", len(pods), err)
	}
	fg := metav1.DeletePropagationForeground
	if err := b.env.Kube.AppsV1().Deployments(Namespace).Delete(ctx, "indexer", metav1.DeleteOptions{PropagationPolicy: &fg}); err != nil {
		return fmt.Errorf("delete deployment indexer: %w", err)
	}
	if _, err := b.waitTerminating(ctx, []string{pods[0].Name}, func(p *corev1.Pod) bool {
		return time.Now().After(p.DeletionTimestamp.Add(time.Second))
	}, "the indexer pod's grace period to run out on "+nodeEdge); err != nil {
		return err
	}
	story := "indexer: deleted with --cascade=foreground after its node " + nodeEdge + " died; it waits for its pod, fixed by the pod's force-delete"
	shop.expect("stuck-terminating", "dependents-remaining", Object{"Deployment", Namespace, "indexer"}, true, story)
	shop.expect("stuck-terminating", "dependents-remaining", Object{"ReplicaSet", Namespace, rss.Items[0].Name}, true, story)
	shop.expect("stuck-terminating", "node-not-ready", pod(pods[0].Name), true, story)
	return nil
}
