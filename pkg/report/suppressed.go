package report

import (
	"sort"
	"time"
)

// Suppressed is a finding an exemption holds back: it counts for neither the summary nor the
// exit code, and the report says who silenced it and why.
type Suppressed struct {
	Finding
	SuppressedBy Suppressor `json:"suppressedBy"`
	Reason       string     `json:"reason"`
}

// Where an exemption comes from (Suppressor.Source).
const (
	SuppressedByAnnotation = "annotation"
	SuppressedByRule       = "rule"
)

// Suppressor is the exemption that holds a finding back: an annotation on Object (the finding's
// object, its owner or its namespace), or the rule of File at index Rule.
type Suppressor struct {
	Source string     `json:"source"`
	Object *ObjectRef `json:"object,omitempty"`
	File   string     `json:"file,omitempty"`
	Rule   *int       `json:"rule,omitempty"`
	// Until is when the exemption expires; the finding is reported again from then on.
	Until *time.Time `json:"until,omitempty"`
}

// Warning is something the scan could not honour as asked, such as an invalid or expired
// exemption; it does not change the exit code.
type Warning struct {
	Reason  string     `json:"reason"`
	Message string     `json:"message"`
	Object  *ObjectRef `json:"object,omitempty"`
}

// normalizeSuppressed fills the suppressed findings' IDs and empty lists and sorts them as
// findings are sorted.
func (r *Report) normalizeSuppressed() {
	for i := range r.Suppressed {
		r.Suppressed[i].normalize()
	}
	sort.SliceStable(r.Suppressed, func(i, j int) bool { return findingLess(r.Suppressed[i].Finding, r.Suppressed[j].Finding) })
}

// OriginAnnotation is where kustomize (buildMetadata: [originAnnotations]) records the file and
// repository an object was built from.
const OriginAnnotation = "config.kubernetes.io/origin"

// Origin is the source an object was built from, as OriginAnnotation says.
type Origin struct {
	Path string `json:"path"`
	Repo string `json:"repo,omitempty"`
	Ref  string `json:"ref,omitempty"`
}

// normalize fills the finding's ID and replaces its nil lists with empty ones.
func (f *Finding) normalize() {
	if f.ID == "" {
		f.ID = FindingID(f.Object, f.Check, f.RootCause.ID)
	}
	if f.Fixes == nil {
		f.Fixes = []Fix{}
	}
	if f.RootCause.Evidence == nil {
		f.RootCause.Evidence = []string{}
	}
	if f.RootCause.References == nil {
		f.RootCause.References = []string{}
	}
}
