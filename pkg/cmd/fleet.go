package cmd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/render"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/scan"
)

// fleetFlags choose the kubeconfig contexts a fleet scan covers and how it runs them.
type fleetFlags struct {
	Contexts       []string
	AllContexts    bool
	Parallel       int
	ContextTimeout time.Duration
}

func (f *fleetFlags) addFlags(fs *pflag.FlagSet) {
	fs.StringSliceVar(&f.Contexts, "contexts", nil, "Scan these kubeconfig contexts, each on its own, and print one FleetReport: names, globs (prod-*) and exclusions (!prod-legacy), comma-separated.")
	fs.BoolVar(&f.AllContexts, "all-contexts", false, "Scan every kubeconfig context (exclusions still apply with --contexts '!name').")
	fs.IntVar(&f.Parallel, "parallel", 4, "With --contexts or --all-contexts: how many contexts are scanned at once.")
	fs.DurationVar(&f.ContextTimeout, "context-timeout", 5*time.Minute, "With --contexts or --all-contexts: how long one context's scan may take in all; a context that has not answered by then is unreachable (--request-timeout still bounds each request).")
}

// enabled says whether a fleet scan was asked for.
func (f *fleetFlags) enabled() bool { return f.AllContexts || len(f.Contexts) > 0 }

// clusterFlags are the kubeconfig flags that name one cluster or identity; a fleet scan takes
// each context's own, so they would apply one cluster's settings to all.
var clusterFlags = []string{"context", "cluster", "user", "server", "token", "as", "as-group", "as-uid",
	"certificate-authority", "client-certificate", "client-key", "insecure-skip-tls-verify", "tls-server-name"}

