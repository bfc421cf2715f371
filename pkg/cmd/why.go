package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/collect"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/render"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/scan"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/why"
)

// WhyOptions holds `why`'s flags and streams.
type WhyOptions struct {
	config *genericclioptions.ConfigFlags
	reg    *checks.Registry
	genericiooptions.IOStreams
	scanFlags
	reportFlags
	exemptionFlags
	bundleFlags
	Watch bool
	// interval is how often --watch looks again.
	interval time.Duration

	typ, name string
	opts      scan.Options
}

func newWhyCommand(config *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams, reg *checks.Registry) *cobra.Command {
	o := &WhyOptions{config: config, reg: reg, IOStreams: streams, interval: 5 * time.Second}
	cmd := &cobra.Command{
		Use:   "why TYPE/NAME | TYPE NAME",
		Short: "Explain why one object is stuck, down to the root cause",
		Long: `Diagnoses one object: the one an alert named, or that kubectl get shows Terminating or not
progressing. TYPE is what kubectl takes: a resource, a short name or a kind (pod, deploy, ns, pvc,
cloneset, deployments.apps). The object is in the namespace -n gives, or the kubeconfig's.

why runs the checks scan runs, on what a scan of the object's namespace reads (pods listed
metadata-only in that namespace, never in the whole cluster; the nodes its pods run on read by
name). A cluster-scoped object (node, persistentvolume, crd) is read with its resource, as scan -A
reads it, and the one namespace its chain reaches: a volume's claim's, a CRD's instances', else
default; one deleted with foreground or orphan propagation, or a CRD with instances in several
namespaces, needs scan -A, and why says so. It prints the object's findings
as a tree: the object, then each stuck object it waits on, down to the root cause. Each line is
the object, its state and the verdict; the root carries its finding ID and fix, which
kubectl workloaddoctor fix applies (the IDs are those scan prints). -o wide adds the evidence;
-o json|yaml prints the findings of the tree as a report document (the scan report's schema, in
tree order, the object's own finding first), which fix --from-report takes too.

With --watch, why looks again every few seconds and draws the tree again when the chain
changes (another finding, another root cause), until the object is gone or nothing holds it
(exit 0): what to run after fix. Ctrl-C ends it with the exit code of the last tree.

Exemptions (the workloaddoctor.io/ignore annotations, --exemptions) hold findings back as in
scan: the tree leaves them out and a "suppressed:" line after it names each one about the object,
with the exemption and its reason (-o json: under suppressed).

Exit codes: 0 nothing holds the object (or only findings below --fail-on, or only suppressed ones);
1 the object or its type does not exist, or the scan could not look; 2 a finding at or above
--fail-on.`,
		Example: `  # Why is this pod stuck?
  kubectl workloaddoctor why pod/web-7d4b9c-x2x8z -n shop

  # A namespace that stays Terminating, with the evidence
  kubectl workloaddoctor why ns shop -o wide

  # A PersistentVolume that stays Deleting (cluster-scoped: no -n)
  kubectl workloaddoctor why pv pvc-0b1e6f0e

  # A CloneSet whose rollout froze, as JSON for a script
  kubectl workloaddoctor why cloneset/cart -n shop -o json

  # Then apply the root's fix, by the finding ID the tree printed, and watch the chain clear
  kubectl workloaddoctor fix -n shop wd-3f9a1c07be
  kubectl workloaddoctor why pod/web-7d4b9c-x2x8z -n shop --watch`,
		Args: cobra.RangeArgs(1, 2),
		ValidArgsFunction: func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			return o.completeNames(cmd.Context(), args, toComplete)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.FromBundle != "" {
				return o.runBundle(cmd, args)
			}
			if err := o.Complete(args); err != nil {
				return &ExitError{Code: ExitFailure, Err: err}
			}
			if err := o.Validate(); err != nil {
				return &ExitError{Code: ExitFailure, Err: err}
			}
			return o.Run(cmd.Context())
		},
	}
	o.scanFlags.addCheckFlags(cmd.Flags())
	o.reportFlags.addFlags(cmd.Flags(), why.Formats)
	o.exemptionFlags.addFlags(cmd.Flags())
	o.bundleFlags.addFlags(cmd.Flags())
	cmd.Flags().BoolVarP(&o.Watch, "watch", "w", false, "Draw the tree again whenever the chain changes, until the object is gone or nothing holds it (-o tree or wide).")
	registerCompletions(cmd, reg)
	return cmd
}

