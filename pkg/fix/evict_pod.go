package fix

import (
	"context"
	"time"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// evictPod evicts a pod through the policy/v1 Eviction API, so PodDisruptionBudgets decide; a
// refusal (429) is reported as it is and never retried.
type evictPod struct{}

func (evictPod) ID() string                   { return checks.ActionEvictPod }
func (evictPod) DefaultRisk() report.Risk     { return report.RiskMedium }
func (evictPod) Key(map[string]string) string { return "" }

func (evictPod) Plan(f report.Finding, _ report.Fix) (*Step, error) {
	if err := requirePod(f.Object); err != nil {
		return nil, err
	}
	if err := requireVersioned(f.Object); err != nil {
		return nil, err
	}
	return &Step{Target: f.Object,
		Change: "evict the pod through the policy/v1 Eviction API (PodDisruptionBudgets respected; uid precondition); its controller recreates it"}, nil
}

func (evictPod) Apply(ctx context.Context, env *Env, s *Step) Outcome {
	pod, err := env.Kube.CoreV1().Pods(s.Target.Namespace).Get(ctx, s.Target.Name, metav1.GetOptions{})
	if err != nil {
		return readErr(s.Target, err)
	}
	if o := sameObject(pod, s.Target, true); o != nil {
		o.ResourceVersionBefore = pod.ResourceVersion
		return *o
	}
	if pod.DeletionTimestamp != nil {
		o := resolved("%s is already being deleted (deletionTimestamp %s)", s.Target, pod.DeletionTimestamp.UTC().Format(time.RFC3339))
		o.ResourceVersionBefore = pod.ResourceVersion
		return o
	}
	uid, rv := pod.UID, pod.ResourceVersion
	err = env.Kube.PolicyV1().Evictions(pod.Namespace).Evict(ctx, &policyv1.Eviction{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace},
		DeleteOptions: &metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv},
			DryRun:        env.dryRun(),
		},
	})
	if err != nil {
		o := writeErr("eviction", s.Target, err)
		o.ResourceVersionBefore = rv
		return o
	}
	if env.DryRun == DryRunServer {
		return Outcome{Status: StatusDryRun, ResourceVersionBefore: rv, Reason: "server dry run accepted the eviction"}
	}
	return Outcome{Status: StatusApplied, Wrote: true, ResourceVersionBefore: rv, Reason: "evicted"}
}

func (evictPod) Verify(ctx context.Context, env *Env, s *Step, o *Outcome) {
	o.Verified, o.Verification = env.podGone(ctx, s.Target.Namespace, s.Target.Name, types.UID(s.Target.UID), true)
}
