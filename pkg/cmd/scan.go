package cmd

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/bundle"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/render"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/scan"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// scanFlags are the flags `scan` and `fix` share to decide what to scan.
type scanFlags struct {
	AllNamespaces    bool
	LabelSelector    string
	Checks           []string
	SkipChecks       []string
	MinAge           string
	KruiseNamespace  string
	KruiseDeployment string
}

func (f *scanFlags) addFlags(fs *pflag.FlagSet) {
	fs.BoolVarP(&f.AllNamespaces, "all-namespaces", "A", false, "Scan every namespace (and cluster-scoped objects) instead of the current one.")
	fs.StringVarP(&f.LabelSelector, "selector", "l", "", "Only objects matching this label selector (pods, workloads, namespaces, objects being deleted; e.g. -l app=web). A workload whose pods the selector may cut is not judged, and coverage says so.")
	f.addCheckFlags(fs)
}

// addCheckFlags adds the flags that choose the checks and where they look, without the scope
// flags (`why` takes its scope from the object).
func (f *scanFlags) addCheckFlags(fs *pflag.FlagSet) {
	def := snapshot.DefaultSettings()
	fs.StringSliceVar(&f.Checks, "checks", nil, "Run only these checks (comma-separated IDs, as listed by kubectl workloaddoctor checks).")
	fs.StringSliceVar(&f.SkipChecks, "skip-checks", nil, "Do not run these checks (comma-separated IDs).")
	fs.StringVar(&f.MinAge, "min-age", "", "Report a condition once it lasted this long, overriding every check's own threshold (e.g. 0s, 2m).")
	fs.StringVar(&f.KruiseNamespace, "kruise-namespace", def.KruiseNamespace, "Namespace of the OpenKruise manager Deployment.")
	fs.StringVar(&f.KruiseDeployment, "kruise-deployment", def.KruiseDeployment, "Name of the OpenKruise manager Deployment (found by image when absent).")
}

// options resolves the flags into scan options, the scope from the kubeconfig's namespace.
func (f *scanFlags) options(config *genericclioptions.ConfigFlags, reg *checks.Registry) (scan.Options, error) {
	loader := config.ToRawKubeConfigLoader()
	ns, _, err := loader.Namespace()
	if err != nil {
		return scan.Options{}, fmt.Errorf("read kubeconfig: %w", err)
	}
	ctxName := ""
	if config.Context != nil && *config.Context != "" {
		ctxName = *config.Context
	} else if raw, err := loader.RawConfig(); err == nil {
		ctxName = raw.CurrentContext
	}
	return f.resolve(reg, snapshot.Scope{Namespace: ns, AllNamespaces: f.AllNamespaces, LabelSelector: f.LabelSelector}, ctxName)
}

// resolve turns the flags into scan options of the given scope and context name.
func (f *scanFlags) resolve(reg *checks.Registry, scope snapshot.Scope, ctxName string) (scan.Options, error) {
	selected, err := reg.Select(f.Checks, f.SkipChecks)
	if err != nil {
		return scan.Options{}, err
	}
	minAge := time.Duration(-1)
	if f.MinAge != "" {
		d, err := time.ParseDuration(f.MinAge)
		if err != nil || d < 0 {
			return scan.Options{}, fmt.Errorf("invalid --min-age %q: want a non-negative duration such as 0s, 90s or 10m", f.MinAge)
		}
		minAge = d
	}
	clock, err := localClock()
	if err != nil {
		return scan.Options{}, err
	}
	if scope.AllNamespaces {
		scope.Namespace = ""
	}
	return scan.Options{
		Scope:    scope,
		Settings: snapshot.Settings{KruiseNamespace: f.KruiseNamespace, KruiseDeployment: f.KruiseDeployment},
		Checks:   selected,
		MinAge:   minAge,
		Context:  ctxName,
		Clock:    clock,
	}, nil
}

// ScanOptions holds `scan`'s flags and streams.
type ScanOptions struct {
	config *genericclioptions.ConfigFlags
	reg    *checks.Registry
	genericiooptions.IOStreams
	scanFlags
	reportFlags
	exemptionFlags
	fleetFlags
	bundleFlags

	opts   scan.Options
	bundle *bundle.Bundle
}

