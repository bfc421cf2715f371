// Package fix applies the fix actions that findings propose: select -> plan -> confirm -> per
// action: re-check -> precondition -> write -> verify -> record.
//
// Every write is preceded by a fresh re-check of the finding and a fresh read of the object, and
// carries a precondition the apiserver enforces (a JSON-patch test, a UID or resourceVersion
// precondition), so a change made by someone else between the plan and the write makes the write
// fail instead of acting on an object nobody looked at.
package fix

import (
	"fmt"
	"strings"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// DryRun says how far `fix` goes: all the way, only printing the plan, or sending every write
// with API dry-run.
type DryRun string

// Dry-run modes, as kubectl names them.
const (
	DryRunNone   DryRun = "none"
	DryRunClient DryRun = "client"
	DryRunServer DryRun = "server"
)

// ParseDryRun parses --dry-run.
func ParseDryRun(s string) (DryRun, error) {
	switch DryRun(s) {
	case DryRunNone, DryRunClient, DryRunServer:
		return DryRun(s), nil
	case "":
		return DryRunNone, nil
	}
	return "", fmt.Errorf("invalid --dry-run %q: want none, client or server", s)
}

// Status is the result of one action.
type Status string

// Results of an action.
const (
	// StatusApplied: written, and the effect verified.
	StatusApplied Status = "applied"
	// StatusAlreadyResolved: the finding (or this fix of it) is no longer true; nothing written.
	StatusAlreadyResolved Status = "already-resolved"
	// StatusRefused: a precondition did not hold (the object changed, not confirmed, a PDB said
	// no, the fix cannot be applied as proposed); nothing written.
	StatusRefused Status = "refused"
	// StatusFailed: the write or the re-check failed, or the write did not have its effect.
	StatusFailed Status = "failed"
	// StatusDryRun: nothing written on purpose (--dry-run); with server dry-run the server accepted it.
	StatusDryRun Status = "dry-run"
)

// OK reports whether the status lets `fix` exit 0.
func (s Status) OK() bool {
	return s == StatusApplied || s == StatusAlreadyResolved || s == StatusDryRun
}

// Step is one planned action: an action on one object, resolving one or more findings. Findings
// that propose the same action on the same object (five pods of one CloneSet asking to requeue
// it, ten workloads asking to restart one leader) share a step, so it is applied once.
type Step struct {
	Action string `json:"action"`
	// Target is the object the action writes. Its UID and ResourceVersion, when known, are the
	// ones the plan saw.
	Target report.ObjectRef `json:"object"`
	// Change says in one line what the write changes.
	Change string            `json:"change"`
	Risk   report.Risk       `json:"risk"`
	Params map[string]string `json:"params,omitempty"`
	// Findings are the findings this step resolves, in plan order.
	Findings []report.Finding `json:"-"`
}

// FindingIDs returns the IDs of the step's findings.
func (s *Step) FindingIDs() []string {
	ids := make([]string, 0, len(s.Findings))
	for _, f := range s.Findings {
		ids = append(ids, f.ID)
	}
	return ids
}

// Selection picks the findings and actions to apply.
type Selection struct {
	// IDs names findings; empty selects every finding that carries a fix.
	IDs []string
	// Check keeps only findings of this check.
	Check string
	// Action picks this action instead of each finding's default (its first fix's action).
	Action string
}

// Plan turns the selected findings into steps. A finding contributes every fix that has the
// selected action (the first fix's action unless sel.Action is set), so a finding proposing to
// remove two finalizers has both removed. Findings the user named that cannot be planned (no
// such ID, no fix, not that action, a fix that cannot be applied as proposed) come back as
// refused results; unnamed findings without the action are simply not selected.
func Plan(findings []report.Finding, sel Selection) ([]*Step, []Result) {
	named := map[string]bool{}
	for _, id := range sel.IDs {
		named[id] = true
	}
	byID := map[string]bool{}
	var steps []*Step
	var refused []Result
	index := map[string]*Step{}
	for _, f := range findings {
		byID[f.ID] = true
		if len(named) > 0 && !named[f.ID] {
			continue
		}
		if sel.Check != "" && f.Check != sel.Check {
			if named[f.ID] {
				refused = append(refused, findingResult(f, sel.Action, fmt.Sprintf("finding is from check %s, not --check %s", f.Check, sel.Check)))
			}
			continue
		}
		fixes, reason := chooseFixes(f, sel.Action)
		if len(fixes) == 0 {
			if named[f.ID] {
				refused = append(refused, findingResult(f, sel.Action, reason))
			}
			continue
		}
		for _, fx := range fixes {
			step, err := planFix(f, fx)
			if err != nil {
				refused = append(refused, findingResult(f, fx.Action, err.Error()))
				continue
			}
			key := stepKey(step)
			if prev, ok := index[key]; ok {
				prev.Findings = append(prev.Findings, f)
				continue
			}
			index[key] = step
			steps = append(steps, step)
		}
	}
	for _, id := range sel.IDs {
		if !byID[id] {
			refused = append(refused, Result{Findings: []string{id}, Action: sel.Action, Status: StatusRefused,
				Reason: "no finding with this ID: resolved since it was reported, or outside the scanned scope (-n/-A, --checks)"})
			byID[id] = true // report a repeated ID once
		}
	}
	return steps, refused
}

// chooseFixes returns the finding's fixes with the selected action, or why there are none.
func chooseFixes(f report.Finding, action string) ([]report.Fix, string) {
	if len(f.Fixes) == 0 {
		return nil, "finding offers no fix"
	}
	if action == "" {
		action = f.Fixes[0].Action
	}
	var out []report.Fix
	var offered []string
	for _, fx := range f.Fixes {
		offered = append(offered, fx.Action)
		if fx.Action == action {
			out = append(out, fx)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Sprintf("finding does not offer %s (it offers %s)", action, strings.Join(uniq(offered), ", "))
	}
	return out, ""
}

// planFix validates one fix against its action and builds its step.
func planFix(f report.Finding, fx report.Fix) (*Step, error) {
	a, ok := Lookup(fx.Action)
	if !ok {
		return nil, fmt.Errorf("unknown action %q: this build cannot apply it", fx.Action)
	}
	step, err := a.Plan(f, fx)
	if err != nil {
		return nil, err
	}
	step.Action = a.ID()
	if step.Risk == "" {
		step.Risk = fx.Risk
	}
	if step.Risk == "" {
		step.Risk = a.DefaultRisk()
	}
	step.Findings = []report.Finding{f}
	return step, nil
}

// stepKey identifies a step: the action, the object it writes and what the action changes there.
func stepKey(s *Step) string {
	a, _ := Lookup(s.Action)
	t := s.Target
	return strings.Join([]string{s.Action, t.APIVersion, t.Kind, t.Namespace, t.Name, t.UID, a.Key(s.Params)}, "\x00")
}

// findingResult is a refused result for a finding that could not be planned.
func findingResult(f report.Finding, action, reason string) Result {
	return Result{Findings: []string{f.ID}, Check: f.Check, RootCause: f.RootCause.ID, Action: action,
		Object: f.Object, Status: StatusRefused, Reason: reason}
}

func uniq(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
