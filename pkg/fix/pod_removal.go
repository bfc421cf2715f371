package fix

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// podRemoval is an action that removes a pod: force-delete and evict-pod differ only in the
// findings they accept, the write they send and whether a terminating pod counts as removed.
// Both re-read the pod, refuse if it is not the pod the plan saw, and write with its uid and
// resourceVersion as preconditions.
type podRemoval struct {
	doc ActionDoc
	// allow, when set, refuses a finding the action may not act on.
	allow func(f report.Finding) error
	// change is the step's change, in one line.
	change string
	// verb names the write in a failure's reason.
	verb string
	// terminatingIsRemoved leaves a pod that is already being deleted alone (already resolved),
	// and counts a pod that starts terminating as the write's effect.
	terminatingIsRemoved bool
	// remove sends the write with the preconditions and the dry-run setting.
	remove func(ctx context.Context, env *Env, pod *corev1.Pod, pre *metav1.Preconditions) error
	// dryRunReason and appliedReason are the outcome's reason after a server dry run or a write.
	dryRunReason, appliedReason string
}

func (a podRemoval) Doc() ActionDoc { return a.doc }

func (podRemoval) Key(map[string]string) string { return "" }

func (a podRemoval) Plan(f report.Finding, _ report.Fix) (*Step, error) {
	if err := requirePod(f.Object); err != nil {
		return nil, err
	}
	if a.allow != nil {
		if err := a.allow(f); err != nil {
			return nil, err
		}
	}
	if err := requireVersioned(f.Object); err != nil {
		return nil, err
	}
	return &Step{Target: f.Object, Change: a.change}, nil
}

// requirePod refuses pod actions on anything but a core/v1 Pod.
func requirePod(ref report.ObjectRef) error {
	if ref.APIVersion != "v1" || ref.Kind != "Pod" {
		return fmt.Errorf("this action acts on pods, not on %s %s", ref.APIVersion, ref.Kind)
	}
	return nil
}

func (a podRemoval) Apply(ctx context.Context, env *Env, s *Step) Outcome {
	pod, err := env.Kube.CoreV1().Pods(s.Target.Namespace).Get(ctx, s.Target.Name, metav1.GetOptions{})
	if err != nil {
		return readErr(s.Target, err)
	}
	if o := sameObject(pod, s.Target, true); o != nil {
		o.ResourceVersionBefore = pod.ResourceVersion
		return *o
	}
	if a.terminatingIsRemoved && pod.DeletionTimestamp != nil {
		o := resolved("%s is already being deleted (deletionTimestamp %s)", s.Target, pod.DeletionTimestamp.UTC().Format(time.RFC3339))
		o.ResourceVersionBefore = pod.ResourceVersion
		return o
	}
	uid, rv := pod.UID, pod.ResourceVersion
	if err := a.remove(ctx, env, pod, &metav1.Preconditions{UID: &uid, ResourceVersion: &rv}); err != nil {
		o := WriteFailure(a.verb, s.Target, err)
		o.ResourceVersionBefore = rv
		return o
	}
	if env.DryRun == DryRunServer {
		return Outcome{Status: StatusDryRun, ResourceVersionBefore: rv, Reason: a.dryRunReason}
	}
	return Outcome{Status: StatusApplied, Wrote: true, ResourceVersionBefore: rv, Reason: a.appliedReason}
}

func (a podRemoval) Verify(ctx context.Context, env *Env, s *Step, o *Outcome) {
	o.Verified, o.Verification = env.podGone(ctx, s.Target.Namespace, s.Target.Name, types.UID(s.Target.UID), a.terminatingIsRemoved)
}
