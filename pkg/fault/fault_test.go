package fault

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"syscall"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var pods = schema.GroupResource{Resource: "pods"}

// urlErr is how client-go returns a transport failure.
func urlErr(err error) error {
	return &url.Error{Op: "Get", URL: "https://127.0.0.1:6443/api/v1/pods", Err: err}
}

func TestClassify(t *testing.T) {
	reset := urlErr(&net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)})
	refused := urlErr(&net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)})
	cases := []struct {
		name                     string
		err                      error
		transient, unknown, deny bool
	}{
		{"nil", nil, false, false, false},
		{"500", apierrors.NewInternalError(errors.New("etcd leader changed")), true, true, false},
		{"503", apierrors.NewServiceUnavailable("shutting down"), true, true, false},
		{"504 timeout", apierrors.NewTimeoutError("slow", 1), true, true, false},
		{"server timeout", apierrors.NewServerTimeout(pods, "list", 2), true, true, false},
		{"429", apierrors.NewTooManyRequests("slow down", 1), true, false, false},
		{"501", apierrors.NewGenericServerResponse(501, "GET", pods, "", "no", 0, false), false, true, false},
		{"connection reset", reset, true, true, false},
		{"connection refused", refused, true, true, false},
		{"EOF", urlErr(io.EOF), true, true, false},
		{"body cut short", fmt.Errorf("decode pod list: %w", io.ErrUnexpectedEOF), true, true, false},
		{"client timeout", urlErr(context.DeadlineExceeded), true, true, false},
		{"forbidden", apierrors.NewForbidden(pods, "", errors.New("rbac")), false, false, true},
		{"unauthorized", apierrors.NewUnauthorized("who"), false, false, true},
		{"not found", apierrors.NewNotFound(pods, "web-0"), false, false, false},
		{"bad request", apierrors.NewBadRequest("field selector"), false, false, false},
		{"invalid", apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "web-0", nil), false, false, false},
		{"conflict", apierrors.NewConflict(pods, "web-0", errors.New("rv")), false, false, false},
		{"expired", apierrors.NewResourceExpired("continue token too old"), false, false, false},
		{"canceled", fmt.Errorf("list: %w", context.Canceled), false, false, false},
		{"decode error", errors.New("protobuf field of 9 bytes exceeds its message"), false, false, false},
		{"exhausted", &ExhaustedError{Attempts: 5, Err: apierrors.NewInternalError(errors.New("x"))}, false, true, false},
		{"wrapped forbidden", fmt.Errorf("list pods: %w", apierrors.NewForbidden(pods, "", errors.New("rbac"))), false, false, true},
		{"denial summary", LimitError("forbidden: list secrets"), false, false, true},
		{"joined denials", Join(LimitError("a"), apierrors.NewForbidden(pods, "", errors.New("b"))), false, false, true},
		{"denial joined with a failure", Join(LimitError("a"), apierrors.NewInternalError(errors.New("b"))), true, true, false},
		// A CRD's conversion webhook that cannot be called (webhook_converter.go, Convert): it
		// stays down a while, so the read is not sent again; a write's outcome is still unknown.
		{"conversion webhook failed", fmt.Errorf("list example.com/gadgets: %w", apierrors.NewInternalError(errors.New(
			`conversion webhook for example.com/v1beta1, Kind=Gadget failed: Post "https://c.gadgets.svc:443/convert": service "c" not found`))), false, true, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Transient(c.err); got != c.transient {
				t.Errorf("Transient = %v, want %v", got, c.transient)
			}
			if got := OutcomeUnknown(c.err); got != c.unknown {
				t.Errorf("OutcomeUnknown = %v, want %v", got, c.unknown)
			}
			if got := Limit(c.err); got != c.deny {
				t.Errorf("Limit = %v, want %v", got, c.deny)
			}
		})
	}
}

func TestJoinMessage(t *testing.T) {
	if Join() != nil || Join(nil, nil) != nil {
		t.Error("Join of no error is not nil")
	}
	one := errors.New("one")
	if Join(nil, one) != one {
		t.Error("Join of one error is not that error")
	}
	if got := Join(one, errors.New("two")).Error(); got != "one; two" {
		t.Errorf("message %q", got)
	}
}