// reportFlags are how `scan` and `why` print and exit.
type reportFlags struct {
	Output  string
	FailOn  string
	NoColor bool
}

func (f *reportFlags) addFlags(fs *pflag.FlagSet, formats []string) {
	fs.StringVarP(&f.Output, "output", "o", formats[0], "Output format: "+strings.Join(formats, "|")+".")
	fs.StringVar(&f.FailOn, "fail-on", string(report.SeverityError), "Exit 2 when a finding is at or above this severity: error|warning|info|never.")
	fs.BoolVar(&f.NoColor, "no-color", false, "Never colour the output (also: the NO_COLOR environment variable).")
}

// validate checks the output format and --fail-on.
func (f *reportFlags) validate(formats []string) error {
	if !contains(formats, f.Output) {
		return fmt.Errorf("invalid --output %q: want one of %s", f.Output, strings.Join(formats, ", "))
	}
	_, err := failOnSeverity(f.FailOn)
	return err
}

func newScanCommand(config *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams, reg *checks.Registry) *cobra.Command {
	o := &ScanOptions{config: config, reg: reg, IOStreams: streams}
	cmd := &cobra.Command{
		Use:   "scan",
		Short: "Find stuck workloads and explain why they are stuck",
		Long: `Reads the cluster once, runs every check on what it read, and prints the findings: each stuck
object with its root cause, the evidence read from the cluster, and the fixes that may resolve it.

Transient faults between the tool and the apiserver (5xx, 429, a reset connection, a body cut
short, a timeout) are retried with backoff, within --request-timeout when it is set.

Exit codes: 0 the scan read every input its checks detect from and found nothing at or above
--fail-on; 1 the scan could not run, or an input checks detect from (pods, workloads, nodes,
objects being deleted, leases) stayed unreadable after the retries, or no check could run: the
report is still printed, its coverage naming what was not read, whatever it found; 2 findings at
or above --fail-on. Unreadable evidence (events, controller logs) only marks checks degraded, and
RBAC limits on part of the scope are stated in coverage; neither changes the exit code. Findings
go to stdout, progress and warnings to stderr.

Exemptions: a finding the team accepted is held back by the annotations workloaddoctor.io/ignore
(check or root-cause IDs, or *), workloaddoctor.io/ignore-reason (required) and
workloaddoctor.io/ignore-until (RFC 3339, optional) on the object, its controlling owner or its
namespace, or by a rule of the --exemptions file. It is listed under suppressed (-o json) with who
held it back and why, and counts for neither the summary nor the exit code. An annotation without
a reason, or an exemption past its until, holds nothing back and is a warning.

-o junit writes one test suite per check and one test case per object (findings fail, suppressed
ones are skipped, a check that could not read its inputs errs); -o sarif writes SARIF 2.1.0 with a
rule per root cause and the finding ID as fingerprint, suppressed findings left out.

Every report names its cluster: metadata.clusterID is the UID of the kube-system namespace, which
fix --from-report compares with the cluster it is about to change.

Many clusters: --contexts (names, globs such as prod-*, exclusions such as !prod-legacy) or
--all-contexts scans each kubeconfig context with clients of its own, --parallel at a time, each
within --context-timeout, and prints one FleetReport (kind: FleetReport, a row per context with
its server, clusterID, status scanned|unreachable|forbidden|error, server version, duration,
coverage, summary and exit code, and every finding with its context); tables group findings by
context. A fleet scan exits 1 when any context was not scanned (or could not look), else 2 when a
context has findings at or above --fail-on, else 0.`,
		Example: `  # The current namespace, as a table
  kubectl workloaddoctor scan

  # Every namespace, with evidence
  kubectl workloaddoctor scan -A -o wide

  # A JSON report for scripts; exit 2 on warnings too
  kubectl workloaddoctor scan -A -o json --fail-on warning > report.json

  # Only stuck deletions, reported as soon as they are seen
  kubectl workloaddoctor scan -n shop --checks stuck-terminating --min-age 0s

  # In CI: accepted findings held back by a rules file, results for the CI's test and code-scanning pages
  kubectl workloaddoctor scan -A --exemptions exemptions.yaml -o junit > workloaddoctor.xml
  kubectl workloaddoctor scan -A --exemptions exemptions.yaml -o sarif > workloaddoctor.sarif

  # Accept one finding on the object itself (or its owner, or its namespace), with a reason and an expiry
  kubectl annotate ns legacy workloaddoctor.io/ignore=stuck-terminating \
    workloaddoctor.io/ignore-reason="vendor clears it, ticket OPS-7" workloaddoctor.io/ignore-until=2026-12-31T00:00:00Z

  # Every production context but one, six at a time, as one FleetReport
  kubectl workloaddoctor scan -A --contexts 'prod-*,!prod-legacy' --parallel 6 -o json > fleet.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.FromBundle != "" {
				err := o.completeBundle(cmd)
				// An archive is unpacked to a temporary directory: removed however the scan ends.
				defer func() {
					if err := o.bundle.Close(); err != nil {
						fmt.Fprintf(o.ErrOut, "warning: %v\n", err)
					}
				}()
				if err != nil {
					return &ExitError{Code: ExitFailure, Err: err}
				}
			} else if err := o.Complete(); err != nil {
				return &ExitError{Code: ExitFailure, Err: err}
			}
			if err := o.Validate(); err != nil {
				return &ExitError{Code: ExitFailure, Err: err}
			}
			if err := o.fleetFlags.validate(cmd); err != nil {
				return &ExitError{Code: ExitFailure, Err: err}
			}
			return o.Run(cmd.Context())
		},
	}
	o.scanFlags.addFlags(cmd.Flags())
	o.reportFlags.addFlags(cmd.Flags(), render.ReportFormats)
	o.exemptionFlags.addFlags(cmd.Flags())
	o.fleetFlags.addFlags(cmd.Flags())
	o.bundleFlags.addFlags(cmd.Flags())
	registerCompletions(cmd, reg)
	return cmd
}

// Complete resolves the flags.
func (o *ScanOptions) Complete() error {
	opts, err := o.scanFlags.options(o.config, o.reg)
	if err != nil {
		return err
	}
	if opts.Exemptions, err = o.exemptionFlags.policy(o.reg); err != nil {
		return err
	}
	o.opts = opts
	return nil
}

// completeBundle resolves the flags of a scan of a bundle: its plan, narrowed by the flags.
func (o *ScanOptions) completeBundle(cmd *cobra.Command) error {
	if err := refuseConnectionFlags(cmd); err != nil {
		return err
	}
	b, err := openBundle(o.FromBundle, o.ErrOut)
	if err != nil {
		return err
	}
	o.bundle = b // closed by the caller, whatever follows
	opts, err := offlineOptions(cmd, namespaceFlag(o.config), &o.scanFlags, o.reg, b)
	if err != nil {
		return err
	}
	if opts.Exemptions, err = o.exemptionFlags.policy(o.reg); err != nil {
		return err
	}
	o.opts = opts
	return nil
}

// Validate checks the flag values: before any cluster is read, so a fleet scan asked for a format
// it cannot write fails at once.
func (o *ScanOptions) Validate() error {
	if o.fleetFlags.enabled() {
		if err := o.reportFlags.validate(render.FleetFormats); err != nil {
			return fmt.Errorf("--contexts and --all-contexts print a FleetReport: %w", err)
		}
	}
	return o.reportFlags.validate(render.ReportFormats)
}

// Run scans and prints the report.
func (o *ScanOptions) Run(ctx context.Context) error {
	if o.fleetFlags.enabled() {
		return o.runFleet(ctx)
	}
	var r *report.Report
	var err error
	if o.bundle != nil {
		var snap *snapshot.Snapshot
		if r, snap, err = scanBundle(ctx, o.bundle, o.opts); err == nil {
			scanWarnings(o.ErrOut, r, snap.ClockOffset)
		}
	} else {
		r, err = runScan(ctx, o.config, o.opts, o.ErrOut)
	}
	if err != nil {
		return &ExitError{Code: ExitFailure, Err: err}
	}
	if err := render.Report(o.Out, r, o.Output, colorEnabled(o.Out, o.NoColor)); err != nil {
		return &ExitError{Code: ExitFailure, Err: err}
	}
	sev, _ := failOnSeverity(o.FailOn)
	return scanExit(r, sev, "the report above")
}

// scanExit is the exit of a scan that produced r (`scan`, `audit --once`): 1 when it could not
// look, 2 with findings at or above failOn (empty: never), else 0.
// where names the output that details the coverage.
func scanExit(r *report.Report, failOn report.Severity, where string) error {
	// A scan that did not look cannot say "healthy", whatever it found.
	if !r.Coverage.Looked() {
		return &ExitError{Code: ExitFailure, Err: fmt.Errorf("incomplete scan: %s; %s says what was not checked", r.Coverage.Blindness(), where)}
	}
	if failOn != "" && r.AtOrAbove(failOn) > 0 {
		return &ExitError{Code: ExitFindings}
	}
	return nil
}

func runScan(ctx context.Context, config *genericclioptions.ConfigFlags, opts scan.Options, errOut io.Writer) (*report.Report, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	cfg, err := config.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("read kubeconfig: %w", err)
	}
	return runScanConfig(ctx, cfg, opts, errOut)
}

// runScanConfig scans the cluster cfg points at, with clients of its own.
func runScanConfig(ctx context.Context, cfg *rest.Config, opts scan.Options, errOut io.Writer) (*report.Report, error) {
	clients, err := scan.Clients(cfg)
	if err != nil {
		return nil, err
	}
	r, snap, err := scan.Run(ctx, clients, opts)
	if err != nil {
		return nil, fmt.Errorf("cannot reach the cluster at %s: %w", cfg.Host, err)
	}
	// Without an identity, fix --from-report cannot tell which cluster the report is of, and
	// refuses it; the scan itself is as good.
	if r.Metadata.ClusterID, err = scan.ClusterID(ctx, clients.Kube); err != nil {
		fmt.Fprintf(errOut, "warning: %v; the report carries no clusterID, so fix --from-report will refuse it\n", err)
	}
	scanWarnings(errOut, r, snap.ClockOffset)
	return r, nil
}

// scanWarnings writes what a user should know about a finished scan: the clock, and the checks
// skipped or degraded.
func scanWarnings(errOut io.Writer, r *report.Report, clockOffset time.Duration) {
	if w := clockWarning(clockOffset); w != "" {
		fmt.Fprintln(errOut, w)
	}
	// When inputs were unread, the one error line says so instead (see Run).
	for _, n := range r.Coverage.Skipped {
		if r.Coverage.Looked() {
			fmt.Fprintf(errOut, "warning: check %s skipped: %s\n", n.Check, n.Reason)
		}
	}
	for _, n := range r.Coverage.Degraded {
		fmt.Fprintf(errOut, "warning: check %s degraded: %s\n", n.Check, n.Reason)
	}
	printWarnings(errOut, r)
}

// clockWarning says when the local clock is far enough from the apiserver's that a user reading
// ages, or comparing them with `kubectl get`'s, should know which clock they are on.
func clockWarning(offset time.Duration) string {
	if offset.Abs() < 30*time.Second {
		return ""
	}
	way := "ahead of"
	if offset > 0 {
		way = "behind"
	}
	return fmt.Sprintf("warning: this machine's clock is %s %s the apiserver's; ages are measured on the apiserver's clock",
		offset.Abs().Round(time.Second), way)
}

// failOnSeverity parses --fail-on; "never" returns the empty severity.
func failOnSeverity(s string) (report.Severity, error) {
	switch s {
	case "never":
		return "", nil
	case string(report.SeverityError), string(report.SeverityWarning), string(report.SeverityInfo):
		return report.Severity(s), nil
	}
	return "", fmt.Errorf("invalid --fail-on %q: want error, warning, info or never", s)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// registerCompletions completes check IDs for --checks and --skip-checks.
func registerCompletions(cmd *cobra.Command, reg *checks.Registry) {
	complete := func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return reg.IDs(), cobra.ShellCompDirectiveNoFileComp
	}
	for _, name := range []string{"checks", "skip-checks", "check"} {
		if cmd.Flags().Lookup(name) != nil {
			_ = cmd.RegisterFlagCompletionFunc(name, complete)
		}
	}
}
