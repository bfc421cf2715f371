package fix

import (
	"context"
	"fmt"
	"io"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/collect"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/scan"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// Clients are the API clients `fix` reads and writes with.
type Clients struct {
	collect.Clients
	// Mapper resolves an object's apiVersion and kind to its resource.
	Mapper meta.RESTMapper
}

// NewClients builds the clients from a REST config, with a RESTMapper filled lazily from discovery.
func NewClients(cfg *rest.Config) (Clients, error) {
	c, err := scan.Clients(cfg)
	if err != nil {
		return Clients{}, err
	}
	return Clients{Clients: c, Mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(c.Discovery))}, nil
}

// Options tune the engine.
type Options struct {
	// DryRun is none or server; --dry-run=client stops before the engine.
	DryRun DryRun
	// Registry holds the checks the re-checks run; Catalog the actions the steps name (nil is
	// NewCatalog()).
	Registry *checks.Registry
	Catalog  *Catalog
	// Settings are where the re-checks look for controllers (as in the scan).
	Settings snapshot.Settings
	// Rechecker re-runs checks; nil uses a real scan with Clients.
	Rechecker Rechecker
	// Audit, when set, receives one JSON line per action attempted.
	Audit io.Writer
	// OnStepStarted, when set, is called before step i (1-based) of n is re-checked.
	OnStepStarted func(i, n int, s *Step)
	// OnStepFinished, when set, is called with the result of step i of n once it is recorded.
	OnStepFinished func(i, n int, s *Step, r Result)
	// OnWarning, when set, is told what could not be recorded (an Event, an audit line, the
	// user); the run goes on.
	OnWarning func(msg string)
	// OnWaveStarted and OnWaveWaiting, when set, hear of the waves of the steps that take
	// serving pods away: a wave about to be applied, and a wave waiting for Ready pods.
	OnWaveStarted func(w WaveStarted)
	OnWaveWaiting func(w WaveWaiting)
	// OneWave applies at most one wave per workload and defers the rest (--wait=false, and the
	// auditor's cycles); server dry run always does.
	OneWave bool
	// WaitTimeout bounds, over the run, the wait for workloads to get their Ready pods back
	// between waves (default 5m); PollInterval is how often they are read meanwhile (default 2s).
	WaitTimeout  time.Duration
	PollInterval time.Duration
	// ActionTimeout bounds the re-check and the write of one action; VerifyTimeout the wait for its effect.
	ActionTimeout time.Duration
	VerifyTimeout time.Duration
	Now           func() time.Time
}

// Engine applies a plan's steps one at a time: re-check -> precondition -> write -> verify -> record.
type Engine struct {
	c    Clients
	o    Options
	env  *Env
	user string
	// rv holds the resourceVersion this run's own writes left on an object (by uid), so a second
	// step on the same object (two finalizers) is not refused for the first step's change. The
	// plan's steps keep the resourceVersions the plan saw.
	rv map[string]string
	// once holds, by the uid of the object an action's steps share (oncePerRun), the step that
	// had its one turn in this run.
	once map[string]*Step
}

// oncePerRun is an action of which a run applies at most one step per object: delete-pod deletes
// at most one pod of a StatefulSet, and leaves what follows to the StatefulSet's controller.
type oncePerRun interface {
	// oncePer is the object, or nil when the step shares none.
	oncePer(s *Step) *report.ObjectRef
}

// NewEngine returns an engine.
func NewEngine(c Clients, o Options) *Engine {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.ActionTimeout <= 0 {
		o.ActionTimeout = 2 * time.Minute
	}
	if o.VerifyTimeout <= 0 {
		o.VerifyTimeout = 10 * time.Second
	}
	if o.WaitTimeout <= 0 {
		o.WaitTimeout = 5 * time.Minute
	}
	if o.PollInterval <= 0 {
		o.PollInterval = 2 * time.Second
	}
	if o.Catalog == nil {
		o.Catalog = NewCatalog()
	}
	if o.Rechecker == nil {
		o.Rechecker = ScanRechecker{Clients: c.Clients, Settings: o.Settings}
	}
	if o.DryRun == "" || o.DryRun == DryRunClient {
		o.DryRun = DryRunNone
	}
	env := &Env{Kube: c.Kube, Metadata: c.Metadata, Mapper: c.Mapper, DryRun: o.DryRun, Now: o.Now, VerifyTimeout: o.VerifyTimeout}
	return &Engine{c: c, o: o, env: env, rv: map[string]string{}, once: map[string]*Step{}}
}

