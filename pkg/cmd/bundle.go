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
	"k8s.io/client-go/rest"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/bundle"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/scan"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// bundleFlags are --from-bundle, for scan and why.
type bundleFlags struct {
	FromBundle string
}

func (f *bundleFlags) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&f.FromBundle, "from-bundle", "", "Scan a capture offline instead of a cluster: a bundle written by capture, a troubleshoot.sh support bundle or a directory of kubectl get outputs (FILE.tgz or a directory). No cluster is contacted.")
}

// connectionFlags are the flags that choose a cluster; a scan of a bundle contacts none, so
// each is refused rather than silently ignored.
var connectionFlags = []string{"kubeconfig", "context", "cluster", "user", "server", "token", "as", "as-group", "as-uid",
	"username", "password", "certificate-authority", "client-certificate", "client-key", "insecure-skip-tls-verify",
	"tls-server-name", "disable-compression", "contexts", "all-contexts"}

// refuseConnectionFlags names the connection flags given with --from-bundle.
func refuseConnectionFlags(cmd *cobra.Command) error {
	var bad []string
	for _, n := range connectionFlags {
		if f := cmd.Flags().Lookup(n); f != nil && f.Changed {
			bad = append(bad, "--"+n)
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("%s cannot be used with --from-bundle: a bundle is scanned offline, without a cluster", strings.Join(bad, ", "))
	}
	return nil
}

// offlineOptions are the scan options of a bundle: the plan its capture followed, which a
// replay must follow to find its answers recorded. A scope flag that differs from the plan is
// an error; --checks may choose other checks (what they need and the capture did not read is
// reported unread); the thresholds and output are the user's. A foreign capture has no plan:
// the flags say what to scan.
func offlineOptions(cmd *cobra.Command, namespace string, f *scanFlags, reg *checks.Registry, b *bundle.Bundle) (scan.Options, error) {
	if b.Manifest == nil {
		ns := namespace
		if ns == "" {
			ns = "default"
		}
		return f.resolve(reg, snapshot.Scope{Namespace: ns, AllNamespaces: f.AllNamespaces, LabelSelector: f.LabelSelector}, b.Source.Context)
	}
	p := b.Manifest.Plan
	if namespace != "" && (p.AllNamespaces || namespace != p.Namespace) {
		return scan.Options{}, fmt.Errorf("-n %s differs from the bundle's scope (%s): a bundle answers only the scan it captured", namespace, planScope(p))
	}
	if changed(cmd, "all-namespaces") && f.AllNamespaces != p.AllNamespaces {
		return scan.Options{}, fmt.Errorf("-A differs from the bundle's scope (%s): a bundle answers only the scan it captured", planScope(p))
	}
	if changed(cmd, "selector") && f.LabelSelector != p.LabelSelector {
		return scan.Options{}, fmt.Errorf("-l %q differs from the bundle's selector %q: a bundle answers only the scan it captured", f.LabelSelector, p.LabelSelector)
	}
	pf := *f
	if !changed(cmd, "checks") {
		pf.Checks = p.Checks
	}
	if !changed(cmd, "min-age") {
		pf.MinAge = p.MinAge
	}
	if !changed(cmd, "kruise-namespace") {
		pf.KruiseNamespace = p.KruiseNamespace
	}
	if !changed(cmd, "kruise-deployment") {
		pf.KruiseDeployment = p.KruiseDeployment
	}
	opts, err := pf.resolve(reg, snapshot.Scope{Namespace: p.Namespace, AllNamespaces: p.AllNamespaces, LabelSelector: p.LabelSelector}, b.Source.Context)
	opts.PageSize = p.PageSize
	return opts, err
}

func changed(cmd *cobra.Command, name string) bool {
	f := cmd.Flags().Lookup(name)
	return f != nil && f.Changed
}

func planScope(p bundle.Plan) string {
	if p.AllNamespaces {
		return "all namespaces"
	}
	return "namespace " + p.Namespace
}

// planOf is the plan a capture follows, for bundle.yaml.
func planOf(opts scan.Options, minAge string) bundle.Plan {
	p := bundle.Plan{Namespace: opts.Scope.Namespace, AllNamespaces: opts.Scope.AllNamespaces, LabelSelector: opts.Scope.LabelSelector,
		KruiseNamespace: opts.Settings.KruiseNamespace, KruiseDeployment: opts.Settings.KruiseDeployment, PageSize: opts.PageSize, MinAge: minAge}
	for _, c := range opts.Checks {
		p.Checks = append(p.Checks, c.Info().ID)
	}
	return p
}

// scanBundle runs the scan opts describes on the capture b: every request is answered from it
// (none leaves the process), and ages are measured at the capture's time.
func scanBundle(ctx context.Context, b *bundle.Bundle, opts scan.Options) (*report.Report, *snapshot.Snapshot, error) {
	clients, err := scan.JSONClients(&rest.Config{Host: bundle.Address(), Transport: b.Source.Transport})
	if err != nil {
		return nil, nil, err
	}
	atCapture(&opts, b)
	r, snap, err := scan.Run(ctx, clients, opts)
	if err != nil {
		return nil, nil, fmt.Errorf("scan the bundle: %w", err)
	}
	stampBundle(r, b)
	return r, snap, nil
}

// atCapture makes opts measure ages at the capture's time.
func atCapture(opts *scan.Options, b *bundle.Bundle) {
	at := b.Source.CapturedAt
	opts.Clock, opts.At = func() time.Time { return at }, at
}

// stampBundle says in r's metadata that it was made from the capture b, and when b was made.
func stampBundle(r *report.Report, b *bundle.Bundle) {
	m := &r.Metadata
	m.Context, m.ClusterID, m.Source = b.Source.Context, b.Source.ClusterID, report.SourceBundle
	if b.Source.ServerVersion != "" {
		m.ServerVersion = b.Source.ServerVersion
	}
	if at := b.Source.CapturedAt; !at.IsZero() {
		t := at.UTC().Truncate(time.Second)
		m.CapturedAt = &t
	}
}

// openBundle opens the capture at path and writes what its reader should know (how a foreign
// capture's time was chosen) to errOut, once.
func openBundle(path string, errOut io.Writer) (*bundle.Bundle, error) {
	b, err := bundle.Open(path)
	if err != nil {
		return nil, err
	}
	for _, w := range b.Source.Warnings {
		fmt.Fprintf(errOut, "warning: %s\n", w)
	}
	return b, nil
}

// namespaceFlag is -n as given, empty when it was not.
func namespaceFlag(config *genericclioptions.ConfigFlags) string {
	if config.Namespace == nil {
		return ""
	}
	return *config.Namespace
}
