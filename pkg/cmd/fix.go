package cmd

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/fix"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/render"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/scan"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// FixFormats are the formats `fix -o` accepts.
var FixFormats = []string{render.FormatTable, render.FormatJSON}

// scopeFlags are the scan flags that decide what is scanned; a saved report already decided.
var scopeFlags = []string{"all-namespaces", "selector", "checks", "skip-checks", "min-age"}

// FixOptions holds `fix`'s flags and streams.
type FixOptions struct {
	config *genericclioptions.ConfigFlags
	reg    *checks.Registry
	cat    *fix.Catalog
	genericiooptions.IOStreams
	scanFlags
	IDs        []string
	Check      string
	Action     string
	FromReport string
	DryRun     string
	Yes        bool
	AuditFile  string
	Output     string

	dryRun   fix.DryRun
	opts     scan.Options
	settings snapshot.Settings
	changed  func(name string) bool
	// stdinIsTerminal reports whether a person can answer the prompt.
	stdinIsTerminal func() bool
}

func newFixCommand(config *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams, reg *checks.Registry, cat *fix.Catalog) *cobra.Command {
	o := &FixOptions{config: config, reg: reg, cat: cat, IOStreams: streams}
	cmd := &cobra.Command{
		Use:   "fix [FINDING_ID ...]",
		Short: "Apply the fixes that findings propose, safely",
		Long: `Applies the fix actions that findings propose. The findings come from a fresh scan (same flags
as scan) or from a saved report (--from-report, the output of scan -o json). Select findings by ID,
by --check, or take every finding that carries a fix; each finding's first action is the default
and --action picks another.

fix prints the plan (each action, the object, what changes and its risk) and asks for
confirmation on a terminal; without a terminal it refuses unless --yes is given. Then, for each
action, it re-reads the object and re-runs the finding's check: a finding that is no longer true
is reported "already-resolved" and nothing is written; an object that changed since the plan
is refused. Every write carries a precondition the API server enforces (a JSON-patch test of the
finalizer and resourceVersion, a uid precondition), is verified afterwards, and is recorded as an
Event (reason WorkloadDoctorFix) on the object and, with --audit-file, as one JSON line.

--dry-run=client prints the plan only; --dry-run=server sends every write with API dry-run and
reports what the server said.

Exit codes: 0 every action applied, already resolved or dry run (or nothing to fix); 1 usage error or the tool
could not run (cluster unreachable, bad report file); 3 at least one action was refused (object
changed, not confirmed, PodDisruptionBudget) or failed.`,
		Example: `  # Preview the fixes for the current namespace, then apply them after a prompt
  kubectl workloaddoctor fix --dry-run=client
  kubectl workloaddoctor fix

  # A runbook: save a report, then fix two of its findings without a prompt, with an audit trail
  kubectl workloaddoctor scan -A -o json > report.json
  kubectl workloaddoctor fix --from-report report.json wd-3f9a1c07be wd-9c1d2e3f4a --yes --audit-file fix.log

  # Ask the API server whether the writes would pass, without writing
  kubectl workloaddoctor fix -n shop --check stuck-terminating --dry-run=server -o json

  # Use a finding's second action instead of its default
  kubectl workloaddoctor fix wd-3f9a1c07be --action force-delete`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Complete(cmd, args); err != nil {
				return &ExitError{Code: ExitFailure, Err: err}
			}
			if err := o.Validate(); err != nil {
				return &ExitError{Code: ExitFailure, Err: err}
			}
			return o.Run(cmd.Context())
		},
	}
	o.scanFlags.addFlags(cmd.Flags())
	fs := cmd.Flags()
	fs.StringVar(&o.Check, "check", "", "Only fix findings of this check.")
	fs.StringVar(&o.Action, "action", "", "Apply this action instead of each finding's default (its first fix): "+strings.Join(actionIDs(cat), ", ")+".")
	fs.StringVar(&o.FromReport, "from-report", "", "Take the findings from a saved report (scan -o json; - reads stdin) instead of scanning.")
	fs.StringVar(&o.DryRun, "dry-run", string(fix.DryRunNone), "none: apply; client: only print the plan; server: send every write with API dry-run.")
	fs.BoolVarP(&o.Yes, "yes", "y", false, "Apply without asking (required when stdin is not a terminal).")
	fs.StringVar(&o.AuditFile, "audit-file", "", "Append one JSON line per action attempted (time, user, action, object, resourceVersions, result).")
	fs.StringVarP(&o.Output, "output", "o", render.FormatTable, "Output format of the results: "+strings.Join(FixFormats, "|")+".")
	registerCompletions(cmd, reg)
	_ = cmd.RegisterFlagCompletionFunc("action", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return actionIDs(cat), cobra.ShellCompDirectiveNoFileComp
	})
	_ = cmd.RegisterFlagCompletionFunc("dry-run", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{string(fix.DryRunNone), string(fix.DryRunClient), string(fix.DryRunServer)}, cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

func actionIDs(cat *fix.Catalog) []string {
	var ids []string
	for _, d := range cat.Docs() {
		ids = append(ids, d.ID)
	}
	sort.Strings(ids)
	return ids
}

// Complete resolves the flags and arguments.
func (o *FixOptions) Complete(cmd *cobra.Command, args []string) error {
	o.IDs = args
	o.changed = func(name string) bool {
		f := cmd.Flags().Lookup(name)
		return f != nil && f.Changed
	}
	if o.stdinIsTerminal == nil {
		o.stdinIsTerminal = func() bool {
			f, ok := o.In.(*os.File)
			return ok && term.IsTerminal(int(f.Fd()))
		}
	}
	d, err := fix.ParseDryRun(o.DryRun)
	if err != nil {
		return err
	}
	o.dryRun = d
	o.settings = snapshot.Settings{KruiseNamespace: o.KruiseNamespace, KruiseDeployment: o.KruiseDeployment}
	if o.FromReport != "" {
		return nil
	}
	// --check alone scans just that check.
	if o.Check != "" && len(o.Checks) == 0 {
		o.Checks = []string{o.Check}
	}
	opts, err := o.scanFlags.options(o.config, o.reg)
	if err != nil {
		return err
	}
	o.opts = opts
	return nil
}

// Validate checks the flag values.
func (o *FixOptions) Validate() error {
	if !contains(FixFormats, o.Output) {
		return fmt.Errorf("invalid --output %q: want one of %s", o.Output, strings.Join(FixFormats, ", "))
	}
	if o.Check != "" {
		if _, ok := o.reg.Get(o.Check); !ok {
			return fmt.Errorf("unknown check %q (known: %s)", o.Check, strings.Join(o.reg.IDs(), ", "))
		}
		if o.FromReport == "" && (!contains(o.Checks, o.Check) || contains(o.SkipChecks, o.Check)) {
			return fmt.Errorf("--check %s is not among the checks this scan runs (--checks/--skip-checks)", o.Check)
		}
	}
	if o.Action != "" {
		if _, ok := o.cat.Lookup(o.Action); !ok {
			return fmt.Errorf("unknown action %q (known: %s)", o.Action, strings.Join(actionIDs(o.cat), ", "))
		}
	}
	if o.FromReport != "" {
		var bad []string
		for _, name := range scopeFlags {
			if o.changed(name) {
				bad = append(bad, "--"+name)
			}
		}
		if o.config.Namespace != nil && *o.config.Namespace != "" {
			bad = append(bad, "--namespace")
		}
		if len(bad) > 0 {
			return fmt.Errorf("%s cannot be used with --from-report: the report decides which objects are fixed (select with finding IDs, --check or --action)", strings.Join(bad, ", "))
		}
		if o.FromReport == "-" && !o.Yes && o.dryRun == fix.DryRunNone {
			return fmt.Errorf("--from-report - reads the report from stdin, so nobody can answer the prompt there: add --yes or a --dry-run")
		}
	}
	for _, id := range o.IDs {
		if !strings.HasPrefix(id, "wd-") {
			return fmt.Errorf("%q is not a finding ID (they look like wd-3f9a1c07be; see scan -o wide)", id)
		}
	}
	return nil
}

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
	steps, results := fix.Plan(o.cat, rep.Findings, fix.Selection{IDs: o.IDs, Check: o.Check, Action: o.Action})

	// With -o json stdout carries only the results document; the plan goes to stderr.
	planOut := o.Out
	if o.Output == render.FormatJSON {
		planOut = o.ErrOut
	}
	render.FixPlan(planOut, steps, results)

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
		applied, user, err := o.apply(ctx, steps, audit)
		if err != nil {
			return &ExitError{Code: ExitFailure, Err: err}
		}
		meta.User = user
		results = append(results, applied...)
	}
	if err := o.print(meta, results); err != nil {
		return &ExitError{Code: ExitFailure, Err: err}
	}
	if !fix.AllOK(results) {
		s := fix.Summarize(results)
		return &ExitError{Code: ExitRefused, Err: fmt.Errorf("%d of %d action%s refused, %d failed", s.Refused, s.Total, plural(s.Total), s.Failed)}
	}
	return nil
}