// Run applies the plan and returns one result per step, in plan order. Steps that take serving
// pods away run after the others, in waves within each workload's budget as the plan read it
// (waves.go); the rest run in plan order. An interrupt (ctx) stops before the next step or wave;
// the one under way is finished and recorded. The plan is not changed.
func (e *Engine) Run(ctx context.Context, plan *Plan) []Result {
	steps := plan.Steps
	results := make([]Result, len(steps))
	index := make(map[*Step]int, len(steps))
	for i, s := range steps {
		index[s] = i
	}
	put := func(s *Step, r Result, wrote bool) {
		// The record is left even when interrupted: the write, if any, already happened.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
		e.record(rctx, s, &r, wrote)
		cancel()
		results[index[s]] = r
		if e.o.OnStepFinished != nil {
			e.o.OnStepFinished(index[s]+1, len(steps), s, r)
		}
	}
	run := func(ctx context.Context, s *Step) Result {
		if e.o.OnStepStarted != nil {
			e.o.OnStepStarted(index[s]+1, len(steps), s)
		}
		r, wrote := e.apply(ctx, s)
		put(s, r, wrote)
		return r
	}
	groups := plan.Groups
	if !plan.budgeted {
		groups = e.unbudgeted(steps)
	}
	grouped := map[*Step]bool{}
	for _, g := range groups {
		for _, s := range g.Steps {
			grouped[s] = true
		}
	}
	for _, s := range steps {
		switch {
		case grouped[s]:
		case ctx.Err() != nil:
			// Interrupted: what is left is not attempted, and says so.
			r := Refuse([]*Step{s}, "not attempted: fix was interrupted ("+ctx.Err().Error()+")")[0]
			r.NotAttempted = true
			results[index[s]] = r
		default:
			run(ctx, s)
		}
	}
	// A wave, once started, is finished: Ctrl-C stops between waves.
	e.runWaves(ctx, groups, func(s *Step) Result { return run(context.WithoutCancel(ctx), s) },
		func(s *Step, r Result) { put(s, r, false) })
	return results
}

// unbudgeted fails the steps of a plan whose budgets were never read that would take serving
// pods away: nothing is evicted blind.
func (e *Engine) unbudgeted(steps []*Step) []*Group {
	var groups []*Group
	for _, s := range steps {
		if takesServingPod(e.o.Catalog, s) {
			groups = append(groups, &Group{Budget: Budget{Workload: s.Target}, Failure: "the plan was not prepared (fix.Prepare)", Steps: []*Step{s}})
		}
	}
	return groups
}

// User is the user the results are recorded under (after Run; "unknown" if it could not be read).
func (e *Engine) User() string { return e.user }

