package scenario

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/scenario/kruisemanager"
	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/scenario/kubelet"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
)

// progressDeadline is the rollout CloneSets' spec.progressDeadlineSeconds, as short as the
// run against the real v1.9.0 used (domain.md).
const progressDeadline = 30

// rollouts gives four ReCreate CloneSets with a progress deadline a new template: coupons' rolls
// through; ratings' asks for node pool "gpu", which no node has, so its new pod stays Pending
// (PodScheduled=False/Unschedulable) and the stand-in, as v1.9.0 does, sets
// Progressing=False/ProgressDeadlineExceeded; gifts (paused) and promos (partition 2 of 2) get
// the same template and hold it back. The scan must name ratings' scheduler reason, and nothing
// about the others.
func (b *builder) rollouts(ctx context.Context, shop *Shop) error {
	for _, c := range []cloneSetSpec{
		{name: "ratings", replicas: 2, spec: podSpec("main", "registry.shop.example/ratings:3.1.0", nil)},
		{name: "coupons", replicas: 2, spec: podSpec("main", "registry.shop.example/coupons:1.9.4", nil)},
		{name: "gifts", replicas: 2, spec: podSpec("main", "registry.shop.example/gifts:2.2.0", nil)},
		{name: "promos", replicas: 2, spec: podSpec("main", "registry.shop.example/promos:0.8.1", nil)},
	} {
		if err := b.cloneSet(ctx, Namespace, c); err != nil {
			return err
		}
		if err := b.patchCloneSet(ctx, Namespace, c.name, applyManager, map[string]any{"spec": map[string]any{"progressDeadlineSeconds": progressDeadline}}); err != nil {
			return err
		}
		if err := b.waitCloneSetSteady(ctx, Namespace, c.name); err != nil {
			return err
		}
	}
	release := map[string]any{"metadata": map[string]any{"annotations": map[string]any{"shop.example/release": "2"}}}
	if err := b.patchCloneSet(ctx, Namespace, "coupons", applyManager, map[string]any{"spec": map[string]any{"template": release}}); err != nil {
		return err
	}
	// The same template change, held back by the user: gifts is paused, promos' partition keeps
	// both pods on the old revision. Neither is a finding.
	gpu := map[string]any{"metadata": release["metadata"], "spec": map[string]any{"nodeSelector": map[string]any{"pool": "gpu"}}}
	for name, strategy := range map[string]map[string]any{"ratings": nil, "gifts": {"paused": true}, "promos": {"partition": 2}} {
		spec := map[string]any{"template": gpu}
		if strategy != nil {
			spec["updateStrategy"] = strategy
		}
		if err := b.patchCloneSet(ctx, Namespace, name, applyManager, map[string]any{"spec": spec}); err != nil {
			return err
		}
	}
	for name, want := range map[string]string{"coupons": kruisemanager.ReasonAvailable, "ratings": kruisemanager.ReasonDeadlineExceeded,
		"gifts": kruisemanager.ReasonPaused, "promos": kruisemanager.ReasonPartitionAvailable} {
		if err := b.waitProgressing(ctx, name, want); err != nil {
			return err
		}
	}
	shop.expect("rollout-stalled", "pods-unschedulable", Object{"CloneSet", Namespace, "ratings"}, false,
		"ratings: its new template asks for node pool gpu, which no node has; the rollout passed its progress deadline")
	return b.healthy(ctx, shop, "CloneSet", "coupons", "gifts", "promos")
}

// waitProgressing waits until the CloneSet's Progressing condition has the reason, its rollout
// done when the reason is CloneSetAvailable.
func (b *builder) waitProgressing(ctx context.Context, name, reason string) error {
	return WaitProgressing(ctx, b.env.Dynamic, Namespace, name, reason)
}

// WaitProgressing waits, up to 3 minutes, until the CloneSet's controller has observed its
// generation and set its Progressing condition to reason.
func WaitProgressing(ctx context.Context, dyn dynamic.Interface, ns, name, reason string) error {
	return poll(ctx, 3*time.Minute, fmt.Sprintf("CloneSet %s/%s Progressing reason %s", ns, name, reason), func(ctx context.Context) (bool, error) {
		u, err := dyn.Resource(kruise.CloneSets).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		w, err := kruise.WorkloadFromUnstructured(u)
		if err != nil {
			return false, err
		}
		c, ok := w.Condition("Progressing")
		return ok && c.Reason == reason && w.Status.ObservedGeneration == w.Generation, nil
	})
}

// deploymentDeadline is checkout-api's progressDeadlineSeconds: short, so that the deployment
// controller gives up on the rollout while the demo starts (the default is 600).
const deploymentDeadline = 30

// badImage: the checkout-api team releases a tag their CI never pushed, with a short progress
// deadline. kube-controller-manager creates the new ReplicaSet and its surge pod, whose image
// cannot be pulled (kwok plays the kubelet's ErrImagePull for pods labelled so), and, once
// the deadline passes without progress, sets Progressing=False/ProgressDeadlineExceeded
// (pkg/controller/deployment/progress.go syncRolloutStatus, util.DeploymentTimedOut);
// settle waits for that. The old pods keep serving.
func (b *builder) badImage(ctx context.Context, _ *Shop) error {
	patch := map[string]any{"spec": map[string]any{
		"progressDeadlineSeconds": deploymentDeadline,
		"template": map[string]any{
			"metadata": map[string]any{"labels": map[string]any{kubelet.Label: kubelet.ErrImagePull}},
			"spec": map[string]any{"containers": []any{map[string]any{
				"name": "app", "image": "registry.shop.example/checkout-api:2.5.0"}}},
		},
	}}
	raw, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	_, err = b.env.Kube.AppsV1().Deployments(Namespace).Patch(ctx, "checkout-api", types.StrategicMergePatchType, raw,
		metav1.PatchOptions{FieldManager: applyManager})
	if err != nil {
		return fmt.Errorf("roll Deployment %s/checkout-api: %w", Namespace, err)
	}
	return nil
}
