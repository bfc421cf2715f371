package cmd

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/fix"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/render"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/scan"
)

// Run plans, confirms, applies and reports.
func (o *FixOptions) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	// Ctrl-C stops before the next action; the one under way is still recorded. A second Ctrl-C
	// kills the process as usual.
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop()
	}()

	rep, err := o.findings(ctx)
	if err != nil {
		return &ExitError{Code: ExitFailure, Err: err}
	}
	// An offline report shows the cluster as it was at capture: its findings may be long gone,
	// and nothing in it was read from the cluster fix would change.
	if rep.Metadata.Source == report.SourceBundle {
		at := ""
		if rep.Metadata.CapturedAt != nil {
			at = " at " + rep.Metadata.CapturedAt.UTC().Format(time.RFC3339)
		}
		return &ExitError{Code: ExitRefused, Err: fmt.Errorf("report %s was made offline from a bundle captured%s; fix applies only what a scan of the live cluster finds: run fix (or scan -o json, then fix --from-report) against the cluster", o.FromReport, at)}
	}
	steps, results := fix.Select(o.cat, rep.Findings, fix.Selection{IDs: o.IDs, Check: o.Check, Action: o.Action})
	if o.FromReport != "" && len(steps) > 0 {
		if why := o.foreignReport(ctx, rep); why != "" {
			fmt.Fprintf(o.ErrOut, "Refusing %d action%s: %s.\n", len(steps), plural(len(steps)), why)
			results = append(results, fix.Refuse(steps, why)...)
			steps = nil
		}
	}

	// With -o json stdout carries only the results document; the plan goes to stderr.
	planOut := o.Out
	if o.Output == render.FormatJSON {
		planOut = o.ErrOut
	}
	render.FixPlan(planOut, steps, results)
	// The plan's budgets are read once the steps are shown; without a cluster, --dry-run=client
	// still shows the steps.
	var clients fix.Clients
	var plan *fix.Plan
	if len(steps) > 0 {
		c, err := o.clients()
		switch {
		case err == nil:
			clients = c
			plan = fix.Prepare(ctx, c, o.cat, steps, o.Action)
			render.FixWaves(planOut, plan.Groups)
		case o.dryRun != fix.DryRunClient:
			return &ExitError{Code: ExitFailure, Err: err}
		}
	}

	meta := fix.DocumentMeta{GeneratedAt: time.Now().UTC().Truncate(time.Second), Context: o.contextName(), DryRun: o.dryRun, Report: o.FromReport}
	switch {
	case len(steps) == 0:
	case o.dryRun == fix.DryRunClient:
		results = append(results, fix.PlannedResults(steps)...)
	default:
		audit, closeAudit, err := o.openAudit()
		if err != nil {
			return &ExitError{Code: ExitFailure, Err: err}
		}
		defer closeAudit()
		if ok, why := o.confirm(len(steps)); !ok {
			fmt.Fprintf(o.ErrOut, "Refusing to apply %d action%s: %s.\n", len(steps), plural(len(steps)), why)
			results = append(results, fix.Refuse(steps, "not confirmed: "+why)...)
			break
		}
		// The answer to the prompt may have taken minutes: the run goes by budgets read now,
		// and says what moved since the plan was shown.
		fresh := plan.Refresh(ctx, clients)
		render.FixPlanChanged(o.ErrOut, plan.Changes(fresh))
		applied, user := o.apply(ctx, clients, fresh, audit)
		meta.User = user
		results = append(results, applied...)
		if ctx.Err() != nil {
			s := fix.Summarize(applied)
			fmt.Fprintf(o.ErrOut, "Interrupted: %d applied, %d already resolved, %d refused, %d failed, %d deferred or not attempted; the results say which.\n",
				s.Applied, s.AlreadyResolved, s.Refused-notAttempted(applied), s.Failed, s.Deferred+notAttempted(applied))
		}
	}
	if err := o.print(meta, results); err != nil {
		return &ExitError{Code: ExitFailure, Err: err}
	}
	if !fix.AllOK(results) {
		s := fix.Summarize(results)
		return &ExitError{Code: ExitRefused, Err: fmt.Errorf("%d of %d action%s refused, %d failed, %d deferred", s.Refused, s.Total, plural(s.Total), s.Failed, s.Deferred)}
	}
	return nil
}

// findings reads the saved report or scans.
func (o *FixOptions) findings(ctx context.Context) (*report.Report, error) {
	if o.FromReport == "" {
		return runScan(ctx, o.config, o.opts, o.ErrOut)
	}
	rep, fleet, err := report.ReadDocument(o.FromReport, o.In)
	if err != nil {
		return nil, err
	}
	if fleet != nil {
		// --context picks both the fleet's findings and the cluster they are applied to.
		if o.config.Context == nil || *o.config.Context == "" {
			var names []string
			for _, c := range fleet.Clusters {
				names = append(names, c.Context)
			}
			return nil, fmt.Errorf("report %s is a FleetReport of contexts %s: name the one to fix with --context", o.FromReport, strings.Join(names, ", "))
		}
		if rep, err = fleet.ContextReport(*o.config.Context); err != nil {
			return nil, fmt.Errorf("report %s: %w", o.FromReport, err)
		}
	}
	known := map[string]bool{}
	for _, f := range rep.Findings {
		known[f.ID] = true
	}
	for _, id := range o.IDs {
		if !known[id] {
			return nil, fmt.Errorf("finding %s is not in report %s", id, o.FromReport)
		}
	}
	return rep, nil
}

