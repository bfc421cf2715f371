package fix

import (
	"fmt"
	"strings"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/internal/uniq"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// Select turns the selected findings into steps, without reading the cluster. A finding contributes every fix that has the
// selected action (the first fix's action unless sel.Action is set), so a finding proposing to
// remove two finalizers has both removed. Findings the user named that cannot be planned (no
// such ID, no fix, not that action, a fix that cannot be applied as proposed) come back as
// refused results; unnamed findings without the action are simply not selected. A step with a
// Hazard is refused, with the hazard as the reason, unless sel.Action names its action.
func Select(cat *Catalog, findings []report.Finding, sel Selection) ([]*Step, []Result) {
	given := map[string]bool{}
	for _, id := range sel.IDs {
		given[id] = true
	}
	named, viaRoot := rootsOfChains(findings, given)
	byID := map[string]bool{}
	var steps []*Step
	var refused []Result
	index := map[string]*Step{}
	held := map[string]int{} // steps refused for their hazard, by key, at their index in refused
	for _, f := range findings {
		byID[f.ID] = true
		if len(named) > 0 && !named[f.ID] || viaRoot[f.ID] {
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
			step, a, err := stepOf(cat, f, fx)
			if err != nil {
				refused = append(refused, findingResult(f, fx.Action, err.Error()))
				continue
			}
			key := stepKey(step, a)
			step.HazardAccepted = sel.Action == step.Action
			if step.Hazard != "" && !step.HazardAccepted {
				if i, ok := held[key]; ok {
					refused[i].Findings = append(refused[i].Findings, f.ID)
					continue
				}
				held[key] = len(refused)
				refused = append(refused, hazardResult(step))
				continue
			}
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

// rootsOfChains names, for each named finding that waits on stuck objects (blockedBy) and offers
// no fix of its own, the findings of those objects that carry fixes instead: the root of a chain
// (the findings above it carry none), or each of several objects waited on side by side. Fixing
// the finding so applies their fixes with their own guards. It returns, as new maps, the named
// findings with those roots added, and the findings so redirected; given is left as it was.
func rootsOfChains(findings []report.Finding, given map[string]bool) (named, via map[string]bool) {
	fixable := map[string]bool{}
	for _, f := range findings {
		fixable[f.ID] = len(f.Fixes) > 0
	}
	named = make(map[string]bool, len(given))
	for id, ok := range given {
		named[id] = ok
	}
	via = map[string]bool{}
	for _, f := range findings {
		if !given[f.ID] || len(f.Fixes) > 0 {
			continue
		}
		for _, b := range f.BlockedBy {
			if fixable[b.FindingID] {
				named[b.FindingID], via[f.ID] = true, true
			}
		}
	}
	return named, via
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
		return nil, fmt.Sprintf("finding does not offer %s (it offers %s)", action, strings.Join(uniq.Of(offered), ", "))
	}
	return out, ""
}

// stepOf validates one fix against its action and builds its step.
func stepOf(cat *Catalog, f report.Finding, fx report.Fix) (*Step, Action, error) {
	a, ok := cat.Lookup(fx.Action)
	if !ok {
		return nil, nil, fmt.Errorf("unknown action %q: this build cannot apply it", fx.Action)
	}
	step, err := a.Step(f, fx)
	if err != nil {
		return nil, nil, err
	}
	doc := a.Doc()
	step.Action = doc.ID
	if step.Risk == "" {
		step.Risk = fx.Risk
	}
	if step.Risk == "" {
		step.Risk = doc.Risk
	}
	step.Findings = []report.Finding{f}
	return step, a, nil
}

// stepKey identifies a step: the action, the object it writes and what the action changes there.
func stepKey(s *Step, a Action) string {
	t := s.Target
	return strings.Join([]string{s.Action, t.APIVersion, t.Kind, t.Namespace, t.Name, t.UID, a.Key(s.Params)}, "\x00")
}

// hazardResult refuses a high-risk step the user did not name, saying why and how to apply it.
func hazardResult(s *Step) Result {
	r := newResult(s)
	r.Status = StatusRefused
	r.Reason = fmt.Sprintf("high risk, applied only when named with --action %s: %s", s.Action, s.Hazard)
	return r
}

// findingResult is a refused result for a finding that could not be planned.
func findingResult(f report.Finding, action, reason string) Result {
	return Result{Findings: []string{f.ID}, Check: f.Check, RootCause: f.RootCause.ID, Action: action,
		Object: f.Object, Status: StatusRefused, Reason: reason}
}
