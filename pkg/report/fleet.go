package report

import (
	"fmt"
	"io"
	"sort"
	"time"

	"sigs.k8s.io/yaml"
)

// FleetKind identifies the document `scan --contexts` prints.
const FleetKind = "FleetReport"

// Cluster statuses in a FleetReport.
const (
	// ClusterScanned: the scan ran; its own coverage and exit code say how well it looked.
	ClusterScanned = "scanned"
	// ClusterUnreachable: no answer from the server (refused, no route, DNS, timed out).
	ClusterUnreachable = "unreachable"
	// ClusterForbidden: the server answered but refused the credentials (401) or the scan (403).
	ClusterForbidden = "forbidden"
	// ClusterError: anything else, such as a kubeconfig context that cannot be used.
	ClusterError = "error"
)

// FleetReport is the result of scanning several kubeconfig contexts: a row per context and every
// finding with the context it was found in.
type FleetReport struct {
	APIVersion string          `json:"apiVersion"`
	Kind       string          `json:"kind"`
	Metadata   FleetMetadata   `json:"metadata"`
	Clusters   []ClusterResult `json:"clusters"`
	Summary    Summary         `json:"summary"`
	Findings   []FleetFinding  `json:"findings"`
}

// FleetMetadata says when the fleet scan ran.
type FleetMetadata struct {
	GeneratedAt time.Time `json:"generatedAt"`
}

// ClusterResult is one context's row.
type ClusterResult struct {
	Context string `json:"context"`
	Server  string `json:"server"`
	// ClusterID is the kube-system namespace's UID, as in a Report's metadata.
	ClusterID     string `json:"clusterID"`
	Status        string `json:"status"`
	Error         string `json:"error,omitempty"`
	ServerVersion string `json:"serverVersion"`
	// Duration is the context's wall time, a Go duration such as 1.52s.
	Duration string `json:"duration"`
	// Coverage is the scan's, absent when it did not run.
	Coverage *Coverage `json:"coverage,omitempty"`
	Summary  Summary   `json:"summary"`
	// ExitCode is what `scan` alone would have exited with on this context.
	ExitCode int `json:"exitCode"`
	// GeneratedAt is when the context's scan read the cluster, by its apiserver's clock.
	GeneratedAt time.Time `json:"generatedAt,omitzero"`
}

// FleetFinding is a finding with the context it was found in.
type FleetFinding struct {
	Context string `json:"context"`
	Finding `json:",inline"`
}

// Normalize sorts the rows and findings by context and totals the summary.
func (f *FleetReport) Normalize() {
	f.APIVersion, f.Kind = APIVersion, FleetKind
	sort.SliceStable(f.Clusters, func(i, j int) bool { return f.Clusters[i].Context < f.Clusters[j].Context })
	sort.SliceStable(f.Findings, func(i, j int) bool { return f.Findings[i].Context < f.Findings[j].Context })
	f.Summary = Summary{}
	for _, c := range f.Clusters {
		f.Summary.Total += c.Summary.Total
		f.Summary.Error += c.Summary.Error
		f.Summary.Warning += c.Summary.Warning
		f.Summary.Info += c.Summary.Info
	}
	if f.Clusters == nil {
		f.Clusters = []ClusterResult{}
	}
	if f.Findings == nil {
		f.Findings = []FleetFinding{}
	}
}

// Add records a context's row and, when it was scanned, its findings.
func (f *FleetReport) Add(row ClusterResult, r *Report) {
	if r != nil {
		row.ClusterID, row.ServerVersion, row.GeneratedAt = r.Metadata.ClusterID, r.Metadata.ServerVersion, r.Metadata.GeneratedAt
		cov := r.Coverage
		row.Coverage, row.Summary = &cov, r.Summary
		for _, fd := range r.Findings {
			f.Findings = append(f.Findings, FleetFinding{Context: row.Context, Finding: fd})
		}
	}
	f.Clusters = append(f.Clusters, row)
}

// Cluster returns the row of a context.
func (f *FleetReport) Cluster(context string) (ClusterResult, bool) {
	for _, c := range f.Clusters {
		if c.Context == context {
			return c, true
		}
	}
	return ClusterResult{}, false
}

// ContextReport is the Report of one scanned context: its findings, coverage and identity, as
// `scan --context` alone would have printed them.
func (f *FleetReport) ContextReport(context string) (*Report, error) {
	c, ok := f.Cluster(context)
	if !ok {
		var names []string
		for _, c := range f.Clusters {
			names = append(names, c.Context)
		}
		return nil, fmt.Errorf("the fleet report has no context %q (it has %v)", context, names)
	}
	if c.Status != ClusterScanned {
		return nil, fmt.Errorf("context %q was not scanned in the fleet report (status %s: %s)", context, c.Status, c.Error)
	}
	r := &Report{Metadata: Metadata{GeneratedAt: c.GeneratedAt, Context: c.Context, ServerVersion: c.ServerVersion, ClusterID: c.ClusterID}}
	if c.Coverage != nil {
		r.Coverage = *c.Coverage
	}
	for _, fd := range f.Findings {
		if fd.Context == context {
			r.Findings = append(r.Findings, fd.Finding)
		}
	}
	r.Normalize()
	return r, nil
}

// ReadDocument reads a saved report that is either a Report or a FleetReport; "-" reads stdin.
// Exactly one of the results is non-nil when err is nil.
func ReadDocument(path string, stdin io.Reader) (*Report, *FleetReport, error) {
	data, err := readInput(path, stdin)
	if err != nil {
		return nil, nil, err
	}
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := yaml.Unmarshal(data, &head); err != nil || head.APIVersion != APIVersion || head.Kind != FleetKind {
		r, err := Parse(data, path)
		return r, nil, err
	}
	var f FleetReport
	if err := yaml.Unmarshal(data, &f); err != nil {
		return nil, nil, fmt.Errorf("report %s is not a workloaddoctor fleet report: %w", path, err)
	}
	for i, fd := range f.Findings {
		if fd.Context == "" || fd.ID == "" || fd.Check == "" || fd.Object.Kind == "" || fd.Object.Name == "" {
			return nil, nil, fmt.Errorf("fleet report %s: finding %d lacks its context, id, check or object", path, i)
		}
	}
	f.Normalize()
	return nil, &f, nil
}
