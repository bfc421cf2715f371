package scenario

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/scenario/kubelet"
)

// hooks: the third-party controllers behind the preNormal hooks act on the new, ready pods.
func (b *builder) hooks(ctx context.Context, _ *Shop) error {
	// orders: the registry controller registers the pods and says so with the hook's label. Label
	// changes always reach kruise, which moves the pods to Normal.
	orders, err := b.controllerPatches(ctx, "orders", registryController, map[string]string{registryLabel: "true"}, nil)
	if err != nil {
		return err
	}
	if err := b.waitLifecycle(ctx, Namespace, "app=orders", "Normal", orders); err != nil {
		return err
	}
	for _, x := range []struct {
		app, manager string
		labels       map[string]string
		finalizers   []string
	}{
		// cart: the same controller registers the pods with the hook's finalizer. kruise v1.7.0 with
		// CloneSetEventHandlerOptimization ignores that pod event: the pods stay PreparingNormal.
		{"cart", registryController, nil, []string{registryFinalizer}},
		// payments: the warm-up controller's check fails; it marks the pod not ready for traffic.
		{"payments", warmupController, map[string]string{warmupLabel: "false"}, nil},
		// Controllers that add finalizers to the pods they manage resources for; both are
		// uninstalled later, leaving their finalizers behind.
		{"recommender", cacheWarmer, nil, []string{cacheFinalizer}},
		{"image-resizer", volumeJanitor, nil, []string{volumeFinalizer}},
	} {
		if _, err := b.controllerPatches(ctx, x.app, x.manager, x.labels, x.finalizers); err != nil {
			return err
		}
	}
	return nil
}

// nodes: the spot node is reclaimed (its Node object deleted) and the edge node's kubelet dies
// (kwok stops playing it, so its Lease is no longer renewed).
func (b *builder) nodes(ctx context.Context, _ *Shop) error {
	spot, err := b.livePods(ctx, Namespace, "app=recommender")
	if err != nil {
		return err
	}
	for _, p := range spot {
		if p.Spec.NodeName == nodeSpot {
			b.deleted["recommender"] = append(b.deleted["recommender"], p.Name)
		}
	}
	if err := b.env.Kube.CoreV1().Nodes().Delete(ctx, nodeSpot, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("delete node %s: %w", nodeSpot, err)
	}
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, kubelet.NodeLabel)
	if _, err := b.env.Kube.CoreV1().Nodes().Patch(ctx, nodeEdge, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("stop the kubelet of node %s: %w", nodeEdge, err)
	}
	return nil
}

