// Package report defines the scan report: the document `scan -o json` prints and `fix --from-report` reads.
package report

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"strings"
	"time"
)

// APIVersion and Kind identify the report document.
const (
	APIVersion = "workloaddoctor.io/v1alpha1"
	Kind       = "Report"
)

// Severity of a finding.
type Severity string

// Severities, most severe first.
const (
	SeverityError   Severity = "error"
	SeverityWarning Severity = "warning"
	SeverityInfo    Severity = "info"
)

// Rank orders severities: a higher rank is more severe. Unknown severities rank lowest.
func (s Severity) Rank() int {
	switch s {
	case SeverityError:
		return 3
	case SeverityWarning:
		return 2
	case SeverityInfo:
		return 1
	}
	return 0
}

// Risk of a fix action.
type Risk string

// Risks of fix actions.
const (
	RiskLow    Risk = "low"
	RiskMedium Risk = "medium"
	RiskHigh   Risk = "high"
)

// Report is the result of a scan.
type Report struct {
	APIVersion string    `json:"apiVersion"`
	Kind       string    `json:"kind"`
	Metadata   Metadata  `json:"metadata"`
	Coverage   Coverage  `json:"coverage"`
	Summary    Summary   `json:"summary"`
	Findings   []Finding `json:"findings"`
	// Suppressed are the findings exemptions hold back (absent when none).
	Suppressed []Suppressed `json:"suppressed,omitempty"`
	// Warnings are exemptions the scan could not honour as written (absent when none).
	Warnings []Warning `json:"warnings,omitempty"`
}

// Metadata says when and against what the scan ran.
type Metadata struct {
	GeneratedAt   time.Time `json:"generatedAt"`
	Context       string    `json:"context"`
	ServerVersion string    `json:"serverVersion"`
	// ClusterID is the UID of the cluster's kube-system namespace, empty when the scan could not
	// read it; fix --from-report applies a report only to the cluster it names.
	ClusterID string `json:"clusterID"`
	// Source is "bundle" for a report made offline from a capture (scan --from-bundle), which
	// fix refuses: the cluster may have changed since; empty for a live scan.
	Source string `json:"source,omitempty"`
	// CapturedAt is when the capture was taken, the time the report's ages are measured at.
	CapturedAt *time.Time `json:"capturedAt,omitempty"`
}

// SourceBundle is Metadata.Source of a report made from a capture.
const SourceBundle = "bundle"

// Coverage says which checks ran and what they could not read.
type Coverage struct {
	Complete bool     `json:"complete"`
	Checks   []string `json:"checks"`
	Skipped  []Note   `json:"skipped"`
	Degraded []Note   `json:"degraded"`
	// Notes are deliberate limits that do not make coverage incomplete, such as Secrets not
	// being listed because the credentials (rightly) may not list them.
	Notes []Note `json:"notes"`
	// Unread are the inputs checks detect from that stayed unreadable after the retries, for a
	// reason other than RBAC: the scan did not look there, so it cannot vouch for what it did not
	// find, and `scan` exits 1.
	Unread []InputNote `json:"unread"`
}

// InputNote says why an input could not be read.
type InputNote struct {
	Input  string `json:"input"`
	Reason string `json:"reason"`
}

// Looked says whether the scan can vouch for what it did not find: every input checks detect
// from was read or only stated a limit (coverage.unread is empty), and some check could run.
func (c Coverage) Looked() bool { return len(c.Unread) == 0 && !c.noneRan() }

// noneRan says whether every check was skipped.
func (c Coverage) noneRan() bool { return len(c.Checks) == 0 && len(c.Skipped) > 0 }

// Blindness says why the scan did not look (Looked): which inputs it could not read, or that no
// check could run. It is empty when the scan looked.
func (c Coverage) Blindness() string {
	switch {
	case len(c.Unread) > 0:
		var in []string
		for _, u := range c.Unread {
			in = append(in, u.Input+" ("+u.Reason+")")
		}
		return "could not read " + strings.Join(in, ", ")
	case c.noneRan():
		var why []string
		for _, n := range c.Skipped {
			why = append(why, n.Check+": "+n.Reason)
		}
		return "no check could run (" + strings.Join(why, "; ") + ")"
	}
	return ""
}

// Note explains why a check was skipped or degraded.
type Note struct {
	Check  string `json:"check"`
	Reason string `json:"reason"`
	// Inputs are the unreadable inputs that skipped or degraded the check; whether the check may
	// have missed findings follows from them (snapshot.Hides, the auditor's rule too).
	Inputs []string `json:"inputs,omitempty"`
}

// Summary counts findings by severity.
type Summary struct {
	Total   int `json:"total"`
	Error   int `json:"error"`
	Warning int `json:"warning"`
	Info    int `json:"info"`
}

