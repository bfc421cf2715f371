package fix

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// noStandbyHazard is why restarting the only Ready replica of the kruise-manager is high risk.
// Every replica serves the pod webhook mpod.kb.io, registered with failurePolicy Fail for pod
// creations in every namespace without a control-plane label (kruise v1.9.0
// pkg/webhook/pod/mutating/webhooks.go and config/webhook/patch_manifests.yaml).
const noStandbyHazard = "with none, OpenKruise's pod webhook (mpod.kb.io, failurePolicy Fail) rejects every pod creation in the cluster until the new leader is Ready"

// requireStandby reads the leader's siblings (the pods of its Deployment, or of its controller
// when that is no ReplicaSet of a Deployment) and returns why the restart is high risk: no other
// Ready replica, or none that could be confirmed. It returns "" when one is Ready.
func requireStandby(ctx context.Context, env *Env, leader *corev1.Pod) string {
	siblings, err := siblingPods(ctx, env, leader)
	if err != nil {
		return fmt.Sprintf("another Ready replica could not be confirmed (%s); %s", short(err), noStandbyHazard)
	}
	for i := range siblings {
		if siblings[i].UID != leader.UID && serving(&siblings[i]) {
			return ""
		}
	}
	return fmt.Sprintf("no replica but the leader pod %s/%s is Ready now; %s", leader.Namespace, leader.Name, noStandbyHazard)
}

// siblingPods lists the pods that replicate the leader: its Deployment's when its controller is
// a ReplicaSet owned by one (every ReplicaSet of a rollout counts), else its controller's.
func siblingPods(ctx context.Context, env *Env, leader *corev1.Pod) ([]corev1.Pod, error) {
	ns := leader.Namespace
	ref := snapshot.ControllerOf(leader)
	sel := ""
	if ref.Kind == "ReplicaSet" {
		rs, err := env.Kube.AppsV1().ReplicaSets(ns).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("read ReplicaSet %s/%s: %w", ns, ref.Name, err)
		}
		var d *appsv1.Deployment
		if dref := metav1.GetControllerOf(rs); dref != nil && dref.Kind == "Deployment" {
			if d, err = env.Kube.AppsV1().Deployments(ns).Get(ctx, dref.Name, metav1.GetOptions{}); err != nil {
				return nil, fmt.Errorf("read Deployment %s/%s: %w", ns, dref.Name, err)
			}
		}
		ls := rs.Spec.Selector
		if d != nil {
			ls = d.Spec.Selector
		}
		s, err := metav1.LabelSelectorAsSelector(ls)
		if err != nil {
			return nil, fmt.Errorf("selector of ReplicaSet %s/%s: %w", ns, rs.Name, err)
		}
		sel = s.String()
	}
	l, err := env.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("list pods in %s: %w", ns, err)
	}
	var out []corev1.Pod
	for _, p := range l.Items {
		if c := snapshot.ControllerOf(&p); sel != "" || (c != nil && c.UID == ref.UID) {
			out = append(out, p)
		}
	}
	return out, nil
}