// lostEvent: checkout is scaled to 2 while kruise-manager's pod watch is broken; the pod it
// creates is deleted right away, before the watch re-lists, so the leader never sees it and
// waits for it forever (openkruise/kruise#1765).
func (b *builder) lostEvent(ctx context.Context, shop *Shop) error {
	before, err := b.livePods(ctx, Namespace, "app=checkout")
	if err != nil {
		return err
	}
	known := map[string]bool{}
	for _, p := range before {
		known[p.Name] = true
	}
	return shop.Manager.PodWatchOutage(ctx, func(ctx context.Context) error {
		if err := b.patchCloneSet(ctx, Namespace, "checkout", "kubectl-scale", map[string]any{"spec": map[string]any{"replicas": 2}}); err != nil {
			return err
		}
		var lost *corev1.Pod
		err := poll(ctx, time.Minute, "kruise-manager to create a checkout pod", func(ctx context.Context) (bool, error) {
			pods, err := b.pods(ctx, Namespace, "app=checkout")
			if err != nil {
				return false, err
			}
			for i := range pods {
				if !known[pods[i].Name] {
					lost = &pods[i]
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return err
		}
		// Deleted before anyone saw it (an admission-time cleanup, a descheduler, a person).
		grace := int64(0)
		uid := lost.UID
		err = b.env.Kube.CoreV1().Pods(Namespace).Delete(ctx, lost.Name, metav1.DeleteOptions{GracePeriodSeconds: &grace,
			Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete pod %s: %w", lost.Name, err)
		}
		b.logf("      pod %s/%s was created and deleted while kruise-manager's pod watch was down", Namespace, lost.Name)
		return nil
	})
}

// operations: what people do next, on a cluster that is already in trouble.
func (b *builder) operations(ctx context.Context, _ *Shop) error {
	// checkout is short of pods; the on-call scales it up again. The leader skips that too.
	if err := b.patchCloneSet(ctx, Namespace, "checkout", "kubectl-scale", map[string]any{"spec": map[string]any{"replicas": 3}}); err != nil {
		return err
	}
	// image-resizer is restarted; its kubelet stops the pod, and the finalizer of the uninstalled
	// volume janitor holds it.
	resizer, err := b.livePods(ctx, Namespace, "app=image-resizer")
	if err != nil {
		return err
	}
	for _, p := range resizer {
		if err := b.env.Kube.CoreV1().Pods(Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
			return fmt.Errorf("delete pod %s: %w", p.Name, err)
		}
		b.deleted["image-resizer"] = append(b.deleted["image-resizer"], p.Name)
	}
	// inventory: the team wants memory resizes to restart the container and sets it in the
	// template, and has the CloneSet update only in place. kruise cannot change resizePolicy in
	// place, and InPlaceOnly never recreates a pod: the rollout stops at the first pod
	// (FailedUpdate), and the running pods keep their policy.
	err = b.patchCloneSet(ctx, Namespace, "inventory", editManager, map[string]any{"spec": map[string]any{
		"updateStrategy": map[string]any{"type": "InPlaceOnly"},
		"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{
			"name": "app", "image": "registry.shop.example/inventory:6.3.1",
			"ports":     []any{map[string]any{"name": "http", "containerPort": 8080}},
			"resources": map[string]any{"requests": map[string]any{"cpu": "250m", "memory": "256Mi"}},
			"resizePolicy": []any{
				map[string]any{"resourceName": "cpu", "restartPolicy": "NotRequired"},
				map[string]any{"resourceName": "memory", "restartPolicy": "RestartContainer"},
			},
		}}}},
	}})
	if err != nil {
		return err
	}
	// search runs on the edge node, which stopped heartbeating; someone deletes its pod to get it
	// rescheduled. Nothing confirms the containers stopped: the pod stays Terminating.
	if err := b.waitNodeReady(ctx, nodeEdge, corev1.ConditionUnknown, 2*time.Minute); err != nil {
		return err
	}
	search, err := b.livePods(ctx, Namespace, "app=search")
	if err != nil {
		return err
	}
	for _, p := range search {
		if p.Spec.NodeName != nodeEdge {
			continue
		}
		if err := b.env.Kube.CoreV1().Pods(Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
			return fmt.Errorf("delete pod %s: %w", p.Name, err)
		}
		b.deleted["search"] = append(b.deleted["search"], p.Name)
	}
	return nil
}

// legacy: the legacy app's Helm release is uninstalled; its cluster-scoped APIService stays and
// points at the Service that went with it. Deleting the namespace then blocks on discovery.
func (b *builder) legacy(ctx context.Context, _ *Shop) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "legacy-settings", Namespace: LegacyNamespace},
		Data: map[string]string{"mode": "readonly"}}
	if _, err := b.env.Kube.CoreV1().ConfigMaps(LegacyNamespace).Create(ctx, cm, metav1.CreateOptions{FieldManager: "helm"}); err != nil {
		return fmt.Errorf("create ConfigMap: %w", err)
	}
	svc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": legacyAPIService, "labels": map[string]any{"app.kubernetes.io/managed-by": "Helm"}},
		"spec": map[string]any{"group": "metrics.shop.example", "version": "v1beta1", "groupPriorityMinimum": int64(1000),
			"versionPriority": int64(15), "insecureSkipTLSVerify": true,
			"service": map[string]any{"namespace": LegacyNamespace, "name": legacyService, "port": int64(443)}},
	}}
	if _, err := b.env.Dynamic.Resource(apiServices).Create(ctx, svc, metav1.CreateOptions{FieldManager: "helm"}); err != nil {
		return fmt.Errorf("create APIService %s: %w", legacyAPIService, err)
	}
	err := poll(ctx, time.Minute, "APIService "+legacyAPIService+" to be unavailable", func(ctx context.Context) (bool, error) {
		got, err := b.env.Dynamic.Resource(apiServices).Get(ctx, legacyAPIService, metav1.GetOptions{})
		return err == nil && APIServiceUnavailable(got), err
	})
	if err != nil {
		return err
	}
	if err := b.env.Kube.CoreV1().Namespaces().Delete(ctx, LegacyNamespace, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("delete namespace %s: %w", LegacyNamespace, err)
	}
	return nil
}

// APIServiceUnavailable reports whether the kube-apiserver's availability controller has marked an
// APIService Available=False (its service cannot be reached).
func APIServiceUnavailable(svc *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(svc.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Available" && m["status"] == "False" {
			return true
		}
	}
	return false
}
