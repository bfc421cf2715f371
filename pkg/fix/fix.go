// Package fix applies the fix actions that findings propose: select (Select) -> plan (Prepare,
// which reads the budgets once) -> confirm -> Engine.Run of the plan (Refresh first when a prompt
// may have waited), per action: re-check -> precondition -> write -> verify -> record. Run leaves
// the plan as it was; what it reads while running is its own.
//
// Every write is preceded by a fresh re-check of the finding and a fresh read of the object, and
// carries a precondition the apiserver enforces (a JSON-patch test, a UID or resourceVersion
// precondition), so a change made by someone else between the plan and the write makes the write
// fail instead of acting on an object nobody looked at.
//
// The package never prints: the command renders plans and results (pkg/render) and hears of
// progress through the engine's callbacks (Options.OnStepStarted and friends).
package fix

import (
	"fmt"

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
	// StatusDeferred: not applied because the workload's disruption budget did not allow it
	// within --timeout (or --wait=false, or an interrupt, stopped before its wave); nothing written.
	StatusDeferred Status = "deferred"
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
	// Hazard, when set, says why the step is high risk and applied only when the user chooses its
	// action (--action); Select refuses it otherwise, with Hazard as the reason.
	Hazard string `json:"hazard,omitempty"`
	// HazardAccepted says the user chose the step's action (--action), accepting its Hazard; an
	// action's Apply re-checks its hazard on fresh reads unless it was accepted.
	HazardAccepted bool `json:"-"`
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
