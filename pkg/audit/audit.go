// Package audit is the auditor: it runs the scan in a loop and publishes what the last good scan
// found as Prometheus metrics (and, later in the cycle, as reports). It knows nothing of flags;
// pkg/cmd's `audit` builds its Options.
package audit

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"sync/atomic"
	"time"

	"k8s.io/client-go/rest"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/exempt"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/fix"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/scan"
)

// Scanner runs one scan. The auditor's is scan.Run on the clients it built (see ScanWith): the same
// collector and checks as `scan`.
type Scanner func(ctx context.Context) (*report.Report, error)

// ScanWith returns the Scanner that runs pkg/scan with cfg and opts, and the counter of the
// requests its cycles send (for the cycle's log line).
func ScanWith(cfg *rest.Config, opts scan.Options) (Scanner, *atomic.Int64, error) {
	var requests atomic.Int64
	cfg = rest.CopyConfig(cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			requests.Add(1)
			return rt.RoundTrip(req)
		})
	})
	clients, err := scan.Clients(cfg)
	if err != nil {
		return nil, nil, err
	}
	return func(ctx context.Context) (*report.Report, error) {
		r, _, err := scan.Run(ctx, clients, opts)
		if err != nil {
			return nil, fmt.Errorf("cannot reach the cluster at %s: %w", cfg.Host, err)
		}
		return r, nil
	}, &requests, nil
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Options configure the auditor.
type Options struct {
	Scan     Scanner
	Interval time.Duration
	// Requests, when set, counts the requests scans send; each cycle logs its own share.
	Requests *atomic.Int64
	Metrics  *Metrics
	// Reports, when set, is synced after every cycle that looked, never after a failed one.
	Reports Publisher
	// Fixer, when set, applies fixes after a good cycle, on the leader only.
	Fixer Fixer
	// Leading, when set, says whether this replica may write (leader election); unset, it may.
	Leading func() bool
	Log     *slog.Logger
	// Clock is the local clock (nil: time.Now).
	Clock func() time.Time
}

// Publisher writes a good cycle's findings somewhere outside the process (the policy reports).
type Publisher interface {
	Sync(ctx context.Context, r *report.Report) (applied, deleted int, err error)
}

// Cycle is what one scan cycle produced.
type Cycle struct {
	Report   *report.Report
	Err      error
	Started  time.Time
	Finished time.Time
	Duration time.Duration
	Requests int64
	// Applied and Deleted count the reports written; PublishErr is why they could not be.
	Applied, Deleted int
	PublishErr       error
	// Leader says whether this replica was allowed to write in this cycle.
	Leader bool
	// FixesApplied and FixesFailed count the fixes applied in this cycle and those whose write
	// failed.
	FixesApplied, FixesFailed int
}

// Failed says whether the cycle must not replace the last good outputs: the scan failed, or it
// could not read an input checks detect from (report.Coverage.Looked), so what it did not find
// proves nothing.
func (c Cycle) Failed() bool {
	return c.Err != nil || c.Report == nil || !c.Report.Coverage.Looked()
}

// Auditor runs scan cycles and keeps the outputs of the last good one.
type Auditor struct {
	opts  Options
	ready atomic.Bool
	// errors counts failed cycles, for the log line.
	errors atomic.Int64
}

