package fix

import (
	"time"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// Result is what happened to one step (or to a finding that could not be planned).
type Result struct {
	// Findings are the IDs of the findings the action resolves.
	Findings  []string         `json:"findings"`
	Check     string           `json:"check,omitempty"`
	RootCause string           `json:"rootCause,omitempty"`
	Action    string           `json:"action"`
	Object    report.ObjectRef `json:"object"`
	Change    string           `json:"change,omitempty"`
	Risk      report.Risk      `json:"risk,omitempty"`
	Status    Status           `json:"status"`
	// Reason says why, in one line: what the server said, what changed, what was verified.
	Reason string `json:"reason,omitempty"`
	// ResourceVersionBefore is the object's resourceVersion right before the write;
	// ResourceVersionAfter the one the write produced (empty when the object is gone).
	ResourceVersionBefore string `json:"resourceVersionBefore,omitempty"`
	ResourceVersionAfter  string `json:"resourceVersionAfter,omitempty"`
	// AnswerLost says the answer to the write was lost: Status and Reason are what reading the
	// object back showed.
	AnswerLost bool `json:"answerLost,omitempty"`
	// NotAttempted says the step was never tried: the run was interrupted before it (or before
	// its wave). Status keeps saying refused or deferred, as the results always have.
	NotAttempted bool `json:"-"`
	// Verified says whether the effect was seen after the write.
	Verified     bool   `json:"verified"`
	Verification string `json:"verification,omitempty"`
}

// newResult starts the result of a step.
func newResult(s *Step) Result {
	r := Result{Findings: s.FindingIDs(), Action: s.Action, Object: s.Target, Change: s.Change, Risk: s.Risk}
	if len(s.Findings) > 0 {
		r.Check, r.RootCause = s.Findings[0].Check, s.Findings[0].RootCause.ID
	}
	return r
}

// Refuse returns a refused result for every step, with the same reason (e.g. not confirmed).
func Refuse(steps []*Step, reason string) []Result {
	out := make([]Result, 0, len(steps))
	for _, s := range steps {
		r := newResult(s)
		r.Status, r.Reason = StatusRefused, reason
		out = append(out, r)
	}
	return out
}

// PlannedResults returns a dry-run result per step: what --dry-run=client reports.
func PlannedResults(steps []*Step) []Result {
	out := make([]Result, 0, len(steps))
	for _, s := range steps {
		r := newResult(s)
		r.Status, r.Reason = StatusDryRun, "client dry run: planned, nothing sent to the server"
		out = append(out, r)
	}
	return out
}

// Document kind and version of `fix -o json`.
const (
	ResultKind = "FixResult"
)

// Document is what `fix -o json` prints.
type Document struct {
	APIVersion string       `json:"apiVersion"`
	Kind       string       `json:"kind"`
	Metadata   DocumentMeta `json:"metadata"`
	Summary    Summary      `json:"summary"`
	Results    []Result     `json:"results"`
}

// DocumentMeta says when, where and how `fix` ran.
type DocumentMeta struct {
	GeneratedAt time.Time `json:"generatedAt"`
	Context     string    `json:"context,omitempty"`
	DryRun      DryRun    `json:"dryRun"`
	// User is who the API server says ran the actions, when any was attempted.
	User string `json:"user,omitempty"`
	// Report is the --from-report file the findings came from, if any.
	Report string `json:"report,omitempty"`
}

// Summary counts results by status.
type Summary struct {
	Total           int `json:"total"`
	Applied         int `json:"applied"`
	AlreadyResolved int `json:"alreadyResolved"`
	Refused         int `json:"refused"`
	Failed          int `json:"failed"`
	DryRun          int `json:"dryRun"`
	Deferred        int `json:"deferred"`
}

// Summarize counts results by status.
func Summarize(rs []Result) Summary {
	s := Summary{Total: len(rs)}
	for _, r := range rs {
		switch r.Status {
		case StatusApplied:
			s.Applied++
		case StatusAlreadyResolved:
			s.AlreadyResolved++
		case StatusRefused:
			s.Refused++
		case StatusFailed:
			s.Failed++
		case StatusDryRun:
			s.DryRun++
		case StatusDeferred:
			s.Deferred++
		}
	}
	return s
}

// NewDocument builds the results document.
func NewDocument(meta DocumentMeta, rs []Result) *Document {
	if rs == nil {
		rs = []Result{}
	}
	for i := range rs {
		if rs[i].Findings == nil {
			rs[i].Findings = []string{}
		}
	}
	return &Document{APIVersion: report.APIVersion, Kind: ResultKind, Metadata: meta, Summary: Summarize(rs), Results: rs}
}

// AllOK reports whether every result lets `fix` exit 0 (applied, already resolved or dry run).
func AllOK(rs []Result) bool {
	for _, r := range rs {
		if !r.Status.OK() {
			return false
		}
	}
	return true
}
