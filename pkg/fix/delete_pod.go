package fix

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks/builtin"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/retry"
)

// deletePod deletes, gracefully, the pod that holds a StatefulSet's rolling update: a pod that
// is not Ready on a revision the StatefulSet no longer rolls to. With OrderedReady the
// controller waits for that pod to turn Ready before it touches any other (processReplica,
// pkg/controller/statefulset/stateful_set_control.go, kubernetes v1.37.1), so the pod holds the
// rollout even after the template is reverted; deleted, it is recreated on updateRevision
// (newVersionedStatefulSetPod, stateful_set_utils.go). This is the documentation's "forced
// rollback". The pod serves nothing, so the delete is not counted against the workload's
// budget; a run deletes at most one pod of a StatefulSet (oncePer), and the controller's own
// ordering decides what follows.
type deletePod struct {
	// allowed are the root causes that offer delete-pod: anywhere else the pod was not judged
	// to hold a rollout.
	allowed []string
}

func newDeletePod() deletePod {
	return deletePod{allowed: builtin.Checks().RootCauseIDs(func(rc checks.RootCause) bool { return rc.Offers(checks.ActionDeletePod) })}
}

// Doc is what `checks`, `explain` and the README say about the action.
func (deletePod) Doc() ActionDoc {
	return ActionDoc{ID: checks.ActionDeletePod, Title: "Delete the pod that holds the StatefulSet", Risk: report.RiskMedium,
		Description: "Deletes, gracefully, the one pod that holds a StatefulSet's rolling update: not Ready, on a revision other than the StatefulSet's updateRevision " +
			"(the Kubernetes documentation's \"forced rollback\"). The StatefulSet controller recreates it on updateRevision. " +
			"The pod serves nothing, so the delete is not counted against the workload's disruption budget; a run deletes at most one pod of a StatefulSet and reports any other deferred.",
		Preconditions: "the StatefulSet's UID and status.updateRevision are the ones the scan saw; the pod's UID is the one the scan saw, the StatefulSet controls it, " +
			"its controller-revision-hash is still the revision the scan saw (not updateRevision), its ordinal is at or above the partition, and it is not Ready; " +
			"the delete carries uid and resourceVersion preconditions"}
}

// Key is the pod: two fixes deleting the same pod are one change.
func (deletePod) Key(p map[string]string) string {
	return p[ParamPod] + " (uid " + p[ParamPodUID] + ")"
}

// oncePer is the StatefulSet: a run deletes at most one of its pods.
func (deletePod) oncePer(s *Step) *report.ObjectRef {
	if set, err := statefulSetOf(s); err == nil && set.UID != "" {
		return &set
	}
	return nil
}

func (a deletePod) Step(f report.Finding, fx report.Fix) (*Step, error) {
	if f.Object.APIVersion != "apps/v1" || f.Object.Kind != "StatefulSet" {
		return nil, fmt.Errorf("delete-pod acts on the pods of apps/v1 StatefulSets, and the finding is on %s %s", f.Object.APIVersion, f.Object.Kind)
	}
	if !slices.Contains(a.allowed, f.RootCause.ID) {
		return nil, fmt.Errorf("delete-pod applies only to %s findings, not %s", strings.Join(a.allowed, " or "), f.RootCause.ID)
	}
	if err := requireVersioned(f.Object); err != nil {
		return nil, err
	}
	p := fx.Params
	for _, k := range []string{ParamPod, ParamPodUID, ParamRevision, ParamUpdateRevision} {
		if p[k] == "" {
			return nil, fmt.Errorf("delete-pod fix has no params.%s", k)
		}
	}
	if p[ParamRevision] == p[ParamUpdateRevision] {
		return nil, fmt.Errorf("pod %s is on the StatefulSet's updateRevision %s: deleting it would recreate the same revision", p[ParamPod], p[ParamUpdateRevision])
	}
	target := report.ObjectRef{APIVersion: "v1", Kind: "Pod", Namespace: f.Object.Namespace, Name: p[ParamPod], UID: p[ParamPodUID]}
	return &Step{Target: target, Params: maps.Clone(p),
		Change: fmt.Sprintf("delete pod %s (graceful; uid and resourceVersion preconditions), on revision %s, so that %s recreates it on its updateRevision %s",
			target, p[ParamRevision], f.Object, p[ParamUpdateRevision])}, nil
}

// statefulSetOf is the StatefulSet the step's findings are about.
func statefulSetOf(s *Step) (report.ObjectRef, error) {
	for _, f := range s.Findings {
		if f.Object.Kind == "StatefulSet" && f.Object.APIVersion == "apps/v1" {
			return f.Object, nil
		}
	}
	return report.ObjectRef{}, fmt.Errorf("the step names no StatefulSet finding")
}

