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
		doc: ActionDoc{ID: checks.ActionEvictPod, Title: "Evict the pod", Risk: report.RiskMedium,
			Description:   "Evicts the pod through the Eviction API, so PodDisruptionBudgets are respected; its controller recreates it from the current template. A PDB refusal is reported, not retried.",
			Preconditions: "the pod UID is unchanged"},
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
