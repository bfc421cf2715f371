package bundle

import (
	"time"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// Names in a bundle.
const (
	ManifestFile  = "bundle.yaml"
	ReportFile    = "report.json"
	ResponsesDir  = "responses"
	IndexFile     = ResponsesDir + "/index.json"
	APIVersion    = "workloaddoctor.io/v1alpha1"
	ManifestKind  = "Bundle"
	replayAddress = "http://bundle.invalid"
)

// Manifest is bundle.yaml: what was captured, from which cluster, when, and how.
type Manifest struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// CapturedAt is the capture scan's Now: the time a replay measures ages at.
	CapturedAt    time.Time `json:"capturedAt"`
	ServerVersion string    `json:"serverVersion"`
	ClusterID     string    `json:"clusterID"`
	Context       string    `json:"context"`
	Plan          Plan      `json:"plan"`
	// Unread are the inputs the capture could not read (forbidden or failed), Limits what it
	// left unread on purpose: a replay finds them unread again.
	Unread []report.InputNote `json:"unread,omitempty"`
	Limits []report.InputNote `json:"limits,omitempty"`
	// Requests and Bytes are how many answers the bundle holds, and their size.
	Requests int   `json:"requests"`
	Bytes    int64 `json:"bytes"`
}

// Plan is the scan a capture followed, which a replay follows again: a different plan would
// ask for answers that were never recorded.
type Plan struct {
	Namespace        string   `json:"namespace,omitempty"`
	AllNamespaces    bool     `json:"allNamespaces,omitempty"`
	LabelSelector    string   `json:"labelSelector,omitempty"`
	Checks           []string `json:"checks"`
	KruiseNamespace  string   `json:"kruiseNamespace,omitempty"`
	KruiseDeployment string   `json:"kruiseDeployment,omitempty"`
	// PageSize is the LIST page size asked; 0 let the collector choose.
	PageSize int64 `json:"pageSize,omitempty"`
	// MinAge is --min-age as given; empty kept every check's own threshold.
	MinAge string `json:"minAge,omitempty"`
}
