package fix

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// restartLeader deletes the pod that holds a controller's leader Lease, so the next leader starts
// with empty in-memory state. It refuses when the Lease changed hands since the scan, when the
// pod has no controller that would replace it, and, unless the user chose the action, when no
// other replica is Ready (restart_standby.go): every kruise-manager replica serves OpenKruise's
// pod webhook, which fails closed, so restarting the only one stops pod creation cluster-wide.
type restartLeader struct{}

func (restartLeader) Key(p map[string]string) string {
	return p[ParamLeaseNamespace] + "/" + p[ParamLeaseName]
}

func (restartLeader) Step(_ report.Finding, fx report.Fix) (*Step, error) {
	p := fx.Params
	for _, k := range []string{ParamLeaseNamespace, ParamLeaseName, ParamHolderIdentity} {
		if p[k] == "" {
			return nil, fmt.Errorf("restart-controller-leader fix has no params.%s", k)
		}
	}
	ns := p[ParamPodNamespace]
	if ns == "" {
		ns = p[ParamLeaseNamespace]
	}
	params := map[string]string{}
	for k, v := range p {
		params[k] = v
	}
	target := report.ObjectRef{APIVersion: "v1", Kind: "Pod", Namespace: ns, Name: kruise.HolderPod(p[ParamHolderIdentity])}
	step := &Step{Target: target, Params: params,
		Change: fmt.Sprintf("delete leader pod %s (holder of Lease %s/%s); another replica or its Deployment takes over with no in-memory expectations",
			target, p[ParamLeaseNamespace], p[ParamLeaseName])}
	// The scan raises the risk when it saw no other Ready replica.
	if fx.Risk == report.RiskHigh {
		step.Hazard = "the scan saw no other Ready replica of the controller; " + noStandbyHazard
	}
	return step, nil
}

func (restartLeader) Apply(ctx context.Context, env *Env, s *Step) Outcome {
	leaseNS, leaseName, holder := s.Params[ParamLeaseNamespace], s.Params[ParamLeaseName], s.Params[ParamHolderIdentity]
	lease, err := env.Kube.CoordinationV1().Leases(leaseNS).Get(ctx, leaseName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return refused("Lease %s/%s no longer exists", leaseNS, leaseName)
	case err != nil:
		return failed("read Lease %s/%s: %s", leaseNS, leaseName, short(err))
	}
	if now := deref(lease.Spec.HolderIdentity); now != holder {
		return refused("the leader changed since the scan: Lease %s/%s is held by %q, the plan saw %q", leaseNS, leaseName, now, holder)
	}
	pod, err := env.Kube.CoreV1().Pods(s.Target.Namespace).Get(ctx, s.Target.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return refused("leader pod %s does not exist; the Lease is stale and another replica takes over when it expires", s.Target)
	case err != nil:
		return failed("read %s: %s", s.Target, short(err))
	}
	ref := s.Target
	ref.UID, ref.ResourceVersion = string(pod.UID), pod.ResourceVersion
	if pod.DeletionTimestamp != nil {
		o := resolved("leader pod %s is already being deleted (deletionTimestamp %s)", s.Target, pod.DeletionTimestamp.UTC().Format(time.RFC3339))
		o.Object, o.ResourceVersionBefore = &ref, pod.ResourceVersion
		return o
	}
	if snapshot.ControllerOf(pod) == nil {
		o := refused("leader pod %s has no controller ownerReference, so nothing would replace it", s.Target)
		o.Object, o.ResourceVersionBefore = &ref, pod.ResourceVersion
		return o
	}
	if !s.HazardAccepted {
		if why := requireStandby(ctx, env, pod); why != "" {
			o := refused("high risk, applied only when named with --action %s: %s", s.Action, why)
			o.Object, o.ResourceVersionBefore = &ref, pod.ResourceVersion
			return o
		}
	}
	uid := pod.UID
	send := func(ctx context.Context) error {
		return env.Kube.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &uid},
			DryRun:        env.dryRun(),
		})
	}
	if err = send(ctx); err != nil {
		// The uid precondition guards a second send.
		o := settle(ctx, env, "delete", s.Target, pod.ResourceVersion, err,
			podReadBack(env, pod, func(p *corev1.Pod) bool { return p.DeletionTimestamp != nil }), send)
		o.Object = &ref
		return o
	}
	o := Outcome{Object: &ref, ResourceVersionBefore: pod.ResourceVersion}
	if env.DryRun == DryRunServer {
		o.Status, o.Reason = StatusDryRun, "server dry run accepted the delete of the leader pod"
		return o
	}
	o.Status, o.Wrote, o.Reason = StatusApplied, true, fmt.Sprintf("deleted leader pod (uid precondition %s)", uid)
	return o
}

func (restartLeader) Verify(ctx context.Context, env *Env, s *Step, o *Outcome) {
	uid := s.Target.UID
	if o.Object != nil {
		uid = o.Object.UID
	}
	gone, msg := env.podGone(ctx, s.Target.Namespace, s.Target.Name, types.UID(uid), true)
	o.Verified, o.Verification = gone, msg
	if !gone {
		return
	}
	// A deleted leader does not always release its Lease; the next one takes over when it expires.
	leaseNS, leaseName, holder := s.Params[ParamLeaseNamespace], s.Params[ParamLeaseName], s.Params[ParamHolderIdentity]
	lease, err := env.Kube.CoordinationV1().Leases(leaseNS).Get(ctx, leaseName, metav1.GetOptions{})
	switch {
	case err != nil:
		o.Verification += fmt.Sprintf("; could not read Lease %s/%s: %s", leaseNS, leaseName, short(err))
	case deref(lease.Spec.HolderIdentity) != holder:
		o.Verification += fmt.Sprintf("; Lease %s/%s is now held by %q", leaseNS, leaseName, deref(lease.Spec.HolderIdentity))
	default:
		secs := int32(0)
		if lease.Spec.LeaseDurationSeconds != nil {
			secs = *lease.Spec.LeaseDurationSeconds
		}
		o.Verification += fmt.Sprintf("; Lease %s/%s still names the old holder until it expires (leaseDurationSeconds %d), then another replica takes over", leaseNS, leaseName, secs)
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// Doc is what `checks`, `explain` and the README say about the action.
func (restartLeader) Doc() ActionDoc {
	return ActionDoc{ID: checks.ActionRestartControllerLeader, Title: "Restart the controller leader", Risk: report.RiskMedium,
		Description:   "Deletes the pod that holds the controller's leader Lease. Expectations live only in the leader's memory, so the next leader starts with none; another replica or the Deployment replaces the pod.",
		Preconditions: "the Lease holder is the same pod as at scan time; another replica of the controller is Ready (at scan time and again right before the delete), else the action is high risk and applied only when named with --action restart-controller-leader, since with one replica OpenKruise's pod webhook (mpod.kb.io, failurePolicy Fail) rejects every pod creation until the new leader is Ready"}
}
