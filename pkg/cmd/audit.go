package cmd

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/audit"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/fix"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/scan"
)

// AuditOptions holds `audit`'s flags and streams.
type AuditOptions struct {
	config *genericclioptions.ConfigFlags
	reg    *checks.Registry
	genericiooptions.IOStreams
	scanFlags
	exemptionFlags
	Interval           time.Duration
	Once               bool
	FailOn             string
	MetricsBindAddress string
	HealthBindAddress  string
	Reports            string
	LeaderElect        bool
	LeaderNamespace    string
	LeaseDuration      time.Duration
	AutoFix            []string
	MaxFixes           int

	opts scan.Options
}

func newAuditCommand(config *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams, reg *checks.Registry) *cobra.Command {
	o := &AuditOptions{config: config, reg: reg, IOStreams: streams}
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Scan in a loop and publish the findings as Prometheus metrics and policy reports",
		Long: `Runs the same scan as scan (same flags, collector and checks) every --interval, in the cluster
or anywhere with a kubeconfig, and publishes what the last good scan found as Prometheus metrics
on --metrics-bind-address at /metrics: workloaddoctor_findings and
workloaddoctor_finding_age_seconds per finding, scan duration, scans by result, the time of the
last success and whether coverage was complete. /healthz and /readyz are served on
--health-probe-bind-address; /readyz answers 200 once a scan completed.

After each good cycle it writes policy reports (--reports): one report named workloaddoctor
per namespace with findings and one cluster-scoped report, as openreports.io/v1alpha1 Report and
ClusterReport or wgpolicyk8s.io/v1alpha2 PolicyReport and ClusterPolicyReport, with server-side
apply under the field manager workloaddoctor; a report whose findings are gone is deleted. Each
finding is one result: policy the check, rule the root cause, fail/high for errors, warn/medium
for warnings, warn/low for info. Report CRDs for clusters without them: deploy/crds/.

With --leader-elect replicas campaign for the Lease workloaddoctor in
--leader-election-namespace; only the holder writes reports (workloaddoctor_leader 1), every
replica scans and serves its own metrics. A replica that loses the Lease (cut off from the
apiserver longer than the lease) stops writing, keeps running and campaigns again; one stopped
with SIGTERM releases the Lease so that a standby takes over at once.

--auto-fix ROOT_CAUSE,... lets the writing replica apply, after a good cycle, the default fix of
the findings with those root causes, through the same engine as fix (re-read and re-check right
before the write, preconditions, verification, the WorkloadDoctorFix Event): at most
--max-fixes-per-cycle actions per cycle, one wave per workload, never an action of risk high.
Each result is counted in workloaddoctor_fixes_total{action,result} and logged.

A cycle that fails (the apiserver unreachable, an input checks detect from unreadable after the
retries, no check able to run) keeps the findings of the last good cycle, counts
workloaddoctor_scans_total{result="error"}, sets workloaddoctor_coverage_complete to 0, writes no
report and is retried next interval: a scan that did not look never makes findings disappear.
Each cycle writes one JSON log line on stderr (findings, duration, requests sent, coverage,
reports written).

Exemptions (the workloaddoctor.io/ignore annotations, --exemptions FILE, read once at start: mount
it from a ConfigMap and restart to change it) hold accepted findings back as in scan: they are
skip results in the policy reports, counted in workloaddoctor_suppressed_findings and not in
workloaddoctor_findings. An exemption that expires or cannot be honoured is logged as a warning
every cycle, and its findings are back in that cycle.

--once runs one cycle and exits with scan's exit codes: 0 nothing at or above --fail-on, 1 the
scan could not run or could not look, 2 findings at or above --fail-on.`,
		Example: `  # Every namespace, every 5 minutes, metrics on :8080 and probes on :8081
  kubectl workloaddoctor audit -A

  # One cycle, as a CronJob or a CI step would run it
  kubectl workloaddoctor audit -A --once --fail-on warning

  # Accepted findings from a mounted rules file only, annotations not honoured
  kubectl workloaddoctor audit -A --exemptions /etc/workloaddoctor/exemptions.yaml --disallow-annotation-exemptions`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Complete(); err != nil {
				return &ExitError{Code: ExitFailure, Err: err}
			}
			return o.Run(cmd.Context())
		},
	}
	o.scanFlags.addFlags(cmd.Flags())
	o.exemptionFlags.addFlags(cmd.Flags())
	cmd.Flags().DurationVar(&o.Interval, "interval", 5*time.Minute, "Time between the starts of two scans.")
	cmd.Flags().BoolVar(&o.Once, "once", false, "Run one cycle and exit with scan's exit codes; serves nothing.")
	cmd.Flags().StringVar(&o.FailOn, "fail-on", "error", "With --once: exit 2 when a finding is at or above this severity: error|warning|info|never.")
	cmd.Flags().StringVar(&o.MetricsBindAddress, "metrics-bind-address", ":8080", "Address /metrics is served on (port 0 picks a free one; the log says which).")
	cmd.Flags().StringVar(&o.HealthBindAddress, "health-probe-bind-address", ":8081", "Address /healthz and /readyz are served on.")
	cmd.Flags().StringVar(&o.Reports, "reports", "auto", "Policy reports to write: "+strings.Join(audit.ReportModes, "|")+"; auto picks openreports.io/v1alpha1, else wgpolicyk8s.io/v1alpha2, else none.")
	cmd.Flags().BoolVar(&o.LeaderElect, "leader-elect", false, "Campaign for a Lease; only the replica holding it writes reports and applies fixes (every replica serves metrics).")
	cmd.Flags().StringVar(&o.LeaderNamespace, "leader-election-namespace", "", "Namespace of the Lease (default: the kubeconfig's namespace, in a pod its own).")
	cmd.Flags().DurationVar(&o.LeaseDuration, "leader-election-lease-duration", 15*time.Second, "How long a leader that stopped renewing keeps the Lease; a standby takes over after it.")
	cmd.Flags().StringSliceVar(&o.AutoFix, "auto-fix", nil, "Root causes whose default fix the auditor applies on its own (comma-separated IDs, as listed by kubectl workloaddoctor checks); never a high-risk action.")
	cmd.Flags().IntVar(&o.MaxFixes, "max-fixes-per-cycle", 5, "With --auto-fix: at most this many fix actions per cycle; the rest wait for the next.")
	registerCompletions(cmd, reg)
	return cmd
}

