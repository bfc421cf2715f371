package cmd

import (
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/spf13/pflag"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/exempt"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// exemptionFlags are how `scan`, `why` and `audit` are told which findings teams accepted.
type exemptionFlags struct {
	File                string
	DisallowAnnotations bool
}

func (f *exemptionFlags) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&f.File, "exemptions", "", "YAML file of exemption rules (kind: Exemptions): findings they match are listed as suppressed, with the rule and its reason, and count for neither the summary nor the exit code.")
	fs.BoolVar(&f.DisallowAnnotations, "disallow-annotation-exemptions", false, "Ignore the workloaddoctor.io/ignore annotations on objects, owners and namespaces: only --exemptions decides.")
}

// policy reads the exemptions file, if any; an invalid one is an error naming the line at fault.
func (f *exemptionFlags) policy(reg *checks.Registry) (*exempt.Policy, error) {
	ids := exempt.IDs{RootCauses: reg.RootCauseIDs(func(checks.RootCause) bool { return true })}
	ids.Checks = reg.IDs()
	p := &exempt.Policy{Annotations: !f.DisallowAnnotations, IDs: ids}
	if f.File == "" {
		return p, nil
	}
	data, err := os.ReadFile(f.File)
	if err != nil {
		return nil, fmt.Errorf("read --exemptions: %w", err)
	}
	if p.Rules, err = exempt.ParseFile(f.File, data, ids); err != nil {
		return nil, fmt.Errorf("invalid --exemptions file: %w", err)
	}
	return p, nil
}

// printWarnings writes the exemptions a scan could not honour, one line each. Owners whose
// metadata was not read are said only where exemptions are in use (something was suppressed or
// another exemption warned): every scan of a Deployment's pods would say it otherwise, to users
// who never annotate anything; the report's warnings always list it.
func printWarnings(w io.Writer, r *report.Report) {
	inUse := len(r.Suppressed) > 0 || slices.ContainsFunc(r.Warnings, func(x report.Warning) bool { return x.Reason != exempt.WarnUnread })
	for _, x := range r.Warnings {
		if x.Reason != exempt.WarnUnread || inUse {
			fmt.Fprintf(w, "warning: %s: %s\n", x.Reason, x.Message)
		}
	}
}
