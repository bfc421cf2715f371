package scenario

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
)

// settle waits until every broken state is what a scan should see, then records the expected
// findings and the healthy objects.
func (b *builder) settle(ctx context.Context, shop *Shop) error {
	kube := b.env.Kube
	// image-resizer: its kubelet finished (grace period 0); only the finalizer holds the pod.
	resizer, err := b.waitTerminating(ctx, b.deleted["image-resizer"], func(p *corev1.Pod) bool {
		return p.DeletionGracePeriodSeconds != nil && *p.DeletionGracePeriodSeconds == 0
	}, "the kubelet to stop image-resizer's pod")
	if err != nil {
		return err
	}
	// search: the deletion's grace period ran out on the dead node.
	search, err := b.waitTerminating(ctx, b.deleted["search"], func(p *corev1.Pod) bool {
		return time.Now().After(p.DeletionTimestamp.Add(time.Second))
	}, "search's grace period to run out on "+nodeEdge)
	if err != nil {
		return err
	}
	// recommender: PodGC force-deletes pods of the missing node (after 40s of quarantine); the
	// uninstalled cache warmer's finalizer keeps the pod.
	recommender, err := b.waitTerminating(ctx, b.deleted["recommender"], func(*corev1.Pod) bool { return true },
		"PodGC to delete recommender's pod on the missing node "+nodeSpot)
	if err != nil {
		return err
	}
	err = poll(ctx, 2*time.Minute, "namespace "+LegacyNamespace+" to report NamespaceDeletionDiscoveryFailure", func(ctx context.Context) (bool, error) {
		ns, err := kube.CoreV1().Namespaces().Get(ctx, LegacyNamespace, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range ns.Status.Conditions {
			if c.Type == corev1.NamespaceDeletionDiscoveryFailure && c.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return err
	}
	err = poll(ctx, time.Minute, "CloneSet inventory to observe its template change", func(ctx context.Context) (bool, error) {
		u, err := b.env.Dynamic.Resource(kruise.CloneSets).Namespace(Namespace).Get(ctx, "inventory", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		og, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
		return og == u.GetGeneration(), nil
	})
	if err != nil {
		return err
	}
	// checkout: past --expectation-timeout the leader logs the leaked expectation.
	err = poll(ctx, 2*expectationTimeout+time.Minute, "kruise-manager to log the leaked expectation of checkout", func(context.Context) (bool, error) {
		data, err := os.ReadFile(b.env.Files.ManagerLog)
		return err == nil && strings.Contains(string(data), `"Expectation unsatisfied overtime" cloneSet="shop/checkout"`), err
	})
	if err != nil {
		return err
	}

	// checkout-api: the deployment controller gives up once its progress deadline passed.
	err = b.waitDeploymentProgressing(ctx, Namespace, "checkout-api", "ProgressDeadlineExceeded", deploymentDeadline*time.Second+2*time.Minute)
	if err != nil {
		return err
	}

	cart, err := b.livePods(ctx, Namespace, "app=cart")
	if err != nil {
		return err
	}
	payments, err := b.livePods(ctx, Namespace, "app=payments")
	if err != nil {
		return err
	}
	inventory, err := b.livePods(ctx, Namespace, "app=inventory")
	if err != nil {
		return err
	}
	for _, p := range cart {
		shop.expect("stuck-preparing-normal", "prenormal-event-dropped", pod(p.Name), true,
			"cart: the hook finalizer was added, but kruise-manager v1.7.0 with CloneSetEventHandlerOptimization ignored that event; the pod stays PreparingNormal")
	}
	for _, p := range payments {
		shop.expect("stuck-preparing-normal", "prenormal-hook-pending", pod(p.Name), false,
			"payments: the warm-up controller set "+warmupLabel+"=false; kruise waits for the hook by design (a person looks at the warm-up)")
	}
	shop.expect("expectations-unsatisfied", "scale-expectations-leaked", Object{"CloneSet", Namespace, "checkout"}, true,
		"checkout: a pod was created and deleted while kruise-manager's watch re-listed; the leader waits for it and skips every reconcile")
	for _, p := range inventory {
		shop.expect("resize-policy-drift", "resize-policy-immutable", pod(p.Name), true,
			"inventory: the template now restarts on memory resize; InPlaceOnly cannot make that change in place, so the rollout stopped and the pods keep theirs")
	}
	for _, p := range search {
		shop.expect("stuck-terminating", "node-not-ready", pod(p.Name), true,
			"search: deleted while its node "+nodeEdge+" stopped heartbeating; no kubelet confirms it stopped")
	}
	// The uninstalled controllers' finalizers are not the tool's to remove: their field managers
	// name binaries, not workloads, and nothing in the cluster proves the controllers are gone for
	// good, so the findings say what was searched and a person decides.
	for _, p := range recommender {
		shop.expect("stuck-terminating", "node-missing", pod(p.Name), false,
			"recommender: its node "+nodeSpot+" was removed; PodGC deleted it, the finalizer of the cache warmer (not found, uninstalled) holds it")
	}
	for _, p := range resizer {
		shop.expect("stuck-terminating", "finalizer-owner-not-acting", pod(p.Name), false,
			"image-resizer: restarted; the finalizer of the volume janitor (not found, uninstalled) holds the old pod")
	}
	shop.expect("rollout-stalled", "image-pull-failing", Object{"Deployment", Namespace, "checkout-api"}, false,
		"checkout-api: rolled to tag 2.5.0, which was never pushed; its new pod cannot pull it and the rollout passed its progress deadline (a person fixes the tag or rolls back)")
	shop.expect("stuck-terminating", "namespace-discovery-failed", Object{"Namespace", "", LegacyNamespace}, false,
		"shop-legacy: deleted while APIService "+legacyAPIService+" points at a Service that is gone (a person removes or repairs it)")

	if err := b.healthy(ctx, shop, "CloneSet", "catalog", "orders", "reviews"); err != nil {
		return err
	}
	return b.healthy(ctx, shop, "Deployment", "frontend")
}

// healthy lists the apps' workloads of the kind and their pods as objects no finding may name.
func (b *builder) healthy(ctx context.Context, shop *Shop, kind string, apps ...string) error {
	for _, app := range apps {
		shop.Healthy = append(shop.Healthy, Object{kind, Namespace, app})
		pods, err := b.pods(ctx, Namespace, "app="+app)
		if err != nil {
			return err
		}
		for _, p := range pods {
			shop.Healthy = append(shop.Healthy, pod(p.Name))
		}
	}
	return nil
}

// waitTerminating waits until each named pod is being deleted and matches done, and returns them.
func (b *builder) waitTerminating(ctx context.Context, names []string, done func(*corev1.Pod) bool, what string) ([]corev1.Pod, error) {
	if len(names) == 0 {
		return nil, fmt.Errorf("wait for %s: no pod", what)
	}
	var out []corev1.Pod
	err := poll(ctx, 3*time.Minute, what, func(ctx context.Context) (bool, error) {
		out = out[:0]
		for _, name := range names {
			p, err := b.env.Kube.CoreV1().Pods(Namespace).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if p.DeletionTimestamp == nil || !done(p) {
				return false, nil
			}
			out = append(out, *p)
		}
		return true, nil
	})
	return out, err
}