// Complete resolves and validates the flags.
func (o *AuditOptions) Complete() error {
	if o.Interval <= 0 {
		return fmt.Errorf("invalid --interval %s: want a positive duration such as 30s or 5m", o.Interval)
	}
	if _, err := failOnSeverity(o.FailOn); err != nil {
		return err
	}
	if !contains(audit.ReportModes, o.Reports) {
		return fmt.Errorf("invalid --reports %q: want one of %s", o.Reports, strings.Join(audit.ReportModes, ", "))
	}
	if err := o.validateAutoFix(); err != nil {
		return err
	}
	if o.LeaderElect && o.Once {
		return fmt.Errorf("--leader-elect is for the loop; --once runs one cycle and writes")
	}
	opts, err := o.scanFlags.options(o.config, o.reg)
	if err != nil {
		return err
	}
	if opts.Exemptions, err = o.exemptionFlags.policy(o.reg); err != nil {
		return err
	}
	o.opts = opts
	if o.LeaderElect && o.LeaderNamespace == "" {
		ns, _, err := o.config.ToRawKubeConfigLoader().Namespace()
		if err != nil {
			return fmt.Errorf("read kubeconfig: %w", err)
		}
		o.LeaderNamespace = ns
	}
	return nil
}

// Run audits until SIGINT or SIGTERM, or runs one cycle with --once.
func (o *AuditOptions) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, err := o.config.ToRESTConfig()
	if err != nil {
		return &ExitError{Code: ExitFailure, Err: fmt.Errorf("read kubeconfig: %w", err)}
	}
	scanner, requests, err := audit.ScanWith(cfg, o.opts)
	if err != nil {
		return &ExitError{Code: ExitFailure, Err: err}
	}
	log := slog.New(slog.NewJSONHandler(o.ErrOut, nil))
	reports, err := o.reportWriter(cfg, log)
	if err != nil {
		return &ExitError{Code: ExitFailure, Err: err}
	}
	metrics := audit.NewMetrics()
	aopts := audit.Options{Scan: scanner, Interval: o.Interval, Requests: requests,
		Metrics: metrics, Reports: reports, Log: log, Clock: o.opts.Clock}
	if len(o.AutoFix) > 0 {
		if aopts.Fixer, err = o.autoFixer(cfg, metrics, log); err != nil {
			return &ExitError{Code: ExitFailure, Err: err}
		}
	}
	var election *audit.Election
	if o.LeaderElect {
		if election, err = o.election(cfg, log, metrics.SetLeader); err != nil {
			return &ExitError{Code: ExitFailure, Err: err}
		}
		aopts.Leading = election.Leading
	} else {
		metrics.SetLeader(true)
	}
	a, err := audit.New(aopts)
	if err != nil {
		return &ExitError{Code: ExitFailure, Err: err}
	}
	if o.Once {
		c := a.RunCycle(ctx)
		switch {
		case c.Err != nil:
			return &ExitError{Code: ExitFailure, Err: c.Err}
		case c.PublishErr != nil:
			return &ExitError{Code: ExitFailure, Err: fmt.Errorf("reports not all written: %w", c.PublishErr)}
		case c.FixesFailed > 0:
			return &ExitError{Code: ExitFailure, Err: fmt.Errorf("%d fixes failed; the log line above names them", c.FixesFailed)}
		}
		sev, _ := failOnSeverity(o.FailOn)
		return scanExit(c.Report, sev, "the log line above")
	}
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(auditGCPercent)
	}
	return o.serve(ctx, a, election, log)
}