// New returns an auditor; Options.Scan and Options.Metrics are required.
func New(opts Options) (*Auditor, error) {
	if opts.Scan == nil || opts.Metrics == nil {
		return nil, fmt.Errorf("audit: a scanner and metrics are required")
	}
	if opts.Interval <= 0 {
		return nil, fmt.Errorf("audit: the interval must be positive, got %s", opts.Interval)
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	return &Auditor{opts: opts}, nil
}

func (a *Auditor) leading() bool { return a.opts.Leading == nil || a.opts.Leading() }

// Ready says whether a cycle completed: from then on the metrics describe the cluster.
func (a *Auditor) Ready() bool { return a.ready.Load() }

// Run runs a cycle at once and then every interval until ctx ends. A failed cycle is counted and
// logged, and the next interval tries again; Run returns only when ctx ends.
func (a *Auditor) Run(ctx context.Context) error {
	ticker := time.NewTicker(a.opts.Interval)
	defer ticker.Stop()
	for {
		a.RunCycle(ctx)
		// A tick that came during the cycle and the end of ctx are both ready here, and select
		// picks at random: look at ctx first so that no cycle starts after it ended.
		if ctx.Err() != nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
	}
}

// RunCycle scans once, publishes the result unless the cycle failed, and logs one line.
func (a *Auditor) RunCycle(ctx context.Context) Cycle {
	var before int64
	if a.opts.Requests != nil {
		before = a.opts.Requests.Load()
	}
	c := Cycle{Started: a.opts.Clock()}
	c.Report, c.Err = a.opts.Scan(ctx)
	c.Finished = a.opts.Clock()
	c.Duration = c.Finished.Sub(c.Started)
	if a.opts.Requests != nil {
		c.Requests = a.opts.Requests.Load() - before
	}
	c.Leader = a.leading()
	if !c.Failed() && a.opts.Reports != nil && c.Leader {
		c.Applied, c.Deleted, c.PublishErr = a.opts.Reports.Sync(ctx, c.Report)
	}
	if !c.Failed() && a.opts.Fixer != nil && c.Leader {
		for _, r := range a.opts.Fixer.Fix(ctx, c.Report) {
			switch r.Status {
			case fix.StatusApplied:
				c.FixesApplied++
			case fix.StatusFailed:
				c.FixesFailed++
			}
		}
	}
	releaseMemory()
	// Metrics last: a scrape that sees the cycle counted sees its reports written too.
	a.opts.Metrics.observe(c)
	if c.Failed() {
		a.errors.Add(1)
	} else {
		a.ready.Store(true)
	}
	a.log(c)
	return c
}

// releaseMemory collects the cycle's garbage and returns the free memory to the OS. A scan's
// snapshot is garbage once its report exists; without this the process would hold its peak
// (hundreds of MiB at 100k pods) through the whole interval. It costs one collection of what
// stays live between cycles (clients and metrics: a few MiB).
func releaseMemory() { debug.FreeOSMemory() }

// log writes the cycle's one line: what it found, how long it took, what it cost the apiserver,
// and what it could not cover.
func (a *Auditor) log(c Cycle) {
	attrs := []any{
		slog.Duration("duration", c.Duration.Round(time.Millisecond)),
		slog.Int64("requests", c.Requests),
		slog.Int64("failedCycles", a.errors.Load()),
		slog.Bool("leader", c.Leader),
	}
	switch {
	case c.Err != nil:
		a.opts.Log.Error("scan failed; keeping the last good outputs", append(attrs, slog.String("error", c.Err.Error()))...)
	case c.Failed():
		a.opts.Log.Error("scan incomplete; keeping the last good outputs", append(attrs,
			slog.Int("findings", len(c.Report.Findings)), slog.String("coverage", c.Report.Coverage.Blindness()))...)
	default:
		cov := "complete"
		if !c.Report.Coverage.Complete {
			cov = coverageGaps(c.Report.Coverage)
		}
		attrs = append(attrs, slog.Int("findings", len(c.Report.Findings)),
			slog.Int("errors", c.Report.Summary.Error), slog.Int("warnings", c.Report.Summary.Warning),
			slog.Int("suppressed", len(c.Report.Suppressed)), slog.String("coverage", cov))
		// Exemptions that expired or cannot be honoured: their findings are back in this cycle.
		// Owners not read are a standing limit, not a change: info, not a warning.
		for _, w := range c.Report.Warnings {
			level := slog.LevelWarn
			if w.Reason == exempt.WarnUnread {
				level = slog.LevelInfo
			}
			a.opts.Log.Log(context.Background(), level, w.Message, slog.String("reason", w.Reason))
		}
		if a.opts.Reports != nil && c.Leader {
			attrs = append(attrs, slog.Int("reportsApplied", c.Applied), slog.Int("reportsDeleted", c.Deleted))
		}
		if a.opts.Fixer != nil && c.Leader {
			attrs = append(attrs, slog.Int("fixesApplied", c.FixesApplied), slog.Int("fixesFailed", c.FixesFailed))
		}
		if c.PublishErr != nil {
			a.opts.Log.Error("scan; reports not all written", append(attrs, slog.String("error", c.PublishErr.Error()))...)
			return
		}
		a.opts.Log.Info("scan", attrs...)
	}
}

// coverageGaps names the checks a scan skipped or degraded.
func coverageGaps(cov report.Coverage) string {
	s := ""
	for _, n := range cov.Skipped {
		s += fmt.Sprintf("%s skipped: %s; ", n.Check, n.Reason)
	}
	for _, n := range cov.Degraded {
		s += fmt.Sprintf("%s degraded: %s; ", n.Check, n.Reason)
	}
	if len(s) > 2 {
		s = s[:len(s)-2]
	}
	return s
}