// foreignReport says why the saved report's findings must not be applied to the current
// cluster: it was made on another one (by the kube-system namespace's UID, whatever the contexts
// are called), or either identity is unknown. Empty means the report is this cluster's. With
// --dry-run=client nothing is written, so a cluster that cannot be asked only earns a warning.
func (o *FixOptions) foreignReport(ctx context.Context, rep *report.Report) string {
	if rep.Metadata.ClusterID == "" {
		return fmt.Sprintf("report %s carries no clusterID (made without read access to namespace %s, or by an older version), so nothing proves it is this cluster's; run fix without --from-report to scan this cluster afresh",
			o.FromReport, scan.ClusterIDNamespace)
	}
	cur, err := o.clusterID(ctx)
	if err != nil {
		if o.dryRun == fix.DryRunClient {
			fmt.Fprintf(o.ErrOut, "warning: %v; cannot tell whether report %s is this cluster's\n", err, o.FromReport)
			return ""
		}
		return fmt.Sprintf("cannot tell whether report %s is this cluster's: %v", o.FromReport, err)
	}
	if cur != rep.Metadata.ClusterID {
		return fmt.Sprintf("report %s was made on cluster %s (context %q), but context %q is cluster %s",
			o.FromReport, rep.Metadata.ClusterID, rep.Metadata.Context, o.contextName(), cur)
	}
	return ""
}

// clusterID reads the current cluster's identity.
func (o *FixOptions) clusterID(ctx context.Context) (string, error) {
	c, err := o.clients()
	if err != nil {
		return "", err
	}
	return scan.ClusterID(ctx, c.Kube)
}

// confirm asks on a terminal; without one, only --yes confirms. Server dry run writes nothing
// and needs no confirmation.
func (o *FixOptions) confirm(n int) (bool, string) {
	if o.Yes || o.dryRun == fix.DryRunServer {
		return true, ""
	}
	if !o.stdinIsTerminal() {
		return false, "stdin is not a terminal and --yes was not given (add --yes to apply from a script, or --dry-run=server to preview)"
	}
	fmt.Fprintf(o.ErrOut, "Apply %d action%s? [y/N]: ", n, plural(n))
	ok, err := readYes(o.In)
	if err != nil {
		return false, "could not read the answer: " + err.Error()
	}
	if !ok {
		return false, "the answer was not yes"
	}
	return true, ""
}

// readYes reads one line and reports whether it says yes.
func readYes(in io.Reader) (bool, error) {
	line, err := bufio.NewReader(in).ReadString('\n')
	if err != nil && line == "" {
		return false, err
	}
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true, nil
	}
	return false, nil
}

// openAudit opens --audit-file for appending, before anything is asked or written, so a bad path
// fails first.
func (o *FixOptions) openAudit() (io.Writer, func(), error) {
	if o.AuditFile == "" {
		return nil, func() {}, nil
	}
	f, err := os.OpenFile(o.AuditFile, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("open audit file: %w", err)
	}
	return f, func() {
		if err := f.Close(); err != nil {
			fmt.Fprintf(o.ErrOut, "warning: close audit file: %v\n", err)
		}
	}, nil
}

// clients builds the API clients of the plan's budget reads and of the engine.
func (o *FixOptions) clients() (fix.Clients, error) {
	cfg, err := o.config.ToRESTConfig()
	if err != nil {
		return fix.Clients{}, fmt.Errorf("read kubeconfig: %w", err)
	}
	return fix.NewClients(cfg)
}

// apply runs the engine; progress goes to stderr.
func (o *FixOptions) apply(ctx context.Context, clients fix.Clients, plan *fix.Plan, audit io.Writer) ([]fix.Result, string) {
	opts := fix.Options{DryRun: o.dryRun, Registry: o.reg, Catalog: o.cat, Settings: o.settings, Audit: audit,
		OneWave: !o.Wait, WaitTimeout: o.Timeout,
		OnStepStarted: func(i, n int, s *fix.Step) { render.FixStepStarted(o.ErrOut, i, n, s) },
		OnStepFinished: func(i, n int, s *fix.Step, r fix.Result) {
			render.FixStepFinished(o.ErrOut, i, n, s, r)
		},
		OnWaveStarted: func(w fix.WaveStarted) { render.FixWaveStarted(o.ErrOut, w) },
		OnWaveWaiting: func(w fix.WaveWaiting) { render.FixWaveWaiting(o.ErrOut, w) },
		OnWarning:     func(msg string) { fmt.Fprintf(o.ErrOut, "warning: %s\n", msg) },
	}
	e := fix.NewEngine(clients, opts)
	results := e.Run(ctx, plan)
	return results, e.User()
}

// notAttempted counts the refusals an interrupt caused.
func notAttempted(rs []fix.Result) int {
	n := 0
	for _, r := range rs {
		if r.Status == fix.StatusRefused && r.NotAttempted {
			n++
		}
	}
	return n
}

func (o *FixOptions) print(meta fix.DocumentMeta, results []fix.Result) error {
	if o.Output == render.FormatJSON {
		return render.JSON(o.Out, fix.NewDocument(meta, results))
	}
	if len(results) == 0 {
		return nil
	}
	fmt.Fprintln(o.Out)
	return render.FixResults(o.Out, results)
}
