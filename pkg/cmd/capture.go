package cmd

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/bundle"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/scan"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// CaptureOptions holds `capture`'s flags and streams.
type CaptureOptions struct {
	config *genericclioptions.ConfigFlags
	reg    *checks.Registry
	genericiooptions.IOStreams
	scanFlags
	exemptionFlags
	Output string

	opts scan.Options
}

func newCaptureCommand(config *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams, reg *checks.Registry) *cobra.Command {
	o := &CaptureOptions{config: config, reg: reg, IOStreams: streams}
	cmd := &cobra.Command{
		Use:   "capture -o FILE.tgz",
		Short: "Record what a scan reads into a bundle, to scan it offline",
		Long: `Runs the scan that scan runs with the same flags (the same bulk lists, the same targeted
reads the checks declare, the same bounded controller log lines) and records every answer the
apiserver gave into a bundle: a gzip'd tar, or its files unpacked when -o names a directory
(an existing one, or a path ending in /). scan --from-bundle and why --from-bundle then give,
anywhere and later, the findings the capture's own scan gave, ages measured at the capture.

The bundle holds bundle.yaml (kind: Bundle: capture time, server version, clusterID, context,
the scan plan followed, the inputs that were forbidden or failed), report.json (the capture's
own report), and responses/ (each answer as read, JSON, with an index of the requests). It holds
only what the scan reads: no Secret, no ConfigMap data, pods as metadata except those the checks
read in full, at most the controller log lines the checks read. Read a bundle before sharing it:
object names, labels, annotations, events and log lines are in it.

-o must be given, and an existing file is never overwritten. Each answer goes to disk as the scan
reads it, into a temporary directory beside the archive (inside the directory), removed when the
capture ends, however it ends: a capture needs the memory scan needs, and on disk the answers
unpacked plus the archive. A one-line summary (answers, size, inputs not read) goes to stderr.
Exit codes: 0 the bundle was written (inputs the scan could not read are in bundle.yaml and the
summary, and a scan of the bundle reports them unread); 1 it was not.`,
		Example: `  # Capture every namespace, then scan it elsewhere, later
  kubectl workloaddoctor capture -A -o cluster.tgz
  kubectl workloaddoctor scan --from-bundle cluster.tgz -o wide

  # One namespace, only stuck deletions, unpacked for reading
  kubectl workloaddoctor capture -n shop --checks stuck-terminating -o shop-bundle/`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if o.Output == "" {
				return &ExitError{Code: ExitFailure, Err: fmt.Errorf("-o FILE.tgz is required: where to write the bundle")}
			}
			opts, err := o.scanFlags.options(o.config, o.reg)
			if err != nil {
				return &ExitError{Code: ExitFailure, Err: err}
			}
			// The capture's report is the scan's, exemptions held back the same way; and honouring
			// the annotations makes it read the namespaces, which a replay then finds recorded.
			if opts.Exemptions, err = o.exemptionFlags.policy(o.reg); err != nil {
				return &ExitError{Code: ExitFailure, Err: err}
			}
			o.opts = opts
			return o.Run(cmd.Context())
		},
	}
	o.scanFlags.addFlags(cmd.Flags())
	o.exemptionFlags.addFlags(cmd.Flags())
	cmd.Flags().StringVarP(&o.Output, "output", "o", "", "Write the bundle to this file (.tgz), or unpacked into this directory (an existing one, or a path ending in /).")
	registerCompletions(cmd, reg)
	return cmd
}

// Run captures the scan into the bundle.
func (o *CaptureOptions) Run(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	// Ctrl-C cancels the scan, and the answers recorded so far are removed (rec.Close).
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	began := time.Now()
	cfg, err := o.config.ToRESTConfig()
	if err != nil {
		return &ExitError{Code: ExitFailure, Err: fmt.Errorf("read kubeconfig: %w", err)}
	}
	rec, err := bundle.NewRecorder(cfg.Host, o.Output)
	if err != nil {
		return &ExitError{Code: ExitFailure, Err: err}
	}
	defer func() {
		if err := rec.Close(); err != nil {
			fmt.Fprintf(o.ErrOut, "warning: %v\n", err)
		}
	}()
	cfg.Wrap(rec.Wrap)
	clients, err := scan.JSONClients(cfg)
	if err != nil {
		return &ExitError{Code: ExitFailure, Err: err}
	}
	r, snap, err := scan.Run(ctx, clients, o.opts)
	if err != nil {
		return &ExitError{Code: ExitFailure, Err: fmt.Errorf("cannot reach the cluster at %s: %w", cfg.Host, err)}
	}
	if r.Metadata.ClusterID, err = scan.ClusterID(ctx, clients.Kube); err != nil {
		fmt.Fprintf(o.ErrOut, "warning: %v; the bundle carries no clusterID\n", err)
	}
	m := &bundle.Manifest{
		CapturedAt: snap.Now, ServerVersion: snap.ServerVersion, ClusterID: r.Metadata.ClusterID, Context: o.opts.Context,
		Plan: planOf(o.opts, o.MinAge), Unread: inputNotes(snap.Unread, error.Error), Limits: inputNotes(snap.Limits, func(s string) string { return s }),
	}
	if err := rec.Write(m, r); err != nil {
		return &ExitError{Code: ExitFailure, Err: err}
	}
	fmt.Fprintf(o.ErrOut, "captured %d answers (%s) in %s into %s; %s\n", m.Requests, byteSize(m.Bytes),
		time.Since(began).Round(time.Millisecond), o.Output, unreadSummary(r))
	return nil
}

// unreadSummary says what the scan could not read, for the capture's one line.
func unreadSummary(r *report.Report) string {
	if len(r.Coverage.Unread) == 0 {
		return "every input read"
	}
	var in []string
	for _, u := range r.Coverage.Unread {
		in = append(in, u.Input)
	}
	return fmt.Sprintf("%d input%s not read: %s (see bundle.yaml)", len(in), plural(len(in)), strings.Join(in, ", "))
}

// inputNotes lists the inputs of m with their reasons, by input.
func inputNotes[V any](m map[snapshot.Input]V, reason func(V) string) []report.InputNote {
	var out []report.InputNote
	for in, v := range m {
		out = append(out, report.InputNote{Input: string(in), Reason: reason(v)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Input < out[j].Input })
	return out
}

func byteSize(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