// findings reads the saved report or scans.
func (o *FixOptions) findings(ctx context.Context) (*report.Report, error) {
	if o.FromReport == "" {
		return runScan(ctx, o.config, o.opts, o.ErrOut)
	}
	rep, err := report.Read(o.FromReport, o.In)
	if err != nil {
		return nil, err
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
	if cur := o.contextName(); rep.Metadata.Context != "" && cur != "" && rep.Metadata.Context != cur {
		fmt.Fprintf(o.ErrOut, "warning: report %s was made in context %q, the current context is %q; objects are matched by uid, so findings of another cluster are reported as already resolved\n",
			o.FromReport, rep.Metadata.Context, cur)
	}
	return rep, nil
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

// apply runs the engine.
func (o *FixOptions) apply(ctx context.Context, steps []*fix.Step, audit io.Writer) ([]fix.Result, string, error) {
	cfg, err := o.config.ToRESTConfig()
	if err != nil {
		return nil, "", fmt.Errorf("read kubeconfig: %w", err)
	}
	clients, err := fix.NewClients(cfg)
	if err != nil {
		return nil, "", err
	}
	opts := fix.Options{DryRun: o.dryRun, Registry: o.reg, Catalog: o.cat, Settings: o.settings, Audit: audit,
		OnStepStarted: func(i, n int, s *fix.Step) { render.FixStepStarted(o.ErrOut, i, n, s) },
		OnStepFinished: func(i, n int, s *fix.Step, r fix.Result) {
			render.FixStepFinished(o.ErrOut, i, n, s, r)
		},
		OnWarning: func(msg string) { fmt.Fprintf(o.ErrOut, "warning: %s\n", msg) },
	}
	e := fix.NewEngine(clients, opts)
	results := e.Run(ctx, steps)
	return results, e.User(), nil
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

// contextName is the kubeconfig context in use.
func (o *FixOptions) contextName() string {
	if o.config.Context != nil && *o.config.Context != "" {
		return *o.config.Context
	}
	if raw, err := o.config.ToRawKubeConfigLoader().RawConfig(); err == nil {
		return raw.CurrentContext
	}
	return ""
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
