package cmd

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// TestFlagHelpNamesTheValue: --help shows each flag's value as one word (pflag takes a
// back-quoted word of the usage as the value's name, so a quoted command would replace it).
func TestFlagHelpNamesTheValue(t *testing.T) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if name, _ := pflag.UnquoteUsage(f); strings.ContainsAny(name, " `") {
				t.Errorf("%s --%s: --help names its value %q", c.CommandPath(), f.Name, name)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(NewRootCommand(genericiooptions.NewTestIOStreamsDiscard()))
}
