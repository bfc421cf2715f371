package fix

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/retry"
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

func (a podRemoval) Step(f report.Finding, _ report.Fix) (*Step, error) {
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
	var pod *corev1.Pod
	err := retry.Policy{}.Do(ctx, func(ctx context.Context) error {
		var err error
		pod, err = env.Kube.CoreV1().Pods(s.Target.Namespace).Get(ctx, s.Target.Name, metav1.GetOptions{})
		return err
	})
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
	send := func(ctx context.Context) error {
		return a.remove(ctx, env, pod, &metav1.Preconditions{UID: &uid, ResourceVersion: &rv})
	}
	if err := send(ctx); err != nil {
		// The uid and resourceVersion preconditions guard a second send.
		return settle(ctx, env, a.verb, s.Target, rv, err, podReadBack(env, pod, func(p *corev1.Pod) bool {
			return p.ResourceVersion != rv && (a.terminatingIsRemoved && p.DeletionTimestamp != nil ||
				p.DeletionGracePeriodSeconds != nil && *p.DeletionGracePeriodSeconds == 0)
		}), send)
	}
	if env.DryRun == DryRunServer {
		return Outcome{Status: StatusDryRun, ResourceVersionBefore: rv, Reason: a.dryRunReason}
	}
	return Outcome{Status: StatusApplied, Wrote: true, ResourceVersionBefore: rv, Reason: a.appliedReason}
}

// podReadBack tells whether a lost removal of pod landed: the pod is gone or replaced, or removed
// says the pod as read shows the write.
func podReadBack(env *Env, pod *corev1.Pod, removed func(*corev1.Pod) bool) readBack {
	return func(ctx context.Context) (landing, string, string, error) {
		p, err := env.Kube.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return landed, "", "the pod is gone", nil
		case err != nil:
			return 0, "", "", err
		case p.UID != pod.UID:
			return landed, "", fmt.Sprintf("the pod is gone; a new pod with the same name replaced it (uid %s)", p.UID), nil
		case removed(p):
			return landed, p.ResourceVersion, "the pod is being deleted", nil
		case p.ResourceVersion == pod.ResourceVersion:
			return notLanded, p.ResourceVersion, "the pod is still there, unchanged", nil
		}
		return moved, p.ResourceVersion, fmt.Sprintf("the pod is still there and changed since (resourceVersion %s, the write expected %s)", p.ResourceVersion, pod.ResourceVersion), nil
	}
}

func (a podRemoval) Verify(ctx context.Context, env *Env, s *Step, o *Outcome) {
	o.Verified, o.Verification = env.podGone(ctx, s.Target.Namespace, s.Target.Name, types.UID(s.Target.UID), a.terminatingIsRemoved)
}
