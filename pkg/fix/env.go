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
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/retry"
)

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

// get reads the metadata of an object of any resource, riding out transient faults.
func (e *Env) get(ctx context.Context, ref report.ObjectRef) (*metav1.PartialObjectMetadata, error) {
	ri, err := e.resource(ref)
	if err != nil {
		return nil, err
	}
	return getRetried(ctx, ri, ref.Name)
}

// getRetried reads an object's metadata, retrying transient faults (pkg/retry); reads are safe to
// send again, writes never are (lost.go).
func getRetried(ctx context.Context, ri metadata.ResourceInterface, name string) (*metav1.PartialObjectMetadata, error) {
	var obj *metav1.PartialObjectMetadata
	err := retry.Policy{}.Do(ctx, func(ctx context.Context) error {
		var err error
		obj, err = ri.Get(ctx, name, metav1.GetOptions{})
		return err
	})
	return obj, err
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

// readPinned re-reads the object a step writes, through the RESTMapper, and checks it is still the
// object the plan saw (unchanged too, when checkRV). A non-nil outcome is the result to report.
func (e *Env) readPinned(ctx context.Context, ref report.ObjectRef, checkRV bool) (metadata.ResourceInterface, *metav1.PartialObjectMetadata, *Outcome) {
	ri, err := e.resource(ref)
	if err != nil {
		o := failed("%v", err)
		return nil, nil, &o
	}
	obj, err := getRetried(ctx, ri, ref.Name)
	if err != nil {
		o := readErr(ref, err)
		return nil, nil, &o
	}
	if o := sameObject(obj, ref, checkRV); o != nil {
		o.ResourceVersionBefore = obj.GetResourceVersion()
		return nil, nil, o
	}
	return ri, obj, nil
}
