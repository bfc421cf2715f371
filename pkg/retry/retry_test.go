package retry

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/fault"
)

var pods = schema.GroupResource{Resource: "pods"}

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
	var ex *fault.ExhaustedError
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