// ObjectRef names a Kubernetes object.
type ObjectRef struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
	UID        string `json:"uid,omitempty"`
	// ResourceVersion is the version the scan saw; fix refuses to write if it changed.
	ResourceVersion string `json:"resourceVersion,omitempty"`
}

// String renders the reference the way kubectl names objects: kind/name, prefixed by namespace.
func (o ObjectRef) String() string {
	s := strings.ToLower(o.Kind) + "/" + o.Name
	if o.Namespace != "" {
		return o.Namespace + "/" + s
	}
	return s
}

// Finding is one stuck object with its root cause and the fixes that may resolve it.
type Finding struct {
	ID       string     `json:"id"`
	Check    string     `json:"check"`
	Severity Severity   `json:"severity"`
	Object   ObjectRef  `json:"object"`
	Owner    *ObjectRef `json:"owner,omitempty"`
	// Node is the node a pod is bound to, when it matters to the finding.
	Node      string    `json:"node,omitempty"`
	Since     time.Time `json:"since"`
	Summary   string    `json:"summary"`
	RootCause RootCause `json:"rootCause"`
	Fixes     []Fix     `json:"fixes"`
	// BlockedBy are the stuck objects this one waits on, nearest first; the last is the root,
	// whose own finding carries the fix.
	BlockedBy []BlockRef `json:"blockedBy,omitempty"`
	// Origin is the source file a kustomize build recorded on the object or its owner.
	Origin *Origin `json:"origin,omitempty"`
}

// BlockRef names a stuck object a finding waits on, and that object's own finding when the scan
// has one.
type BlockRef struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
	FindingID  string `json:"findingId,omitempty"`
}

// RootCause explains why the object is stuck.
type RootCause struct {
	ID         string   `json:"id"`
	Message    string   `json:"message"`
	Evidence   []string `json:"evidence"`
	References []string `json:"references"`
}

// Fix is an action `fix` can apply to resolve a finding.
type Fix struct {
	Action      string            `json:"action"`
	Description string            `json:"description"`
	Risk        Risk              `json:"risk"`
	Params      map[string]string `json:"params,omitempty"`
}

// FindingID is stable across scans while the object, check and root cause stay the same.
func FindingID(obj ObjectRef, check, rootCause string) string {
	key := obj.UID
	if key == "" {
		key = obj.APIVersion + "/" + obj.Kind + "/" + obj.Namespace + "/" + obj.Name
	}
	sum := sha256.Sum256([]byte(key + "\x00" + check + "\x00" + rootCause))
	return "wd-" + hex.EncodeToString(sum[:])[:10]
}

// Normalize fills IDs and the summary, replaces nil lists with empty ones and sorts findings so
// that the document is deterministic.
func (r *Report) Normalize() {
	r.APIVersion, r.Kind = APIVersion, Kind
	r.Summary = Summary{}
	for i := range r.Findings {
		f := &r.Findings[i]
		f.normalize()
		r.Summary.Total++
		switch f.Severity {
		case SeverityError:
			r.Summary.Error++
		case SeverityWarning:
			r.Summary.Warning++
		case SeverityInfo:
			r.Summary.Info++
		}
	}
	sort.SliceStable(r.Findings, func(i, j int) bool { return findingLess(r.Findings[i], r.Findings[j]) })
	r.normalizeSuppressed()
	if r.Findings == nil {
		r.Findings = []Finding{}
	}
	if r.Coverage.Checks == nil {
		r.Coverage.Checks = []string{}
	}
	if r.Coverage.Skipped == nil {
		r.Coverage.Skipped = []Note{}
	}
	if r.Coverage.Degraded == nil {
		r.Coverage.Degraded = []Note{}
	}
	if r.Coverage.Notes == nil {
		r.Coverage.Notes = []Note{}
	}
	if r.Coverage.Unread == nil {
		r.Coverage.Unread = []InputNote{}
	}
	r.Coverage.Complete = len(r.Coverage.Skipped) == 0 && len(r.Coverage.Degraded) == 0
}

// findingLess orders findings by check, severity (most severe first) and object.
func findingLess(a, b Finding) bool {
	if a.Check != b.Check {
		return a.Check < b.Check
	}
	if a.Severity.Rank() != b.Severity.Rank() {
		return a.Severity.Rank() > b.Severity.Rank()
	}
	if a.Object.Namespace != b.Object.Namespace {
		return a.Object.Namespace < b.Object.Namespace
	}
	if a.Object.Kind != b.Object.Kind {
		return a.Object.Kind < b.Object.Kind
	}
	return a.Object.Name < b.Object.Name
}

// AtOrAbove counts findings at or above the given severity.
func (r *Report) AtOrAbove(s Severity) int {
	n := 0
	for _, f := range r.Findings {
		if f.Severity.Rank() >= s.Rank() {
			n++
		}
	}
	return n
}
