// Package checks holds what every diagnostic shares: the Check interface, the registry that runs
// checks, and the finding builder. Each check lives in a subpackage; package builtin lists them.
// A check is a pure function of the snapshot: it never calls the API.
package checks

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// RootCause describes a root cause a check can report.
type RootCause struct {
	ID          string
	Title       string
	Severity    report.Severity
	Description string
	References  []string
	// Actions are the fix actions findings with this root cause offer, first the default.
	Actions []string
	// ChainsToRoot marks a root cause whose finding waits on other stuck objects the way a
	// deletion waits on what holds it: its blockedBy is followed down to the root, whose finding
	// alone keeps fixes (blocked.go).
	ChainsToRoot bool
	// NodeProblem marks a root cause that is about a pod's node, not the pod: every pod on that
	// node shares it, and a report may show them as one.
	NodeProblem bool
}

// Offers says whether findings with this root cause may propose the action: the actions it
// offers are the only ones NewFinding keeps and the only ones fix may act on.
func (rc RootCause) Offers(action string) bool { return slices.Contains(rc.Actions, action) }

// Need is an input a check reads. A check whose required input cannot be read is skipped; one
// whose optional input cannot be read runs degraded.
type Need struct {
	Input    snapshot.Input
	Optional bool
	// PodAnnotations, with InputPods, are the annotations the check reads from pods it has not
	// asked to read in full: metadata-only pods keep only the annotations some check needs.
	PodAnnotations []string
}

// Info describes a check for the registry, `checks` and `explain`.
type Info struct {
	ID          string
	Title       string
	Description string
	// Threshold is how long a condition must last before it is reported; --min-age overrides it.
	Threshold  time.Duration
	RootCauses []RootCause
	Needs      []Need
}

// Check is one diagnostic.
type Check interface {
	Info() Info
	// Run returns the findings; threshold is the age a condition must reach to be reported.
	Run(s *snapshot.Snapshot, threshold time.Duration) []report.Finding
}

// Registry is an ordered set of checks.
type Registry struct {
	checks []Check
}

// NewRegistry returns a registry of the given checks, ordered by ID.
func NewRegistry(cs ...Check) *Registry {
	r := &Registry{checks: append([]Check(nil), cs...)}
	sort.Slice(r.checks, func(i, j int) bool { return r.checks[i].Info().ID < r.checks[j].Info().ID })
	return r
}

// All returns every check.
func (r *Registry) All() []Check { return append([]Check(nil), r.checks...) }

// IDs returns every check ID.
func (r *Registry) IDs() []string {
	ids := make([]string, 0, len(r.checks))
	for _, c := range r.checks {
		ids = append(ids, c.Info().ID)
	}
	return ids
}

// Get returns the check with the given ID.
func (r *Registry) Get(id string) (Check, bool) {
	for _, c := range r.checks {
		if c.Info().ID == id {
			return c, true
		}
	}
	return nil, false
}

// RootCauseIDs returns the IDs of the root causes that keep holds, check by check in order.
func (r *Registry) RootCauseIDs(keep func(RootCause) bool) []string {
	var out []string
	for _, c := range r.checks {
		for _, rc := range c.Info().RootCauses {
			if keep(rc) {
				out = append(out, rc.ID)
			}
		}
	}
	return out
}

// Select returns the checks named in only (all when empty) minus those in skip. Unknown names
// are an error so a typo in a runbook does not silently scan less.
func (r *Registry) Select(only, skip []string) ([]Check, error) {
	for _, id := range append(append([]string(nil), only...), skip...) {
		if _, ok := r.Get(id); !ok {
			return nil, fmt.Errorf("unknown check %q (known: %s)", id, strings.Join(r.IDs(), ", "))
		}
	}
	want := map[string]bool{}
	for _, id := range only {
		want[id] = true
	}
	drop := map[string]bool{}
	for _, id := range skip {
		drop[id] = true
	}
	var out []Check
	for _, c := range r.checks {
		id := c.Info().ID
		if (len(only) == 0 || want[id]) && !drop[id] {
			out = append(out, c)
		}
	}
	return out, nil
}

// Needs returns the union of the inputs the checks read, each once.
func Needs(cs []Check) []snapshot.Input {
	seen := map[snapshot.Input]bool{}
	var out []snapshot.Input
	for _, c := range cs {
		for _, n := range c.Info().Needs {
			if !seen[n.Input] {
				seen[n.Input] = true
				out = append(out, n.Input)
			}
		}
	}
	return out
}

// PodAnnotations returns the pod annotations the checks read from metadata-only pods.
func PodAnnotations(cs []Check) []string {
	var out []string
	for _, c := range cs {
		for _, n := range c.Info().Needs {
			for _, a := range n.PodAnnotations {
				if !slices.Contains(out, a) {
					out = append(out, a)
				}
			}
		}
	}
	return out
}

// Run runs the checks on the snapshot and returns their findings and coverage. minAge, when
// non-negative, replaces every check's own threshold.
func Run(s *snapshot.Snapshot, cs []Check, minAge time.Duration) ([]report.Finding, report.Coverage) {
	var findings []report.Finding
	cov := report.Coverage{Checks: []string{}}
	for _, c := range cs {
		info := c.Info()
		var missing, degraded, missingIn, degradedIn []string
		for _, n := range info.Needs {
			if limit, ok := s.Limits[n.Input]; ok {
				cov.Notes = append(cov.Notes, report.Note{Check: info.ID, Reason: limit})
			}
			err, unread := s.UnreadInput(n.Input)
			if !unread {
				continue
			}
			// Named once in coverage.unread when the scan did not look there (not a stated limit).
			if err.Blinds() && !slices.ContainsFunc(cov.Unread, func(u report.InputNote) bool { return u.Input == string(n.Input) }) {
				cov.Unread = append(cov.Unread, report.InputNote{Input: string(n.Input), Reason: err.Error()})
			}
			if n.Optional {
				degraded, degradedIn = append(degraded, err.Error()), append(degradedIn, string(n.Input))
			} else {
				missing, missingIn = append(missing, err.Error()), append(missingIn, string(n.Input))
			}
		}
		if len(missing) > 0 {
			cov.Skipped = append(cov.Skipped, report.Note{Check: info.ID, Reason: strings.Join(missing, "; "), Inputs: missingIn})
			continue
		}
		if len(degraded) > 0 {
			cov.Degraded = append(cov.Degraded, report.Note{Check: info.ID, Reason: strings.Join(degraded, "; "), Inputs: degradedIn})
		}
		cov.Checks = append(cov.Checks, info.ID)
		threshold := info.Threshold
		if minAge >= 0 {
			threshold = minAge
		}
		findings = append(findings, c.Run(s, threshold)...)
	}
	link(findings, cs)
	return findings, cov
}
