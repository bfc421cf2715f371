// Package scan runs a scan: collect the snapshot the selected checks need, run them, and build the
// report. `scan` prints it; `fix` uses it to plan and to re-check findings right before writing.
package scan

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/collect"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/exempt"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// Options say what to scan.
type Options struct {
	Scope    snapshot.Scope
	Settings snapshot.Settings
	Checks   []checks.Check
	// MinAge, when non-negative, replaces every check's threshold.
	MinAge time.Duration
	// Context is the kubeconfig context name, for the report.
	Context string
	// PageSize is the LIST page size; 0 uses the collector's default.
	PageSize int64
	// Clock is the local clock (nil: time.Now); only the e2e tests shift it.
	Clock func() time.Time
	// At, when set, fixes the scan's clock at that instant (collect.Options.At): a bundle's
	// capture time.
	At time.Time
	// NodesByName reads only the nodes the checks name, one GET each (collect.Options).
	NodesByName bool
	// Exemptions, when set, hold back the findings teams accepted (report.Suppressed); nil
	// reports every finding, as fix's re-check must.
	Exemptions *exempt.Policy
}

// Clients builds the API clients for a scan from a REST config, without client-side rate limiting:
// the collector bounds the requests in flight itself, and the apiserver's priority and fairness
// decides how fast it serves them. A token bucket (client-go's default 5/s, or even 50/s) would
// hold a large cluster's candidate reads back by seconds while the apiserver idles.
func Clients(cfg *rest.Config) (collect.Clients, error) {
	return clients(cfg, true)
}

// JSONClients are Clients whose every answer is JSON: what a capture records and a replay
// serves, so that a bundle's objects are readable and one recording answers every client.
func JSONClients(cfg *rest.Config) (collect.Clients, error) {
	return clients(cfg, false)
}

func clients(cfg *rest.Config, protobuf bool) (collect.Clients, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst, cfg.RateLimiter = -1, 0, nil
	// The objects input lists every resource, deprecated ones included; the apiserver's
	// deprecation warnings about those lists are noise on the user's terminal.
	cfg.WarningHandler = rest.NoWarnings{}
	// Every answer records the apiserver's Date: ages are measured on its clock (collect.Collect),
	// and the leader Lease's liveness on its reads.
	cfg.Wrap(collect.RecordServerDate)
	// Built-in kinds travel as protobuf: smaller on the wire and cheaper to decode than JSON.
	if !protobuf {
		// The metadata client asks for protobuf whatever its config says.
		cfg.Wrap(acceptJSONOnly)
	}
	typed := rest.CopyConfig(cfg)
	if protobuf {
		typed.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
		typed.ContentType = "application/vnd.kubernetes.protobuf"
	}
	kube, err := kubernetes.NewForConfig(typed)
	if err != nil {
		return collect.Clients{}, fmt.Errorf("create client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return collect.Clients{}, fmt.Errorf("create dynamic client: %w", err)
	}
	meta, err := metadata.NewForConfig(cfg)
	if err != nil {
		return collect.Clients{}, fmt.Errorf("create metadata client: %w", err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return collect.Clients{}, fmt.Errorf("create discovery client: %w", err)
	}
	return collect.Clients{Kube: kube, Dynamic: dyn, Metadata: meta, Discovery: disc, Timeout: cfg.Timeout}, nil
}

// acceptJSONOnly strips the protobuf encodings from each request's Accept header, so the
// apiserver answers JSON.
func acceptJSONOnly(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		accept := req.Header.Get("Accept")
		if !strings.Contains(accept, "protobuf") {
			return rt.RoundTrip(req)
		}
		var keep []string
		for _, t := range strings.Split(accept, ",") {
			if !strings.Contains(t, "protobuf") {
				keep = append(keep, strings.TrimSpace(t))
			}
		}
		req = req.Clone(req.Context()) // a RoundTripper must not change the caller's request
		req.Header.Set("Accept", strings.Join(keep, ","))
		return rt.RoundTrip(req)
	})
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// Run collects and checks, returning the normalized report and the snapshot it was built from.
func Run(ctx context.Context, c collect.Clients, opts Options) (*report.Report, *snapshot.Snapshot, error) {
	opts.Scope.MinAgeSet = opts.MinAge >= 0
	podAnnotations, needs := append(checks.PodAnnotations(opts.Checks), report.OriginAnnotation), checks.Needs(opts.Checks)
	if opts.Exemptions != nil && opts.Exemptions.Annotations {
		// Annotations on pods and namespaces must be there to be honoured.
		podAnnotations = append(podAnnotations, exempt.Annotations()...)
		if !slices.Contains(needs, snapshot.InputNamespaces) {
			needs = append(needs, snapshot.InputNamespaces)
		}
	}
	snap, err := collect.Collect(ctx, c, collect.Options{
		Scope: opts.Scope, Settings: opts.Settings, PageSize: opts.PageSize, Clock: opts.Clock, At: opts.At, NodesByName: opts.NodesByName,
		PodAnnotations: podAnnotations,
		Reads:          func(s *snapshot.Snapshot) snapshot.Reads { return checks.DeclareReads(opts.Checks, s) },
		AsksWorkloads: func(s *snapshot.Snapshot) []snapshot.WorkloadQuery {
			checks.Run(s, opts.Checks, opts.MinAge)
			return s.AskedWorkloads()
		},
	}, needs)
	if err != nil {
		return nil, nil, err
	}
	findings, cov := checks.Run(snap, opts.Checks, opts.MinAge)
	r := &report.Report{
		Metadata: report.Metadata{GeneratedAt: snap.Now.UTC().Truncate(time.Second), Context: opts.Context, ServerVersion: snap.ServerVersion},
		Coverage: cov,
		Findings: findings,
	}
	readOwnerReplicaSets(ctx, c, r, snap, opts.Exemptions)
	annotate(r, snap, opts.Exemptions)
	r.Normalize()
	return r, snap, nil
}
