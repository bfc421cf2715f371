package cmd

import (
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
)

func newFixCommand(config *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams, reg *checks.Registry) *cobra.Command {
	return &cobra.Command{
		Use:    "fix",
		Short:  "Apply the fixes that findings propose",
		Hidden: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			return &ExitError{Code: ExitFailure, Err: fmt.Errorf("fix is not available in this build yet")}
		},
	}
}