func (deletePod) Apply(ctx context.Context, env *Env, s *Step) Outcome {
	setRef, err := statefulSetOf(s)
	if err != nil {
		return refused("%v", err)
	}
	var set *appsv1.StatefulSet
	var pod *corev1.Pod
	err = retry.Policy{}.Do(ctx, func(ctx context.Context) error {
		var err error
		set, err = env.Kube.AppsV1().StatefulSets(setRef.Namespace).Get(ctx, setRef.Name, metav1.GetOptions{})
		return err
	})
	if err != nil {
		return readErr(setRef, err)
	}
	err = retry.Policy{}.Do(ctx, func(ctx context.Context) error {
		var err error
		pod, err = env.Kube.CoreV1().Pods(s.Target.Namespace).Get(ctx, s.Target.Name, metav1.GetOptions{})
		return err
	})
	if err != nil {
		return readErr(s.Target, err)
	}
	if o := judgeDeletePod(setRef, s.Params, set, pod); o != nil {
		o.ResourceVersionBefore = pod.ResourceVersion
		return *o
	}
	uid, rv := pod.UID, pod.ResourceVersion
	send := func(ctx context.Context) error {
		// Graceful: the pod's own terminationGracePeriodSeconds. The resourceVersion keeps a
		// pod that turned Ready since the read from being deleted.
		return env.Kube.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv}, DryRun: env.dryRun(),
		})
	}
	if err := send(ctx); err != nil {
		// The uid and resourceVersion preconditions guard a second send.
		return settle(ctx, env, "delete", s.Target, rv, err,
			podReadBack(env, pod, func(p *corev1.Pod) bool { return p.DeletionTimestamp != nil }), send)
	}
	if env.DryRun == DryRunServer {
		return Outcome{Status: StatusDryRun, ResourceVersionBefore: rv, Reason: "server dry run accepted the delete"}
	}
	return Outcome{Status: StatusApplied, Wrote: true, ResourceVersionBefore: rv,
		Reason: fmt.Sprintf("deleted pod on revision %s (uid precondition %s); %s recreates it on %s", s.Params[ParamRevision], uid, setRef, set.Status.UpdateRevision)}
}

// judgeDeletePod holds the StatefulSet and the pod, as read right before the delete, against what
// the scan saw (setRef, params). It returns what to report instead of deleting, or nil: each
// refusal says which guard failed.
func judgeDeletePod(setRef report.ObjectRef, params map[string]string, set *appsv1.StatefulSet, pod *corev1.Pod) *Outcome {
	podRef := podRefOf(pod)
	var o Outcome
	switch wantRev, rev := params[ParamRevision], pod.Labels[appsv1.StatefulSetRevisionLabel]; {
	case string(set.UID) != setRef.UID:
		o = refused("%s was replaced since the scan: its uid is now %s, the scan saw %s", setRef, set.UID, setRef.UID)
	case set.DeletionTimestamp != nil:
		o = refused("%s is being deleted: nothing would recreate the pod", setRef)
	case set.Status.UpdateRevision != params[ParamUpdateRevision]:
		o = refused("the updateRevision of %s is now %s, the scan saw %s: its rollout changed since the scan; scan again",
			setRef, set.Status.UpdateRevision, params[ParamUpdateRevision])
	case string(pod.UID) != params[ParamPodUID]:
		o = refused("%s was replaced since the scan: its uid is now %s, the scan saw %s", podRef, pod.UID, params[ParamPodUID])
	case pod.DeletionTimestamp != nil:
		o = resolved("%s is already being deleted (deletionTimestamp %s)", podRef, pod.DeletionTimestamp.UTC().Format(time.RFC3339))
	case !controlledBy(pod, set.UID):
		o = refused("%s is not controlled by %s (its controller: %s)", podRef, setRef, controllerName(pod))
	case rev != wantRev:
		o = refused("%s is now on revision %q, the scan saw %s", podRef, rev, wantRev)
	case belowPartition(set, pod):
		o = refused("%s is below the partition %d of %s: the controller would recreate it on currentRevision %s, not on updateRevision %s",
			podRef, *set.Spec.UpdateStrategy.RollingUpdate.Partition, setRef, set.Status.CurrentRevision, set.Status.UpdateRevision)
	case serving(pod): // not being deleted (above): Ready
		o = refused("%s is Ready now: delete-pod takes only a pod that serves nothing", podRef)
	default:
		return nil
	}
	return &o
}

func controlledBy(pod *corev1.Pod, uid types.UID) bool {
	ref := metav1.GetControllerOf(pod)
	return ref != nil && ref.UID == uid
}

func controllerName(pod *corev1.Pod) string {
	if ref := metav1.GetControllerOf(pod); ref != nil {
		return fmt.Sprintf("%s %s uid %s", ref.Kind, ref.Name, ref.UID)
	}
	return "none"
}

// belowPartition reports whether the StatefulSet controller recreates the pod on currentRevision:
// its ordinal is below start + partition under RollingUpdate (newVersionedStatefulSetPod,
// pkg/controller/statefulset/stateful_set_utils.go, kubernetes v1.37.1).
func belowPartition(set *appsv1.StatefulSet, pod *corev1.Pod) bool {
	st := set.Spec.UpdateStrategy
	if st.Type != appsv1.RollingUpdateStatefulSetStrategyType || st.RollingUpdate == nil || st.RollingUpdate.Partition == nil {
		return false
	}
	i := strings.LastIndexByte(pod.Name, '-')
	ord, err := strconv.Atoi(pod.Name[i+1:])
	if i < 0 || err != nil {
		return false // not a name the controller gave; the controller check above already vouched for the pod
	}
	start := 0
	if set.Spec.Ordinals != nil {
		start = int(set.Spec.Ordinals.Start)
	}
	return ord < start+int(*st.RollingUpdate.Partition)
}

func (deletePod) Verify(ctx context.Context, env *Env, s *Step, o *Outcome) {
	o.Verified, o.Verification = env.podGone(ctx, s.Target.Namespace, s.Target.Name, types.UID(s.Target.UID), true)
}
