package fix

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// FieldManager names the plugin in managedFields of the objects it patches.
const FieldManager = "kubectl-workloaddoctor"

// Action is one fix action (contract.md, "Fix actions"). Each lives in its own file.
type Action interface {
	ID() string
	// DefaultRisk is the risk when the finding's fix does not state one.
	DefaultRisk() report.Risk
	// Plan validates a finding's fix and returns its step: the object written and the change.
	// An error means the fix cannot be applied as proposed (missing params, wrong kind).
	Plan(f report.Finding, fx report.Fix) (*Step, error)
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

// Outcome is what Apply and Verify found.
type Outcome struct {
	Status Status
	Reason string
	// Object, when set, replaces the step's target in the result (e.g. with the UID read).
	Object                *report.ObjectRef
	ResourceVersionBefore string
	ResourceVersionAfter  string
	// Wrote is true when a real (not dry-run) write reached the server and succeeded.
	Wrote        bool
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

// actions is every action, by ID.
var actions = map[string]Action{}

func register(a Action) { actions[a.ID()] = a }

func init() {
	register(removeFinalizer{})
	register(forceDelete{})
	register(requeueWorkload{})
	register(restartLeader{})
	register(evictPod{})
}

// Lookup returns the action with the given ID.
func Lookup(id string) (Action, bool) {
	a, ok := actions[id]
	return a, ok
}

// Env is what actions work with.
type Env struct {
	Kube kubernetes.Interface
	// Metadata reads and patches objects of any resource as metadata only, so an action never
	// holds a Secret's data or any other object content it does not need.
	Metadata metadata.Interface
	Mapper   meta.RESTMapper
	// DryRun is none or server; a client dry run never reaches the actions.
	DryRun DryRun
	Now    func() time.Time
	// VerifyTimeout bounds how long Verify waits for an effect; PollInterval is its period.
	VerifyTimeout time.Duration
	PollInterval  time.Duration
}

func (e *Env) dryRun() []string {
	if e.DryRun == DryRunServer {
		return []string{metav1.DryRunAll}
	}
	return nil
}

func (e *Env) now() time.Time {
	if e.Now != nil {
		return e.Now()
	}
	return time.Now()
}

// resource resolves an object reference to its resource through the RESTMapper, so actions work
// on any resource, CRDs and cluster-scoped ones included.
func (e *Env) resource(ref report.ObjectRef) (metadata.ResourceInterface, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil, fmt.Errorf("object %s: bad apiVersion %q: %w", ref, ref.APIVersion, err)
	}
	gk := schema.GroupKind{Group: gv.Group, Kind: ref.Kind}
	m, err := e.Mapper.RESTMapping(gk, gv.Version)
	if err != nil && meta.IsNoMatchError(err) {
		// A CRD installed after the mapper was filled: look again once.
		if r, ok := e.Mapper.(meta.ResettableRESTMapper); ok {
			r.Reset()
			m, err = e.Mapper.RESTMapping(gk, gv.Version)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("object %s: no resource serves %s %s: %w", ref, ref.APIVersion, ref.Kind, err)
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		if ref.Namespace == "" {
			return nil, fmt.Errorf("object %s: %s is namespaced but the reference has no namespace", ref, ref.Kind)
		}
		return e.Metadata.Resource(m.Resource).Namespace(ref.Namespace), nil
	}
	return e.Metadata.Resource(m.Resource), nil
}

// get reads the metadata of an object of any resource.
func (e *Env) get(ctx context.Context, ref report.ObjectRef) (*metav1.PartialObjectMetadata, error) {
	ri, err := e.resource(ref)
	if err != nil {
		return nil, err
	}
	return ri.Get(ctx, ref.Name, metav1.GetOptions{})
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

// writeErr turns a failed write into an outcome. A precondition the server enforced (409
// Conflict, 422 from a failed JSON-patch test or an immutable uid) is a refusal: the object was
// left untouched. A 429 is a PodDisruptionBudget (or similar) saying no: refused, not retried.
func writeErr(verb string, ref report.ObjectRef, err error) Outcome {
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

// poll calls cond every env.PollInterval until it returns true or env.VerifyTimeout passes.
func (e *Env) poll(ctx context.Context, cond func(ctx context.Context) (bool, error)) error {
	timeout, every := e.VerifyTimeout, e.PollInterval
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	if every <= 0 {
		every = 250 * time.Millisecond
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		done, err := cond(ctx)
		if done || err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(every):
		}
	}
}

// podGone waits until the pod with the UID is gone, replaced or (when terminatingOK) being
// deleted, and describes what it saw.
func (e *Env) podGone(ctx context.Context, ns, name string, uid types.UID, terminatingOK bool) (bool, string) {
	var msg string
	var gone bool
	err := e.poll(ctx, func(ctx context.Context) (bool, error) {
		p, err := e.Kube.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			gone, msg = true, "the pod is gone"
			return true, nil
		case err != nil:
			msg = "read pod: " + short(err)
			return false, nil
		case p.UID != uid:
			gone, msg = true, fmt.Sprintf("the pod is gone; a new pod with the same name replaced it (uid %s)", p.UID)
			return true, nil
		case terminatingOK && p.DeletionTimestamp != nil:
			gone, msg = true, fmt.Sprintf("the pod is terminating (deletionTimestamp %s)", p.DeletionTimestamp.UTC().Format(time.RFC3339))
			return true, nil
		}
		msg = "the pod still exists"
		if len(p.Finalizers) > 0 {
			msg += fmt.Sprintf(", held by finalizers [%s]", strings.Join(p.Finalizers, ", "))
		}
		return false, nil
	})
	if err != nil && !gone && msg == "" {
		msg = short(err)
	}
	return gone, msg
}
