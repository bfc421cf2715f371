package cmd

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/fix"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/render"
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
	// Wait runs every wave of evictions, waiting up to Timeout for each workload's replacements;
	// without it only the first wave runs.
	Wait    bool
	Timeout time.Duration

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
and --action picks another. A finding that waits on stuck objects (blockedBy) has no fix of its
own: naming it applies the fixes of the findings it waits on that carry one (a chain's root), each
with its own checks.

fix prints the plan (each action, the object, what changes and its risk) and asks for
confirmation on a terminal; without a terminal it refuses unless --yes is given. Then, for each
action, it re-reads the object and re-runs the finding's check: a finding that is no longer true
is reported "already-resolved" and nothing is written; an object that changed since the plan
is refused. Every write carries a precondition the API server enforces (a JSON-patch test of the
finalizer and resourceVersion, a uid precondition), is verified afterwards, and is recorded as an
Event (reason WorkloadDoctorFix) on the object and, with --audit-file, as one JSON line.

Reads ride out transient faults (5xx, 429, a reset connection, a body cut short, a timeout) with
retries. A write is never retried blind: when its answer is lost (the connection dropped, a
timeout, a 5xx after the request was sent), fix reads the object back and reports what it finds
(the change is there, not there, or the object is gone), marked "answerLost" in the results, the
audit line and the Event. A guarded write (a JSON patch with test ops, a delete with a uid
precondition) that the read-back shows did not apply is sent once more.

Pods are never evicted faster than their workload allows: an action that takes a serving pod
away (evict-pod) runs in waves per workload, each taking at most as many Ready pods as the
workload's own maxUnavailable (its update strategy, defaulted and rounded as its controller does,
counting the pods this run already evicted), and the next wave waits, up to --timeout, until the
replacements are Ready. A PodDisruptionBudget still applies through the Eviction API. What the
budget does not allow in time is reported "deferred", never forced; --wait=false runs only the
first wave. A pod without a controller is never evicted, and a workload with a single replica is
refused unless the action is named (--action evict-pod). Ctrl-C stops between waves and reports
what was done and what was not.

A saved report is applied only to the cluster it was made on: when its metadata.clusterID (the
kube-system namespace's UID) is not the current cluster's, or is missing, every action is refused
and nothing is written. A FleetReport (scan --contexts) needs --context, which picks both that
context's findings and the cluster they are applied to.

--dry-run=client prints the plan only; --dry-run=server sends every write of the first wave with
API dry-run and reports what the server said.

Exit codes: 0 every action applied, already resolved or dry run (or nothing to fix); 1 usage error or the tool
could not run (cluster unreachable, bad report file); 3 at least one action was refused (object
changed, not confirmed, PodDisruptionBudget, a report of another cluster), deferred (the workload's budget did not allow it in
time) or failed.`,
		Example: `  # Preview the fixes for the current namespace, then apply them after a prompt
  kubectl workloaddoctor fix --dry-run=client
  kubectl workloaddoctor fix

  # A runbook: save a report, then fix two of its findings without a prompt, with an audit trail
  kubectl workloaddoctor scan -A -o json > report.json
  kubectl workloaddoctor fix --from-report report.json wd-3f9a1c07be wd-9c1d2e3f4a --yes --audit-file fix.log

  # Fix one cluster's findings from a fleet scan
  kubectl workloaddoctor fix --from-report fleet.json --context prod-eu --yes

  # Ask the API server whether the writes would pass, without writing
  kubectl workloaddoctor fix -n shop --check stuck-terminating --dry-run=server -o json

  # Use a finding's second action instead of its default
  kubectl workloaddoctor fix wd-3f9a1c07be --action force-delete

  # Evict only the first wave of each workload now, and wait at most 10m in a later run
  kubectl workloaddoctor fix -n shop --check resize-policy-drift --wait=false --yes
  kubectl workloaddoctor fix -n shop --check resize-policy-drift --timeout 10m --yes`,
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
	fs.BoolVar(&o.Wait, "wait", true, "Evict the pods of one workload in waves, waiting for the replacements to be Ready between waves; with --wait=false only the first wave runs and the rest is reported deferred.")
	fs.DurationVar(&o.Timeout, "timeout", 5*time.Minute, "How long fix waits, in all, for workloads to get their Ready pods back between waves; what the budget does not allow by then is reported deferred.")
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
	if o.Timeout <= 0 {
		return fmt.Errorf("invalid --timeout %s: want a positive duration", o.Timeout)
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
