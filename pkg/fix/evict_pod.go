package fix

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// evictPod evicts a pod through the policy/v1 Eviction API, so PodDisruptionBudgets decide; a
// refusal (429) is reported as it is and never retried.
func evictPod() podRemoval {
	return podRemoval{
		doc: ActionDoc{ID: checks.ActionEvictPod, Title: "Evict the pod", Risk: report.RiskMedium, TakesServingPod: true,
			Description: "Evicts the pod through the Eviction API, so PodDisruptionBudgets are respected; its controller recreates it from the current template. A PDB refusal is reported, not retried. " +
				"Pods of one workload are evicted in waves: a wave takes away at most as many Ready pods as the workload's own maxUnavailable allows (its update strategy, defaulted and rounded as its controller does), and the next wave waits until the replacements are Ready. " +
				"What the budget does not allow within --timeout is reported deferred, never forced; --wait=false runs only the first wave.",
			Preconditions: "the pod UID is unchanged; the pod has a controller; its workload keeps replicas - maxUnavailable Ready pods, counting the pods this run already evicted; a workload with a single replica (or maxUnavailable 0) only when the action is named with --action evict-pod"},
		change:               "evict the pod through the policy/v1 Eviction API (PodDisruptionBudgets respected; uid precondition); its controller recreates it",
		verb:                 "eviction",
		terminatingIsRemoved: true,
		remove: func(ctx context.Context, env *Env, pod *corev1.Pod, pre *metav1.Preconditions) error {
			return env.Kube.PolicyV1().Evictions(pod.Namespace).Evict(ctx, &policyv1.Eviction{
				ObjectMeta:    metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace},
				DeleteOptions: &metav1.DeleteOptions{Preconditions: pre, DryRun: env.dryRun()},
			})
		},
		dryRunReason:  "server dry run accepted the eviction",
		appliedReason: "evicted",
	}
}
