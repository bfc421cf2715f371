package fix

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks/builtin"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// forceDelete deletes a pod with grace period 0 and uid and resourceVersion preconditions.
func forceDelete() podRemoval {
	// Only the root causes that offer force-delete (docs/contract.md: the pod's node is gone, or
	// NotReady past the threshold); anywhere else the kubelet may still be running the containers
	// and a grace-0 delete would let a replacement run next to them.
	allowed := builtin.Checks().RootCauseIDs(func(rc checks.RootCause) bool { return rc.Offers(checks.ActionForceDelete) })
	return podRemoval{
		doc: ActionDoc{ID: checks.ActionForceDelete, Title: "Force-delete the pod", Risk: report.RiskHigh,
			Description:   "Deletes the pod with grace period 0 and a UID precondition, as `kubectl delete --force --grace-period=0` does. If the node is only unreachable, the old containers may still run.",
			Preconditions: "the pod's node is missing, or NotReady past the threshold; the pod UID is unchanged"},
		allow: func(f report.Finding) error {
			if !slices.Contains(allowed, f.RootCause.ID) {
				return fmt.Errorf("force-delete applies only to %s findings, not %s", strings.Join(allowed, " or "), f.RootCause.ID)
			}
			return nil
		},
		change: "delete the pod with gracePeriodSeconds=0 (uid and resourceVersion preconditions); if its node is only unreachable, the old containers may still run",
		verb:   "delete",
		remove: func(ctx context.Context, env *Env, pod *corev1.Pod, pre *metav1.Preconditions) error {
			grace := int64(0)
			return env.Kube.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
				GracePeriodSeconds: &grace, Preconditions: pre, DryRun: env.dryRun(),
			})
		},
		dryRunReason:  "server dry run accepted the delete with gracePeriodSeconds=0",
		appliedReason: "deleted with gracePeriodSeconds=0",
	}
}
