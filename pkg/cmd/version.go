package cmd

import (
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/render"
	pluginversion "github.com/workloaddoctor/kubectl-workloaddoctor/pkg/version"
)

// VersionDoc is the document `version -o json` prints.
type VersionDoc struct {
	PluginVersion pluginversion.Info `json:"pluginVersion"`
	ServerVersion *version.Info      `json:"serverVersion,omitempty"`
}

func newVersionCommand(config *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	var output string
	var clientOnly bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the plugin's version and the cluster's",
		Example: `  kubectl workloaddoctor version
  kubectl workloaddoctor version -o json --client`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "" && output != render.FormatJSON {
				return &ExitError{Code: ExitFailure, Err: fmt.Errorf("invalid --output %q: want json, or no flag for text", output)}
			}
			doc := VersionDoc{PluginVersion: pluginversion.Get()}
			var serverErr error
			if !clientOnly {
				doc.ServerVersion, serverErr = serverVersion(config)
			}
			if output == render.FormatJSON {
				if err := render.JSON(streams.Out, doc); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(streams.Out, "Plugin Version: %s\n", doc.PluginVersion.Version)
				if doc.ServerVersion != nil {
					fmt.Fprintf(streams.Out, "Server Version: %s\n", doc.ServerVersion.GitVersion)
				}
			}
			if serverErr != nil {
				return &ExitError{Code: ExitFailure, Err: serverErr}
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "Output format: json. Text when not set.")
	cmd.Flags().BoolVar(&clientOnly, "client", false, "Print only the plugin's version; do not contact the cluster.")
	return cmd
}

func serverVersion(config *genericclioptions.ConfigFlags) (*version.Info, error) {
	disc, err := config.ToDiscoveryClient()
	if err != nil {
		return nil, fmt.Errorf("read kubeconfig: %w", err)
	}
	v, err := disc.ServerVersion()
	if err != nil {
		return nil, fmt.Errorf("cannot reach the cluster: %w", err)
	}
	return v, nil
}
