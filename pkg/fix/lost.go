package fix

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/fault"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/retry"
)

// A write whose answer was lost (the connection dropped, a timeout, a 5xx after the request was
// sent) may or may not have been applied. It is never reported as failed or applied on faith, and
// never sent again blind: the object is read back and the outcome says what it shows. A guarded
// write (a JSON patch with test ops, a delete with a UID precondition) that the read-back shows
// did not apply is sent once more; its guard makes that safe.

// landing is what a read-back shows of a write whose answer was lost.
type landing int

const (
	// landed: the change is there, or the object is gone as the write meant.
	landed landing = iota
	// notLanded: the change is not there and the object is as the write expected it.
	notLanded
	// moved: the change is not there and the object changed or was replaced since.
	moved
)

// readBack reads the object a write was sent to: what it shows, the resourceVersion read ("" when
// the object is gone) and a description.
type readBack func(ctx context.Context) (l landing, rv, what string, err error)

// readBackTimeout bounds the read-back (and the one re-send) of a write whose answer was lost.
const readBackTimeout = 30 * time.Second

// settle turns a write that failed with err into its outcome: a plain failure (WriteFailure) when
// the server answered, else what the read-back shows. resend, when set, sends the guarded write
// again. rvBefore is the object's resourceVersion the write was sent against.
func settle(ctx context.Context, env *Env, verb string, ref report.ObjectRef, rvBefore string, err error, rb readBack, resend func(context.Context) error) Outcome {
	if !fault.OutcomeUnknown(err) || env.DryRun == DryRunServer {
		o := WriteFailure(verb, ref, err)
		o.ResourceVersionBefore = rvBefore
		return o
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), readBackTimeout)
	defer cancel()
	lost := fmt.Sprintf("the answer to the %s was lost (%s)", verb, short(err))
	for sent := 1; ; sent++ {
		var (
			l       landing
			rv, got string
		)
		rerr := retry.Policy{}.Do(ctx, func(ctx context.Context) error {
			var err error
			l, rv, got, err = rb(ctx)
			return err
		})
		o := Outcome{AnswerLost: true, ResourceVersionBefore: rvBefore}
		switch {
		case rerr != nil:
			o.Status, o.Reason = StatusFailed, fmt.Sprintf("%s and %s could not be read back (%s): whether it was applied is unknown", lost, ref, short(rerr))
		case l == landed:
			o.Status, o.Wrote, o.ResourceVersionAfter = StatusApplied, true, rv
			o.Reason = fmt.Sprintf("%s; read back: %s", lost, got)
		case l == notLanded && resend != nil && sent == 1:
			werr := resend(ctx)
			if werr == nil || fault.OutcomeUnknown(werr) {
				lost += fmt.Sprintf("; read back: %s; sent once more", got)
				continue // read back again; never a third send
			}
			o = WriteFailure(verb, ref, werr)
			o.AnswerLost, o.ResourceVersionBefore = true, rvBefore
			o.Reason = fmt.Sprintf("%s; read back: %s; sent once more: %s", lost, got, o.Reason)
		case l == notLanded:
			o.Status, o.Reason = StatusFailed, fmt.Sprintf("%s; read back: %s; not sent again", lost, got)
		default:
			o.Status, o.Reason = StatusRefused, fmt.Sprintf("%s; read back: %s; not sent again", lost, got)
		}
		return o
	}
}

// readMeta reads back the metadata of the object a write was sent to; nil when it is gone.
func readMeta(ctx context.Context, env *Env, ref report.ObjectRef) (*metav1.PartialObjectMetadata, error) {
	obj, err := env.get(ctx, ref)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return obj, err
}
