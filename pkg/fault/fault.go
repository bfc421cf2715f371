// Package fault classifies the errors between the tool and the apiserver: which are transient
// (worth another try), which are final, which only state a limit of what could be read, and which
// leave a write's outcome unknown. The retry policy, the collector and the fixes all ask it, so
// an error means the same to each.
package fault

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// Transient reports whether a read that failed with err may succeed when sent again: a 5xx or
// 429 answer, a connection reset, refused (an apiserver restarting) or lost, a body cut short, a
// timeout. Forbidden, Unauthorized, NotFound, BadRequest, Invalid, Conflict and Gone are final,
// and so is the cancellation of the caller's context.
func Transient(err error) bool {
	var spent *ExhaustedError
	if err == nil || errors.Is(err, context.Canceled) || errors.As(err, &spent) {
		return false // an exhausted read is not retried again by an outer loop
	}
	if ConversionFailed(err) {
		return false // a conversion webhook that is down stays down a while, like an aggregated API
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		code := status.Status().Code
		return code == http.StatusTooManyRequests || code >= 500 && code != http.StatusNotImplemented ||
			apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err)
	}
	return connectionLost(err) || errors.Is(err, context.DeadlineExceeded)
}

// ConversionFailed reports whether the apiserver answered that a CRD's conversion webhook failed
// (a 500 whose message quotes the apiextensions-apiserver's `conversion webhook for ... failed`,
// webhook_converter.go, Convert): the objects of that resource cannot be read at the version
// asked until the webhook answers, which the checks diagnose.
func ConversionFailed(err error) bool {
	var status apierrors.APIStatus
	return errors.As(err, &status) && status.Status().Code >= 500 &&
		strings.Contains(status.Status().Message, "conversion webhook for ")
}

// connectionLost reports whether err says the connection broke before a whole answer arrived.
func connectionLost(err error) bool {
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		utilnet.IsConnectionReset(err) || utilnet.IsConnectionRefused(err) || utilnet.IsProbableEOF(err) ||
		utilnet.IsHTTP2ConnectionLost(err) || utilnet.IsTimeout(err)
}

// OutcomeUnknown reports whether a write that failed with err may nevertheless have been
// applied: the connection broke or timed out after the request may have been sent, or the
// server (or a proxy in front of it) answered 5xx. Such a write is read back, never re-sent
// blind. A 429 is a refusal (priority and fairness, or a PodDisruptionBudget): nothing applied.
func OutcomeUnknown(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		code := status.Status().Code
		return code >= 500 || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err)
	}
	return connectionLost(err) || errors.Is(err, context.DeadlineExceeded)
}

// Limit reports whether err only states a limit of what could be read rather than a failure to
// look: every error it joins is an RBAC denial (403, 401) or was made by LimitError (an
// aggregated API that is down, which the checks diagnose). The report states a limit and the
// exit code leaves it alone.
func Limit(err error) bool {
	if err == nil {
		return false
	}
	if m, ok := err.(interface{ Unwrap() []error }); ok {
		errs := m.Unwrap()
		for _, e := range errs {
			if !Limit(e) {
				return false
			}
		}
		return len(errs) > 0
	}
	var d *limitError
	return errors.As(err, &d) || apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err)
}

type limitError struct{ msg string }

func (e *limitError) Error() string { return e.msg }

// LimitError is an error with the message msg that Limit recognizes, for limits summarized from
// several answers.
func LimitError(msg string) error { return &limitError{msg: msg} }

// Join joins errors into one whose message is theirs separated by "; " and that errors.Is, As
// and Limit see through. Nil errors are dropped; Join of none is nil.
func Join(errs ...error) error {
	var out joined
	for _, e := range errs {
		if e != nil {
			out = append(out, e)
		}
	}
	switch len(out) {
	case 0:
		return nil
	case 1:
		return out[0]
	}
	return out
}

type joined []error

func (j joined) Error() string {
	s := ""
	for i, e := range j {
		if i > 0 {
			s += "; "
		}
		s += e.Error()
	}
	return s
}

func (j joined) Unwrap() []error { return j }

// ExhaustedError is a read that still failed after Attempts tries.
type ExhaustedError struct {
	Attempts int
	Err      error
}

func (e *ExhaustedError) Error() string {
	return fmt.Sprintf("%v (tried %d times)", e.Err, e.Attempts)
}

func (e *ExhaustedError) Unwrap() error { return e.Err }
