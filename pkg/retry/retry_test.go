package retry

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
	"time"

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

// noSleep records the waits instead of sleeping.
func noSleep(waits *[]time.Duration) func(context.Context, time.Duration) bool {
	return func(_ context.Context, d time.Duration) bool {
		*waits = append(*waits, d)
		return true
	}
}

func TestTriesBackoffAndGiveUp(t *testing.T) {
	var waits []time.Duration
	tr := Policy{Attempts: 4, Base: 100 * time.Millisecond, Max: 300 * time.Millisecond}.Start()
	tr.sleep = noSleep(&waits)
	err := apierrors.NewInternalError(errors.New("boom"))
	for tr.Again(t.Context(), err) {
	}
	if len(waits) != 3 {
		t.Fatalf("%d waits, want 3 (4 attempts)", len(waits))
	}
	// Each wait lies between half and all of base*2^n, capped.
	for i, max := range []time.Duration{100, 200, 300} {
		max *= time.Millisecond
		if waits[i] < max/2 || waits[i] > max {
			t.Errorf("wait %d = %v, want within [%v, %v]", i, waits[i], max/2, max)
		}
	}
	var ex *ExhaustedError
	if got := tr.Err(err); !errors.As(got, &ex) || ex.Attempts != 4 || !apierrors.IsInternalError(got) {
		t.Errorf("Err = %v", got)
	}
}

func TestTriesHonourRetryAfter(t *testing.T) {
	var waits []time.Duration
	tr := Policy{}.Start()
	tr.sleep = noSleep(&waits)
	if !tr.Again(t.Context(), apierrors.NewTooManyRequests("busy", 2)) {
		t.Fatal("a 429 is not retried")
	}
	if len(waits) != 1 || waits[0] != 2*time.Second {
		t.Errorf("waits %v, want the server's 2s", waits)
	}
}

func TestTriesFinalAndBounded(t *testing.T) {
	var waits []time.Duration
	tr := Policy{}.Start()
	tr.sleep = noSleep(&waits)
	if tr.Again(t.Context(), apierrors.NewForbidden(pods, "", errors.New("rbac"))) {
		t.Error("forbidden is retried")
	}
	if got := tr.Err(errors.New("x")); got.Error() != "x" {
		t.Errorf("a read sent once gives up with %q, want the error alone", got)
	}
	// A wait that would end past the caller's deadline is not started.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
	defer cancel()
	if tr.Again(ctx, apierrors.NewTooManyRequests("busy", 5)) {
		t.Error("retried past the context's deadline")
	}
	// Nor one past the budget (--request-timeout).
	tr = Policy{Budget: time.Second}.Start()
	tr.sleep = noSleep(&waits)
	if tr.Again(t.Context(), apierrors.NewTooManyRequests("busy", 5)) {
		t.Error("retried past the budget")
	}
	if len(waits) != 0 {
		t.Errorf("waited %v for reads that were not retried", waits)
	}
}

func TestDoNoExtraCallOnSuccess(t *testing.T) {
	calls := 0
	err := Policy{Base: time.Millisecond}.Do(t.Context(), func(context.Context) error {
		calls++
		if calls < 3 {
			return io.ErrUnexpectedEOF
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Errorf("Do: err %v after %d calls, want nil after 3", err, calls)
	}
	calls = 0
	_ = Policy{}.Do(t.Context(), func(context.Context) error { calls++; return nil })
	if calls != 1 {
		t.Errorf("a read that succeeds is sent %d times", calls)
	}
}
