package fix

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// AnnotationRequeuedAt is the annotation requeue-workload sets on a workload.
const AnnotationRequeuedAt = "workloaddoctor.io/requeued-at"

// requeueWorkload sets an annotation on the workload so its controller gets an update event.
// The merge patch carries the workload's uid: uid is immutable, so a replaced workload makes the
// server reject the patch (422) instead of annotating the new object.
type requeueWorkload struct{}

func (requeueWorkload) Key(map[string]string) string { return "" }

func (requeueWorkload) Step(f report.Finding, _ report.Fix) (*Step, error) {
	target := f.Object
	if f.Owner != nil {
		target = *f.Owner
	}
	if target.UID == "" {
		return nil, fmt.Errorf("the finding does not record the uid of workload %s: scan again", target)
	}
	// The owner's resourceVersion is not in the plan, and the precondition is the uid alone.
	target.ResourceVersion = ""
	return &Step{Target: target,
		Change: fmt.Sprintf("set annotation %s on %s %s so its controller reconciles it; nothing else changes", AnnotationRequeuedAt, target.Kind, target)}, nil
}

// RequeuePatch is the merge patch requeue-workload sends: the annotation, and the workload's uid,
// which the server refuses to change, so the patch cannot land on a replaced workload.
func RequeuePatch(uid, value string) ([]byte, error) {
	b, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"uid":         uid,
		"annotations": map[string]string{AnnotationRequeuedAt: value},
	}})
	if err != nil {
		return nil, fmt.Errorf("encode patch: %w", err)
	}
	return b, nil
}

func (requeueWorkload) Apply(ctx context.Context, env *Env, s *Step) Outcome {
	ri, obj, stop := env.readPinned(ctx, s.Target, false)
	if stop != nil {
		return *stop
	}
	// Nanoseconds, so two requeues in one second still change the object and send an event.
	value := env.now().UTC().Format(time.RFC3339Nano)
	patch, err := RequeuePatch(string(obj.GetUID()), value)
	if err != nil {
		return failed("%v", err)
	}
	rv := obj.GetResourceVersion()
	res, err := ri.Patch(ctx, s.Target.Name, types.MergePatchType, patch, metav1.PatchOptions{DryRun: env.dryRun(), FieldManager: FieldManager})
	if err != nil {
		// Not a guarded write: read back, never sent again.
		o := settle(ctx, env, "patch", s.Target, rv, err, func(ctx context.Context) (landing, string, string, error) {
			obj, err := readMeta(ctx, env, s.Target)
			switch {
			case err != nil:
				return 0, "", "", err
			case obj == nil || string(obj.GetUID()) != s.Target.UID:
				return moved, "", "the workload is gone or was replaced", nil
			case obj.GetAnnotations()[AnnotationRequeuedAt] == value:
				return landed, obj.GetResourceVersion(), fmt.Sprintf("annotation %s=%s is there", AnnotationRequeuedAt, value), nil
			}
			return notLanded, obj.GetResourceVersion(), fmt.Sprintf("annotation %s is not the value sent", AnnotationRequeuedAt), nil
		}, nil)
		o.written = value
		return o
	}
	if env.DryRun == DryRunServer {
		return Outcome{Status: StatusDryRun, ResourceVersionBefore: rv, Reason: fmt.Sprintf("server dry run accepted the patch: %s=%s", AnnotationRequeuedAt, value)}
	}
	return Outcome{Status: StatusApplied, Wrote: true, ResourceVersionBefore: rv, ResourceVersionAfter: res.GetResourceVersion(),
		Reason: fmt.Sprintf("annotated %s=%s", AnnotationRequeuedAt, value), written: value}
}

func (requeueWorkload) Verify(ctx context.Context, env *Env, s *Step, o *Outcome) {
	obj, err := env.get(ctx, s.Target)
	switch {
	case apierrors.IsNotFound(err):
		o.Verification = "the workload is gone"
	case err != nil:
		o.Verification = "could not read the workload back: " + short(err)
	case string(obj.GetUID()) != s.Target.UID:
		o.Verification = fmt.Sprintf("the workload was replaced (uid %s)", obj.GetUID())
	case obj.GetAnnotations()[AnnotationRequeuedAt] != o.written:
		o.Verification = fmt.Sprintf("annotation %s is %q, not the value written", AnnotationRequeuedAt, obj.GetAnnotations()[AnnotationRequeuedAt])
	default:
		o.Verified, o.Verification = true, fmt.Sprintf("annotation %s=%s is on the workload", AnnotationRequeuedAt, o.written)
	}
}

// Doc is what `checks`, `explain` and the README say about the action.
func (requeueWorkload) Doc() ActionDoc {
	return ActionDoc{ID: checks.ActionRequeueWorkload, Title: "Requeue the workload", Risk: report.RiskLow,
		Description:   "Annotates the owning workload with workloaddoctor.io/requeued-at, so its controller receives an update event and reconciles it again. Nothing else about the workload changes.",
		Preconditions: "the workload's UID is unchanged since the scan"}
}
