package scenario

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/scenario/kruisemanager"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
)

// The session drainer: the preDelete hook of wishlist, which lets a pod go once its sessions moved.
const (
	sessionDrainer = "session-drainer"
	drainFinalizer = "sessions.shop.example/drained"
)

// retire is the shop's pod retired by name: wishlist's pods carry the session drainer's preDelete
// hook finalizer, and the on-call puts one pod in spec.scaleStrategy.podsToDelete. The CloneSet
// controller moves it to PreparingDelete and, since a PreparingDelete pod still counts toward
// spec.replicas (kruise v1.9.0 calculateDiffsWithExpectation), creates no replacement while the
// drainer has not released it. That is the controller working as designed: the only finding is the
// pod's own pending hook, and the CloneSet is healthy.
func (b *builder) retire(ctx context.Context, shop *Shop) error {
	const app = "wishlist"
	err := b.cloneSet(ctx, Namespace, cloneSetSpec{name: app, replicas: 3, spec: podSpec("main", "registry.shop.example/wishlist:1.2.0", nil),
		lifecycle: map[string]any{"preDelete": map[string]any{"finalizersHandler": []any{drainFinalizer}}}})
	if err != nil {
		return err
	}
	if err := b.waitCloneSetSteady(ctx, Namespace, app); err != nil {
		return err
	}
	if _, err := b.controllerPatches(ctx, app, sessionDrainer, nil, []string{drainFinalizer}); err != nil {
		return err
	}
	pods, err := b.livePods(ctx, Namespace, "app="+app)
	if err != nil {
		return err
	}
	if len(pods) != 3 {
		return fmt.Errorf("CloneSet %s has %d pods, want 3", app, len(pods))
	}
	retired := pods[0].Name
	if err := b.patchCloneSet(ctx, Namespace, app, "kubectl-patch", map[string]any{"spec": map[string]any{
		"scaleStrategy": map[string]any{"podsToDelete": []any{retired}}}}); err != nil {
		return err
	}
	err = poll(ctx, time.Minute, "pod "+retired+" to wait in PreparingDelete with wishlist's status at 3 pods", func(ctx context.Context) (bool, error) {
		p, err := b.env.Kube.CoreV1().Pods(Namespace).Get(ctx, retired, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		cs, err := b.env.Dynamic.Resource(kruise.CloneSets).Namespace(Namespace).Get(ctx, app, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		og, _, _ := unstructured.NestedInt64(cs.Object, "status", "observedGeneration")
		n, _, _ := unstructured.NestedInt64(cs.Object, "status", "replicas")
		return p.Labels[kruise.LabelLifecycleState] == kruise.StatePreparingDelete && og == cs.GetGeneration() && n == 3, nil
	})
	if err != nil {
		return err
	}
	// A replacement would show within the stand-in's next reconciles; none may come.
	time.Sleep(2 * kruisemanager.RetryPeriod)
	if live, err := b.livePods(ctx, Namespace, "app="+app); err != nil || len(live) != 3 {
		return fmt.Errorf("CloneSet %s replaced its PreparingDelete pod (%d pods): %v", app, len(live), err)
	}
	shop.expect("stuck-terminating", "kruise-predelete-hook-pending", pod(retired), false,
		"wishlist: the on-call retired a pod by name (podsToDelete); the session drainer has not released it, so it waits in PreparingDelete and, still counted toward replicas, is not replaced")
	return nil
}
