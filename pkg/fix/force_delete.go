package fix

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// forceDeleteRootCauses are the only root causes force-delete may act on (contract.md): the pod's
// node is gone, or NotReady past the threshold. Anywhere else the kubelet may still be running
// the containers and a grace-0 delete would let a replacement run next to them.
var forceDeleteRootCauses = map[string]bool{"node-missing": true, "node-not-ready": true}

// forceDelete deletes a pod with grace period 0 and uid and resourceVersion preconditions.
type forceDelete struct{}

func (forceDelete) ID() string                   { return checks.ActionForceDelete }
func (forceDelete) DefaultRisk() report.Risk     { return report.RiskHigh }
func (forceDelete) Key(map[string]string) string { return "" }

func (forceDelete) Plan(f report.Finding, _ report.Fix) (*Step, error) {
	if err := requirePod(f.Object); err != nil {
		return nil, err
	}
	if !forceDeleteRootCauses[f.RootCause.ID] {
		return nil, fmt.Errorf("force-delete applies only to node-missing or node-not-ready findings, not %s", f.RootCause.ID)
	}
	if err := requireVersioned(f.Object); err != nil {
		return nil, err
	}
	return &Step{Target: f.Object,
		Change: "delete the pod with gracePeriodSeconds=0 (uid and resourceVersion preconditions); if its node is only unreachable, the old containers may still run"}, nil
}

// requirePod refuses pod actions on anything but a core/v1 Pod.
func requirePod(ref report.ObjectRef) error {
	if ref.APIVersion != "v1" || ref.Kind != "Pod" {
		return fmt.Errorf("this action acts on pods, not on %s %s", ref.APIVersion, ref.Kind)
	}
	return nil
}

func (forceDelete) Apply(ctx context.Context, env *Env, s *Step) Outcome {
	pod, err := env.Kube.CoreV1().Pods(s.Target.Namespace).Get(ctx, s.Target.Name, metav1.GetOptions{})
	if err != nil {
		return readErr(s.Target, err)
	}
	if o := sameObject(pod, s.Target, true); o != nil {
		o.ResourceVersionBefore = pod.ResourceVersion
		return *o
	}
	grace := int64(0)
	uid, rv := pod.UID, pod.ResourceVersion
	err = env.Kube.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: &grace,
		Preconditions:      &metav1.Preconditions{UID: &uid, ResourceVersion: &rv},
		DryRun:             env.dryRun(),
	})
	if err != nil {
		o := writeErr("delete", s.Target, err)
		o.ResourceVersionBefore = rv
		return o
	}
	if env.DryRun == DryRunServer {
		return Outcome{Status: StatusDryRun, ResourceVersionBefore: rv, Reason: "server dry run accepted the delete with gracePeriodSeconds=0"}
	}
	return Outcome{Status: StatusApplied, Wrote: true, ResourceVersionBefore: rv, Reason: "deleted with gracePeriodSeconds=0"}
}

func (forceDelete) Verify(ctx context.Context, env *Env, s *Step, o *Outcome) {
	o.Verified, o.Verification = env.podGone(ctx, s.Target.Namespace, s.Target.Name, types.UID(s.Target.UID), false)
}
