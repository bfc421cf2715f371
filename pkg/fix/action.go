package fix

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// FieldManager names the plugin in managedFields of the objects it patches.
const FieldManager = "kubectl-workloaddoctor"

// Action is one fix action (docs/contract.md, "Fix actions"). Each lives in its own file, with its
// documentation; NewCatalog lists them.
type Action interface {
	// Doc is the action's ID, its description for people and its default risk.
	Doc() ActionDoc
	// Step validates a finding's fix and returns its step: the object written and the change.
	// An error means the fix cannot be applied as proposed (missing params, wrong kind).
	Step(f report.Finding, fx report.Fix) (*Step, error)
	// Key names what the action changes on its object, from its params (the finalizer for
	// remove-finalizer): two fixes with the same action, object and key are the same change.
	Key(params map[string]string) string
	// Apply re-reads the object, checks the action's own preconditions and writes, with API
	// dry-run when env.DryRun is server. It never retries a refused write.
	Apply(ctx context.Context, env *Env, s *Step) Outcome
	// Verify reads the object after a write and records whether the effect is there. It waits
	// at most env.VerifyTimeout.
	Verify(ctx context.Context, env *Env, s *Step, o *Outcome)
}

// Params of the actions (docs/contract.md, "Fix action parameters").
const (
	ParamFinalizer      = "finalizer"
	ParamLeaseNamespace = "leaseNamespace"
	ParamLeaseName      = "leaseName"
	ParamHolderIdentity = "holderIdentity"
	// ParamPodNamespace is the leader pod's namespace when it differs from the Lease's.
	ParamPodNamespace = "podNamespace"
	// delete-pod: the pod, by name in the StatefulSet's namespace and by UID, its
	// controller-revision-hash and the StatefulSet's status.updateRevision, as the scan saw them.
	ParamPod            = "pod"
	ParamPodUID         = "podUID"
	ParamRevision       = "revision"
	ParamUpdateRevision = "updateRevision"
)

// requireVersioned refuses to plan a write on an object the plan cannot pin.
func requireVersioned(ref report.ObjectRef) error {
	if ref.UID == "" || ref.ResourceVersion == "" {
		return fmt.Errorf("the finding does not record the uid and resourceVersion of %s, so a change could not be detected: scan again", ref)
	}
	return nil
}

// Outcome is what Apply and Verify found.
type Outcome struct {
	Status Status
	Reason string
	// Object, when set, replaces the step's target in the result (e.g. with the UID read).
	Object                *report.ObjectRef
	ResourceVersionBefore string
	ResourceVersionAfter  string
	// Wrote is true when a real (not dry-run) write reached the server and succeeded.
	Wrote bool
	// AnswerLost is true when the answer to the write was lost and the outcome was read back (lost.go).
	AnswerLost   bool
	Verified     bool
	Verification string
	// written is what Apply wrote, for Verify to look for.
	written string
}

func refused(format string, args ...any) Outcome {
	return Outcome{Status: StatusRefused, Reason: fmt.Sprintf(format, args...)}
}

func resolved(format string, args ...any) Outcome {
	return Outcome{Status: StatusAlreadyResolved, Reason: fmt.Sprintf(format, args...)}
}

func failed(format string, args ...any) Outcome {
	return Outcome{Status: StatusFailed, Reason: fmt.Sprintf(format, args...)}
}

// sameObject checks a freshly read object against the plan: the same UID and, when checkRV, the
// same resourceVersion. It returns the refusal, or nil.
func sameObject(m metav1.Object, want report.ObjectRef, checkRV bool) *Outcome {
	if want.UID != "" && string(m.GetUID()) != want.UID {
		o := refused("%s was replaced since the plan: its uid is now %s, the plan saw %s", want, m.GetUID(), want.UID)
		return &o
	}
	if checkRV && m.GetResourceVersion() != want.ResourceVersion {
		o := refused("%s changed since the plan: resourceVersion %s, the plan saw %s", want, m.GetResourceVersion(), want.ResourceVersion)
		return &o
	}
	return nil
}

// readErr turns a failed re-read into an outcome: a missing object is already resolved.
func readErr(ref report.ObjectRef, err error) Outcome {
	if apierrors.IsNotFound(err) {
		return resolved("%s no longer exists", ref)
	}
	return failed("read %s: %v", ref, short(err))
}

// WriteFailure turns a failed write into an outcome. A precondition the server enforced (409
// Conflict, 422 from a failed JSON-patch test or an immutable uid) is a refusal: the object was
// left untouched. A 429 is a PodDisruptionBudget (or similar) saying no: refused, not retried.
func WriteFailure(verb string, ref report.ObjectRef, err error) Outcome {
	switch {
	case apierrors.IsNotFound(err):
		return resolved("%s no longer exists", ref)
	case apierrors.IsConflict(err):
		return refused("%s changed since it was read; the server refused the %s (409 Conflict: %s)", ref, verb, short(err))
	case apierrors.IsInvalid(err):
		return refused("the server refused the %s: a precondition no longer holds (422: %s)", verb, short(err))
	case apierrors.IsTooManyRequests(err):
		return refused("the server refused the %s (429: %s); not retried", verb, short(err))
	case apierrors.IsForbidden(err):
		return failed("%s %s: forbidden (the workloaddoctor-fix ClusterRole grants the writes fix makes): %s", verb, ref, short(err))
	}
	return failed("%s %s: %s", verb, ref, short(err))
}

// short is an error on one line.
func short(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}