// validate checks the fleet flags against the one-cluster flags given.
func (f *fleetFlags) validate(cmd *cobra.Command) error {
	if !f.enabled() {
		for _, name := range []string{"parallel", "context-timeout"} {
			if fl := cmd.Flags().Lookup(name); fl != nil && fl.Changed {
				return fmt.Errorf("--%s applies only with --contexts or --all-contexts", name)
			}
		}
		return nil
	}
	if f.Parallel < 1 {
		return fmt.Errorf("invalid --parallel %d: want at least 1", f.Parallel)
	}
	if f.ContextTimeout <= 0 {
		return fmt.Errorf("invalid --context-timeout %s: want a positive duration", f.ContextTimeout)
	}
	var bad []string
	for _, name := range clusterFlags {
		if fl := cmd.Flags().Lookup(name); fl != nil && fl.Changed {
			bad = append(bad, "--"+name)
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("%s cannot be used with --contexts or --all-contexts: each context brings its own cluster and credentials", strings.Join(bad, ", "))
	}
	for _, p := range f.Contexts {
		if _, err := path.Match(strings.TrimPrefix(p, "!"), ""); err != nil || strings.TrimPrefix(p, "!") == "" {
			return fmt.Errorf("invalid --contexts pattern %q: want a context name or a glob such as prod-*", p)
		}
	}
	return nil
}

// selectContexts picks the contexts the patterns name, sorted. --all-contexts, or only
// exclusions, starts from every context. A plain name that is not in the kubeconfig is an error,
// as is a selection that names nothing: a typo must not pass for an empty fleet.
func selectContexts(all []string, patterns []string, allContexts bool) ([]string, error) {
	var include, exclude []string
	for _, p := range patterns {
		if x, ok := strings.CutPrefix(p, "!"); ok {
			exclude = append(exclude, x)
		} else {
			include = append(include, p)
		}
	}
	if allContexts || len(include) == 0 {
		include = append(include, "*")
	}
	matches := func(ps []string, name string) bool {
		for _, p := range ps {
			if ok, _ := path.Match(p, name); ok {
				return true
			}
		}
		return false
	}
	for _, p := range include {
		if !strings.ContainsAny(p, `*?[\`) && !slices.Contains(all, p) {
			return nil, fmt.Errorf("context %q is not in the kubeconfig (contexts: %s)", p, strings.Join(all, ", "))
		}
	}
	var out []string
	for _, name := range all {
		if matches(include, name) && !matches(exclude, name) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	if len(out) == 0 {
		return nil, fmt.Errorf("no kubeconfig context matches %s (contexts: %s)", strings.Join(patterns, ","), strings.Join(all, ", "))
	}
	return out, nil
}

// fleetScan is a scan of several contexts.
type fleetScan struct {
	raw       clientcmdapi.Config
	contexts  []string
	flags     fleetFlags
	config    *genericclioptions.ConfigFlags
	failOn    report.Severity
	allNS     bool
	errOut    io.Writer
	errOutMu  sync.Mutex
	scanCount int // contexts done, under errOutMu
}

// runFleet scans every selected context, at most --parallel at once, and prints the FleetReport.
func (o *ScanOptions) runFleet(ctx context.Context) error {
	if ctx == nil {
		ctx = context.Background()
	}
	raw, err := o.config.ToRawKubeConfigLoader().RawConfig()
	if err != nil {
		return &ExitError{Code: ExitFailure, Err: fmt.Errorf("read kubeconfig: %w", err)}
	}
	var names []string
	for name := range raw.Contexts {
		names = append(names, name)
	}
	sort.Strings(names)
	selected, err := selectContexts(names, o.Contexts, o.AllContexts)
	if err != nil {
		return &ExitError{Code: ExitFailure, Err: err}
	}
	failOn, _ := failOnSeverity(o.FailOn)
	fs := &fleetScan{raw: raw, contexts: selected, flags: o.fleetFlags, config: o.config, failOn: failOn, allNS: o.AllNamespaces, errOut: o.ErrOut}
	fleet := fs.run(ctx, o)
	if err := render.FleetReport(o.Out, fleet, o.Output, colorEnabled(o.Out, o.NoColor)); err != nil {
		return &ExitError{Code: ExitFailure, Err: err}
	}
	return fleetExit(fleet)
}

func (fs *fleetScan) run(ctx context.Context, o *ScanOptions) *report.FleetReport {
	fleet := &report.FleetReport{Metadata: report.FleetMetadata{GeneratedAt: o.opts.Clock().UTC().Truncate(time.Second)}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, fs.flags.Parallel)
	for _, name := range fs.contexts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			row, r := fs.scanContext(ctx, name, o)
			mu.Lock()
			fleet.Add(row, r)
			mu.Unlock()
		}()
	}
	wg.Wait()
	fleet.Normalize()
	return fleet
}

// scanContext scans one context with clients, discovery and a REST mapping of its own, built
// from that context's entry in the kubeconfig alone: nothing cached for one cluster can serve
// another (kubescape#3217 scanned the wrong cluster from a loop that shared a client).
func (fs *fleetScan) scanContext(ctx context.Context, name string, o *ScanOptions) (report.ClusterResult, *report.Report) {
	began := time.Now()
	row := report.ClusterResult{Context: name, ExitCode: ExitFailure}
	var log bytes.Buffer
	defer func() {
		row.Duration = time.Since(began).Round(time.Millisecond).String()
		fs.progress(name, &log, row)
	}()
	ctx, cancel := context.WithTimeout(ctx, fs.flags.ContextTimeout)
	defer cancel()

	overrides := &clientcmd.ConfigOverrides{}
	if fs.config.Namespace != nil {
		overrides.Context.Namespace = *fs.config.Namespace
	}
	if fs.config.Timeout != nil {
		overrides.Timeout = *fs.config.Timeout
	}
	cc := clientcmd.NewNonInteractiveClientConfig(fs.raw, name, overrides, nil)
	cfg, err := cc.ClientConfig()
	if err != nil {
		row.Status, row.Error = report.ClusterError, fmt.Sprintf("kubeconfig context %s: %v", name, err)
		return row, nil
	}
	row.Server = cfg.Host
	ns, _, err := cc.Namespace()
	if err != nil {
		row.Status, row.Error = report.ClusterError, fmt.Sprintf("kubeconfig context %s: %v", name, err)
		return row, nil
	}
	opts := o.opts
	opts.Context = name
	if !fs.allNS {
		opts.Scope.Namespace = ns
	}
	clients, err := scan.Clients(cfg)
	if err != nil {
		row.Status, row.Error = report.ClusterError, err.Error()
		return row, nil
	}
	// The identity is read first: it tells an unreachable server or refused credentials apart
	// before the scan's many reads would each say so.
	id, idErr := scan.ClusterID(ctx, clients.Kube)
	if idErr != nil && !apierrors.IsForbidden(idErr) {
		row.Status, row.Error = clusterStatus(ctx, idErr), oneLine(idErr)
		return row, nil
	}
	r, snap, err := scan.Run(ctx, clients, opts)
	if err != nil {
		row.Status, row.Error = clusterStatus(ctx, err), oneLine(err)
		return row, nil
	}
	r.Metadata.ClusterID = id
	if idErr != nil {
		fmt.Fprintf(&log, "warning: %v; the report carries no clusterID, so fix --from-report will refuse its findings\n", idErr)
	}
	scanWarnings(&log, r, snap.ClockOffset)
	row.Status = report.ClusterScanned
	row.ExitCode = exitCode(scanExit(r, fs.failOn, "the fleet report's coverage"))
	return row, r
}

// progress writes a context's warnings and its outcome to stderr, each line prefixed with the
// context, one context at a time.
func (fs *fleetScan) progress(name string, log *bytes.Buffer, row report.ClusterResult) {
	fs.errOutMu.Lock()
	defer fs.errOutMu.Unlock()
	fs.scanCount++
	for _, line := range strings.Split(strings.TrimRight(log.String(), "\n"), "\n") {
		if line != "" {
			fmt.Fprintf(fs.errOut, "[%s] %s\n", name, line)
		}
	}
	outcome := row.Status
	if row.Error != "" {
		outcome += ": " + row.Error
	}
	fmt.Fprintf(fs.errOut, "[%s] %s in %s (%d of %d contexts done)\n", name, outcome, row.Duration, fs.scanCount, len(fs.contexts))
}

// clusterStatus classifies why a context could not be scanned.
func clusterStatus(ctx context.Context, err error) string {
	var dnsErr *net.DNSError
	var opErr *net.OpError
	switch {
	case apierrors.IsUnauthorized(err), apierrors.IsForbidden(err):
		return report.ClusterForbidden
	case ctx.Err() != nil, errors.Is(err, context.DeadlineExceeded), utilnet.IsConnectionRefused(err),
		errors.As(err, &dnsErr), errors.As(err, &opErr):
		return report.ClusterUnreachable
	}
	return report.ClusterError
}

// exitCode is the process exit code err stands for.
func exitCode(err error) int {
	var ee *ExitError
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &ee):
		return ee.Code
	}
	return ExitFailure
}

// fleetExit is 1 when a context was not scanned or could not look, else 2 when a context had
// findings at or above --fail-on, else 0.
func fleetExit(f *report.FleetReport) error {
	var notScanned []string
	findings := false
	for _, c := range f.Clusters {
		switch {
		case c.Status != report.ClusterScanned:
			notScanned = append(notScanned, c.Context+" ("+c.Status+")")
		case c.ExitCode == ExitFailure:
			notScanned = append(notScanned, c.Context+" (incomplete)")
		case c.ExitCode == ExitFindings:
			findings = true
		}
	}
	if len(notScanned) > 0 {
		return &ExitError{Code: ExitFailure, Err: fmt.Errorf("%d of %d contexts not fully scanned: %s; the fleet report says why",
			len(notScanned), len(f.Clusters), strings.Join(notScanned, ", "))}
	}
	if findings {
		return &ExitError{Code: ExitFindings}
	}
	return nil
}