// Complete resolves the arguments and flags.
func (o *WhyOptions) Complete(args []string) error {
	typ, name, err := why.ParseArgs(args)
	if err != nil {
		return err
	}
	o.typ, o.name = typ, name
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

// Validate checks the flag values.
func (o *WhyOptions) Validate() error {
	if o.Watch && o.Output != why.FormatTree && o.Output != why.FormatWide {
		return fmt.Errorf("--watch draws trees: use it with -o tree or -o wide, not %q", o.Output)
	}
	return o.reportFlags.validate(why.Formats)
}

// Run diagnoses the object and prints the answer.
func (o *WhyOptions) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	mapper, err := o.config.ToRESTMapper()
	if err != nil {
		return &ExitError{Code: ExitFailure, Err: fmt.Errorf("read kubeconfig: %w", err)}
	}
	target, err := why.Resolve(mapper, o.typ, o.name, o.opts.Scope.Namespace)
	if err != nil {
		return &ExitError{Code: ExitFailure, Err: err}
	}
	cfg, err := o.config.ToRESTConfig()
	if err != nil {
		return &ExitError{Code: ExitFailure, Err: fmt.Errorf("read kubeconfig: %w", err)}
	}
	clients, err := scan.Clients(cfg)
	if err != nil {
		return &ExitError{Code: ExitFailure, Err: err}
	}
	if o.Watch {
		return o.watch(ctx, clients, target)
	}
	res, err := why.Run(ctx, clients, target, o.opts)
	if err != nil {
		return &ExitError{Code: ExitFailure, Err: err}
	}
	// The JSON and YAML answers are reports fix --from-report takes: they name their cluster.
	if res.Report != nil {
		var idErr error
		if res.Report.Metadata.ClusterID, idErr = scan.ClusterID(ctx, clients.Kube); idErr != nil && (o.Output == why.FormatJSON || o.Output == why.FormatYAML) {
			fmt.Fprintf(o.ErrOut, "warning: %v; the report carries no clusterID, so fix --from-report will refuse it\n", idErr)
		}
	}
	return o.print(res)
}

// print writes one answer and returns its exit.
func (o *WhyOptions) print(res *why.Result) error {
	if w := clockWarning(res.ClockOffset); w != "" {
		fmt.Fprintln(o.ErrOut, w)
	}
	printWarnings(o.ErrOut, res.Report)
	if err := why.Render(o.Out, res, o.Output, colorEnabled(o.Out, o.NoColor)); err != nil {
		return &ExitError{Code: ExitFailure, Err: err}
	}
	if o.Output == why.FormatTree || o.Output == why.FormatWide {
		render.SuppressedNote(o.Out, res.Report.Suppressed)
	}
	sev, _ := failOnSeverity(o.FailOn)
	return scanExit(res.Report, sev, "the output above")
}

// watch diagnoses the target again every interval and draws the tree again when the chain
// changed, until the object is gone or healthy; Ctrl-C ends it with the last tree's exit.
func (o *WhyOptions) watch(ctx context.Context, clients collect.Clients, target why.Target) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	var last error
	shown := ""
	for first := true; ; first = false {
		res, err := why.Run(ctx, clients, target, o.opts)
		switch {
		case ctx.Err() != nil:
			return last
		case errors.Is(err, why.ErrNotFound) && !first:
			fmt.Fprintf(o.Out, "\n%s is gone.\n", target)
			return nil
		case err != nil:
			return &ExitError{Code: ExitFailure, Err: err}
		}
		if key := chainKey(res); key != shown {
			if !first {
				fmt.Fprintf(o.Out, "\n--- %s\n", res.Now.UTC().Format(time.RFC3339))
			}
			shown = key
			last = o.print(res)
		}
		if len(res.Report.Findings) == 0 {
			return last
		}
		select {
		case <-ctx.Done():
			return last
		case <-time.After(o.interval):
		}
	}
}

// chainKey is what --watch redraws on: the findings of the tree and their root causes, not the
// ages that grow on every look.
func chainKey(res *why.Result) string {
	var b strings.Builder
	for _, f := range res.Report.Findings {
		b.WriteString(f.ID + " " + f.RootCause.ID + "\n")
	}
	return b.String()
}

// completeNames completes TYPE NAME and TYPE/NAME with the names of that type's objects in the
// namespace, one metadata-only list.
func (o *WhyOptions) completeNames(ctx context.Context, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	none := cobra.ShellCompDirectiveNoFileComp
	typ, prefix := "", ""
	switch {
	case len(args) == 1 && !strings.Contains(args[0], "/"):
		typ = args[0]
	case len(args) == 0 && strings.Contains(toComplete, "/"):
		typ, _, _ = strings.Cut(toComplete, "/")
		prefix = typ + "/"
	default:
		return nil, none
	}
	if ctx == nil {
		ctx = context.Background()
	}
	mapper, err := o.config.ToRESTMapper()
	if err != nil {
		return nil, none
	}
	ns, _, err := o.config.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, none
	}
	target, err := why.Resolve(mapper, typ, "", ns)
	if err != nil {
		return nil, none
	}
	cfg, err := o.config.ToRESTConfig()
	if err != nil {
		return nil, none
	}
	clients, err := scan.Clients(cfg)
	if err != nil {
		return nil, none
	}
	l, err := clients.Metadata.Resource(target.Resource).Namespace(target.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, none
	}
	var out []string
	for _, it := range l.Items {
		out = append(out, prefix+it.Name)
	}
	return out, none
}