// auditGCPercent is the loop's heap growth between collections, below scan's 50: an auditor is
// sized by its memory limit and idles between cycles, so it trades CPU for a lower peak. At 100k
// pods it kept the peak RSS under 300 MiB (bench/RESULTS-audit-100k.md). GOGC, when set, decides.
const auditGCPercent = 25

// validateAutoFix checks --auto-fix names root causes of the registered checks.
func (o *AuditOptions) validateAutoFix() error {
	if o.MaxFixes < 1 {
		return fmt.Errorf("invalid --max-fixes-per-cycle %d: want 1 or more", o.MaxFixes)
	}
	known := map[string]bool{}
	for _, c := range o.reg.All() {
		for _, rc := range c.Info().RootCauses {
			known[rc.ID] = true
		}
	}
	for _, id := range o.AutoFix {
		if !known[id] {
			return fmt.Errorf("invalid --auto-fix %q: not a root cause of any check (see `kubectl workloaddoctor checks`)", id)
		}
	}
	return nil
}

// autoFixer returns the fixer of the --auto-fix root causes, through fix's engine.
func (o *AuditOptions) autoFixer(cfg *rest.Config, metrics *audit.Metrics, log *slog.Logger) (*audit.AutoFixer, error) {
	clients, err := fix.NewClients(cfg)
	if err != nil {
		return nil, err
	}
	named := map[string]bool{}
	for _, id := range o.AutoFix {
		named[id] = true
	}
	return &audit.AutoFixer{RootCauses: named, Max: o.MaxFixes, Clients: clients, Registry: o.reg,
		Catalog: fix.NewCatalog(), Settings: o.opts.Settings, Metrics: metrics, Log: log}, nil
}

// election returns the Lease campaign of this replica, named after its host (the pod).
func (o *AuditOptions) election(cfg *rest.Config, log *slog.Logger, onChange func(bool)) (*audit.Election, error) {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("create client: %w", err)
	}
	host, err := os.Hostname()
	if err != nil {
		return nil, fmt.Errorf("leader election identity: %w", err)
	}
	return audit.NewElection(kube, o.LeaderNamespace, host+"_"+string(uuid.NewUUID()), o.LeaseDuration, log, onChange)
}

// reportWriter returns the policy report writer, or nil with --reports none.
func (o *AuditOptions) reportWriter(cfg *rest.Config, log *slog.Logger) (audit.Publisher, error) {
	if o.Reports == "none" {
		return nil, nil
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("create dynamic client: %w", err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("create discovery client: %w", err)
	}
	return audit.NewReportWriter(dyn, disc, o.Reports, o.opts.Scope.Namespace, log)
}

// serve starts the metrics and probe servers and runs the loop until ctx ends.
func (o *AuditOptions) serve(ctx context.Context, a *audit.Auditor, election *audit.Election, log *slog.Logger) error {
	metricsH, probesH := a.Handlers()
	ms, err := audit.Serve(o.MetricsBindAddress, metricsH)
	if err != nil {
		return &ExitError{Code: ExitFailure, Err: fmt.Errorf("--metrics-bind-address: %w", err)}
	}
	ps, err := audit.Serve(o.HealthBindAddress, probesH)
	if err != nil {
		_ = ms.Shutdown(ctx)
		return &ExitError{Code: ExitFailure, Err: fmt.Errorf("--health-probe-bind-address: %w", err)}
	}
	log.Info("serving", slog.String("metrics", ms.Addr()), slog.String("probes", ps.Addr()),
		slog.Duration("interval", o.Interval))
	elected := make(chan error, 1)
	if election != nil {
		go func() { elected <- election.Run(ctx) }()
	} else {
		elected <- nil
	}
	runErr := a.Run(ctx)
	// The election releases the Lease as it stops, so that a standby takes over at once.
	runErr = errors.Join(runErr, <-elected)
	// ctx is done: give scrapes in flight a moment, on a context of their own.
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = errors.Join(runErr, ms.Shutdown(sctx), ps.Shutdown(sctx))
	log.Info("stopped")
	if err != nil {
		return &ExitError{Code: ExitFailure, Err: err}
	}
	return nil
}
