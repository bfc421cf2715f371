// Package retry is the one policy for retrying a read that failed: a bounded exponential backoff
// with jitter that honours the server's Retry-After, for the errors package fault says are
// transient.
package retry

import (
	"context"
	"math/rand/v2"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/fault"
)

// Policy bounds the retries of one read. The zero value is Default's.
type Policy struct {
	// Attempts is how many times a read is sent at most (default 5).
	Attempts int
	// Base is the first wait (default 250ms); each next one doubles, up to Max (default 4s). A
	// wait is drawn between half and all of that (jitter), or is the server's Retry-After when
	// longer.
	Base, Max time.Duration
	// Budget, when set, bounds one read with its retries: no wait starts that would end past it
	// (--request-timeout).
	Budget time.Duration
}

func (p Policy) withDefaults() Policy {
	if p.Attempts <= 0 {
		p.Attempts = 5
	}
	if p.Base <= 0 {
		p.Base = 250 * time.Millisecond
	}
	if p.Max <= 0 {
		p.Max = 4 * time.Second
	}
	return p
}

// Tries counts the failures of one read against its policy.
type Tries struct {
	p     Policy
	start time.Time
	n     int
	sleep func(context.Context, time.Duration) bool
}

// Start begins counting the tries of one read.
func (p Policy) Start() *Tries {
	return &Tries{p: p.withDefaults(), start: time.Now(), n: 1, sleep: sleepCtx}
}

// Again reports whether the read that just failed with err is to be sent again, and if so
// waits first. It is false when err is final, the attempts or the budget are spent, or ctx ends.
func (t *Tries) Again(ctx context.Context, err error) bool {
	if !fault.Transient(err) || t.n >= t.p.Attempts || ctx.Err() != nil {
		return false
	}
	wait := t.wait(err)
	if t.p.Budget > 0 && time.Since(t.start)+wait > t.p.Budget {
		return false
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
		return false
	}
	if !t.sleep(ctx, wait) {
		return false
	}
	t.n++
	return true
}

// Err is the error a read gives up with: err, saying how many times it was sent.
func (t *Tries) Err(err error) error {
	if err == nil || t.n <= 1 {
		return err
	}
	return &fault.ExhaustedError{Attempts: t.n, Err: err}
}

// wait is the pause before the next attempt: exponential with jitter, or the server's
// Retry-After when that is longer.
func (t *Tries) wait(err error) time.Duration {
	d := t.p.Base << (t.n - 1)
	if d <= 0 || d > t.p.Max {
		d = t.p.Max
	}
	d = d/2 + rand.N(d/2+1)
	if s, ok := apierrors.SuggestsClientDelay(err); ok && time.Duration(s)*time.Second > d {
		d = time.Duration(s) * time.Second
	}
	return d
}

// Do calls f until it succeeds or Again says stop, and returns the last error (see Err).
func (p Policy) Do(ctx context.Context, f func(context.Context) error) error {
	t := p.Start()
	for {
		err := f(ctx)
		if err == nil || !t.Again(ctx, err) {
			return t.Err(err)
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) bool {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-tm.C:
		return true
	}
}
