// Package cmd is the plugin's command tree: scan, why, fix, audit, checks, explain and version.
package cmd

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks/builtin"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/fix"
)

// Exit codes (docs/contract.md).
const (
	ExitOK       = 0
	ExitFailure  = 1
	ExitFindings = 2
	ExitRefused  = 3
)

// ExitError carries a process exit code. Err, when set, is printed as the one-line error.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// Execute runs the command line and returns the process exit code.
func Execute(args []string, streams genericiooptions.IOStreams) int {
	root := NewRootCommand(streams)
	root.SetArgs(args)
	cmd, err := root.ExecuteC()
	if err == nil {
		return ExitOK
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		if ee.Err != nil {
			fmt.Fprintf(streams.ErrOut, "error: %v\n", oneLine(ee.Err))
		}
		return ee.Code
	}
	// A flag or argument error from cobra: point at the command's help, as kubectl does.
	fmt.Fprintf(streams.ErrOut, "error: %v (see '%s --help')\n", oneLine(err), cmd.CommandPath())
	return ExitFailure
}

func oneLine(err error) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "\n", " ")), " ")
}

// NewRootCommand builds `kubectl workloaddoctor`.
func NewRootCommand(streams genericiooptions.IOStreams) *cobra.Command {
	flags := genericclioptions.NewConfigFlags(true)
	root := &cobra.Command{
		Use:   "workloaddoctor",
		Short: "Diagnose and fix stuck Kubernetes workloads",
		Long: `workloaddoctor finds workloads that are stuck in a live cluster, names the root cause with
evidence read from the cluster, and proposes fixes that it can apply safely.

It knows OpenKruise (CloneSet, Advanced StatefulSet, SidecarSet), KWOK, Cluster API and the
core Kubernetes controllers: pods held in PreparingNormal, controllers waiting on expectations
that can no longer be met, objects stuck Terminating, and resizePolicy drift that breaks
in-place updates.`,
		Example: `  # Scan the current namespace, then every namespace
  kubectl workloaddoctor scan
  kubectl workloaddoctor scan -A

  # Why one object is stuck, as a tree down to its root cause
  kubectl workloaddoctor why deploy/web -n shop

  # Save a report, then fix two of its findings in a runbook
  kubectl workloaddoctor scan -A -o json > report.json
  kubectl workloaddoctor fix --from-report report.json wd-3f9a1c07be wd-9c1d2e3f4a --yes

  # What a check or root cause means
  kubectl workloaddoctor checks
  kubectl workloaddoctor explain finalizer-owner-missing`,
		SilenceUsage:  true,
		SilenceErrors: true,
		// kubectl completes plugins through kubectl_complete-workloaddoctor (hack/completion);
		// cobra's own scripts would complete a command named workloaddoctor, which does not exist.
		CompletionOptions: cobra.CompletionOptions{HiddenDefaultCmd: true},
		Annotations: map[string]string{
			cobra.CommandDisplayNameAnnotation: "kubectl workloaddoctor",
		},
	}
	flags.AddFlags(root.PersistentFlags())
	reg := builtin.Checks()
	cat := fix.NewCatalog()
	root.AddCommand(
		newScanCommand(flags, streams, reg),
		newCaptureCommand(flags, streams, reg),
		newFixCommand(flags, streams, reg, cat),
		newWhyCommand(flags, streams, reg),
		newAuditCommand(flags, streams, reg),
		newChecksCommand(streams, reg, cat),
		newExplainCommand(streams, reg, cat),
		newVersionCommand(flags, streams),
	)
	return root
}

// colorEnabled reports whether output to w should be coloured: only on a terminal, and never
// with --no-color or NO_COLOR set (https://no-color.org).
func colorEnabled(w io.Writer, noColor bool) bool {
	if noColor {
		return false
	}
	if _, set := os.LookupEnv("NO_COLOR"); set {
		return false
	}
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
