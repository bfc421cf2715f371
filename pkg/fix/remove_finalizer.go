package fix

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// removeFinalizer removes exactly one finalizer from any object with a JSON patch whose test ops
// pin the object's uid, its resourceVersion and the finalizer's value at its index, so the write
// fails rather than removing the wrong entry if anything moved.
type removeFinalizer struct{}

func (removeFinalizer) Key(p map[string]string) string {
	return p[ParamFinalizer]
}

func (removeFinalizer) Step(f report.Finding, fx report.Fix) (*Step, error) {
	name := fx.Params[ParamFinalizer]
	if name == "" {
		return nil, fmt.Errorf("remove-finalizer fix names no finalizer (params.finalizer)")
	}
	if err := requireVersioned(f.Object); err != nil {
		return nil, err
	}
	return &Step{Target: f.Object, Params: map[string]string{ParamFinalizer: name},
		Change: fmt.Sprintf("remove finalizer %q from metadata.finalizers; the other finalizers and their order are kept", name)}, nil
}

// FinalizerPatch is the JSON patch remove-finalizer sends: it removes the finalizer at index i,
// guarded by test ops on the object's uid and resourceVersion and on the finalizer's value.
func FinalizerPatch(uid, resourceVersion string, i int, name string) ([]byte, error) {
	path := "/metadata/finalizers/" + strconv.Itoa(i)
	ops := []map[string]any{
		{"op": "test", "path": "/metadata/uid", "value": uid},
		{"op": "test", "path": "/metadata/resourceVersion", "value": resourceVersion},
		{"op": "test", "path": path, "value": name},
		{"op": "remove", "path": path},
	}
	b, err := json.Marshal(ops)
	if err != nil {
		return nil, fmt.Errorf("encode patch: %w", err)
	}
	return b, nil
}

func (removeFinalizer) Apply(ctx context.Context, env *Env, s *Step) Outcome {
	name := s.Params[ParamFinalizer]
	ri, obj, stop := env.readPinned(ctx, s.Target, true)
	if stop != nil {
		return *stop
	}
	before := obj.GetFinalizers()
	i := slices.Index(before, name)
	if i < 0 {
		o := resolved("finalizer %q is no longer on %s", name, s.Target)
		o.ResourceVersionBefore = obj.GetResourceVersion()
		return o
	}
	patch, err := FinalizerPatch(string(obj.GetUID()), obj.GetResourceVersion(), i, name)
	if err != nil {
		return failed("%v", err)
	}
	send := func(ctx context.Context) (*metav1.PartialObjectMetadata, error) {
		return ri.Patch(ctx, s.Target.Name, types.JSONPatchType, patch, metav1.PatchOptions{DryRun: env.dryRun(), FieldManager: FieldManager})
	}
	res, err := send(ctx)
	if err != nil {
		// The test ops guard a second send: it applies only to the object as it was read.
		return settle(ctx, env, "patch", s.Target, obj.GetResourceVersion(), err, finalizerReadBack(env, s.Target, name, obj.GetResourceVersion()),
			func(ctx context.Context) error { _, err := send(ctx); return err })
	}
	after := slices.Delete(slices.Clone(before), i, i+1)
	o := Outcome{ResourceVersionBefore: obj.GetResourceVersion(), ResourceVersionAfter: res.GetResourceVersion()}
	if env.DryRun == DryRunServer {
		o.Status, o.Reason = StatusDryRun, fmt.Sprintf("server dry run accepted the patch: finalizers would be %s", list(after))
		o.ResourceVersionAfter = ""
		return o
	}
	o.Status, o.Wrote = StatusApplied, true
	o.Reason = fmt.Sprintf("removed finalizer %q at index %d; finalizers now %s", name, i, list(res.GetFinalizers()))
	return o
}

func (removeFinalizer) Verify(ctx context.Context, env *Env, s *Step, o *Outcome) {
	name := s.Params[ParamFinalizer]
	obj, err := env.get(ctx, s.Target)
	switch {
	case apierrors.IsNotFound(err):
		o.Verified, o.Verification = true, "the object is gone: removing the finalizer let its deletion finish"
		o.ResourceVersionAfter = ""
	case err != nil:
		o.Verification = "could not read the object back: " + short(err)
	case string(obj.GetUID()) != s.Target.UID:
		o.Verified, o.Verification = true, fmt.Sprintf("the object is gone; a new one with the same name exists (uid %s)", obj.GetUID())
		o.ResourceVersionAfter = ""
	case slices.Contains(obj.GetFinalizers(), name):
		o.Verification = fmt.Sprintf("finalizer %q is on the object again (its owner re-added it?): finalizers %s", name, list(obj.GetFinalizers()))
	default:
		o.Verified, o.Verification = true, fmt.Sprintf("finalizer %q is gone; finalizers %s", name, list(obj.GetFinalizers()))
	}
}

// finalizerReadBack tells whether a lost finalizer removal landed: the finalizer is gone, or the
// object is (its deletion finished).
func finalizerReadBack(env *Env, ref report.ObjectRef, name, rvBefore string) readBack {
	return func(ctx context.Context) (landing, string, string, error) {
		obj, err := readMeta(ctx, env, ref)
		switch {
		case err != nil:
			return 0, "", "", err
		case obj == nil:
			return landed, "", "the object is gone: removing the finalizer let its deletion finish", nil
		case string(obj.GetUID()) != ref.UID:
			return landed, "", fmt.Sprintf("the object is gone; a new one with the same name exists (uid %s)", obj.GetUID()), nil
		case !slices.Contains(obj.GetFinalizers(), name):
			return landed, obj.GetResourceVersion(), fmt.Sprintf("finalizer %q is gone; finalizers %s", name, list(obj.GetFinalizers())), nil
		case obj.GetResourceVersion() == rvBefore:
			return notLanded, obj.GetResourceVersion(), fmt.Sprintf("finalizer %q is still on the unchanged object", name), nil
		}
		return moved, obj.GetResourceVersion(), fmt.Sprintf("finalizer %q is still on the object, which changed since (resourceVersion %s, the write expected %s)",
			name, obj.GetResourceVersion(), rvBefore), nil
	}
}

func list(items []string) string {
	return "[" + strings.Join(items, ", ") + "]"
}

// Doc is what `checks`, `explain` and the README say about the action.
func (removeFinalizer) Doc() ActionDoc {
	return ActionDoc{ID: checks.ActionRemoveFinalizer, Title: "Remove one finalizer", Risk: report.RiskMedium,
		Description:   "Removes exactly the named finalizer with a JSON patch that first tests the finalizer's value at its index; other finalizers and their order are kept. The cleanup that finalizer guards is skipped.",
		Preconditions: "the finalizer is still present and the object's resourceVersion is unchanged"}
}