// apply runs one step and reports whether it wrote to the object.
func (e *Engine) apply(ctx context.Context, s *Step) (Result, bool) {
	r := newResult(s)
	ctx, cancel := context.WithTimeout(ctx, e.o.ActionTimeout)
	defer cancel()

	a, ok := e.o.Catalog.Lookup(s.Action)
	if !ok {
		r.Status, r.Reason = StatusRefused, fmt.Sprintf("unknown action %q", s.Action)
		return r, false
	}
	var once *report.ObjectRef
	if l, ok := a.(oncePerRun); ok {
		once = l.oncePer(s)
	}
	if first, taken := e.once[onceUID(once)]; taken {
		r.Status, r.Reason = e.laterRun(*once, first)
		return r, false
	}
	v, err := e.recheck(ctx, s)
	if err != nil {
		r.Status, r.Reason = StatusFailed, err.Error()
		return r, false
	}
	status, reason := judge(a, s, v, e.expectRV)
	if status != "" {
		if status == StatusAlreadyResolved {
			reason = e.describeGone(ctx, s, reason)
		}
		r.Status, r.Reason = status, reason
		return r, false
	}
	if rv, ok := e.rv[s.Target.UID]; ok && s.Target.UID != "" {
		// The action expects the object as this run's last write left it; the plan's step
		// keeps what the plan saw.
		now := *s
		now.Target.ResourceVersion = rv
		s = &now
	}
	o := a.Apply(ctx, e.env, s)
	if o.Wrote && o.Status == StatusApplied {
		vctx, vcancel := context.WithTimeout(context.WithoutCancel(ctx), e.o.VerifyTimeout+5*time.Second)
		a.Verify(vctx, e.env, s, &o)
		vcancel()
		if !o.Verified {
			o.Status = StatusFailed
			o.Reason += "; but the effect was not seen"
		}
	}
	if once != nil && (o.Status == StatusApplied || o.Status == StatusDryRun) {
		e.once[onceUID(once)] = s
	}
	if o.Wrote && o.ResourceVersionAfter != "" && s.Target.UID != "" {
		e.rv[s.Target.UID] = o.ResourceVersionAfter
	}
	if o.Object != nil {
		r.Object = *o.Object
	}
	r.Status, r.Reason = o.Status, o.Reason
	r.ResourceVersionBefore, r.ResourceVersionAfter = o.ResourceVersionBefore, o.ResourceVersionAfter
	r.Verified, r.Verification = o.Verified, o.Verification
	r.AnswerLost = o.AnswerLost
	return r, o.Wrote
}

// onceUID keys e.once: "" (never taken) for no object.
func onceUID(ref *report.ObjectRef) string {
	if ref == nil {
		return ""
	}
	return ref.UID
}

// laterRun is the result of a step on an object whose one turn in this run first had: it waits
// for a later run (dry run under server dry run, as a later wave).
func (e *Engine) laterRun(obj report.ObjectRef, first *Step) (Status, string) {
	reason := fmt.Sprintf("%s applies once per run to %s, and this run already applied it to %s; run fix again once its controller has acted on that",
		first.Action, obj, first.Target)
	if e.o.DryRun == DryRunServer {
		return StatusDryRun, reason
	}
	return StatusDeferred, reason
}

// expectRV is the resourceVersion a finding's object should have now.
func (e *Engine) expectRV(ref report.ObjectRef) string {
	if rv, ok := e.rv[ref.UID]; ok && ref.UID != "" {
		return rv
	}
	return ref.ResourceVersion
}

// recheck re-runs each of the step's checks once per namespace its findings are in.
func (e *Engine) recheck(ctx context.Context, s *Step) (*view, error) {
	type scope struct{ check, ns string }
	done := map[scope]bool{}
	var reports []*report.Report
	for _, f := range s.Findings {
		sc := scope{f.Check, f.Object.Namespace}
		if done[sc] {
			continue
		}
		done[sc] = true
		var c checks.Check
		if e.o.Registry != nil {
			c, _ = e.o.Registry.Get(f.Check)
		}
		if c == nil {
			return nil, fmt.Errorf("cannot re-check finding %s: check %q is unknown to this build", f.ID, f.Check)
		}
		rep, err := e.o.Rechecker.Recheck(ctx, c, sc.ns)
		if err != nil {
			return nil, fmt.Errorf("cannot re-check finding %s: %w", f.ID, err)
		}
		reports = append(reports, rep)
	}
	return newView(reports...), nil
}

// describeGone adds what became of the object to an already-resolved reason.
func (e *Engine) describeGone(ctx context.Context, s *Step, reason string) string {
	if len(s.Findings) != 1 {
		return reason
	}
	ref := s.Findings[0].Object
	obj, err := e.env.get(ctx, ref)
	switch {
	case apierrors.IsNotFound(err):
		return reason + ": " + ref.String() + " no longer exists"
	case err != nil:
		return reason
	case ref.UID != "" && string(obj.GetUID()) != ref.UID:
		return fmt.Sprintf("%s: %s was replaced (uid now %s)", reason, ref, obj.GetUID())
	}
	return reason
}
