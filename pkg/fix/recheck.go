package fix

import (
	"context"
	"fmt"
	"strings"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/collect"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/scan"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// Rechecker re-runs one check on fresh data, scoped to a namespace ("" is every namespace and
// the cluster-scoped objects).
type Rechecker interface {
	Recheck(ctx context.Context, c checks.Check, namespace string) (*report.Report, error)
}

// ScanRechecker re-checks with a real scan: the check's own inputs, read now, with no age
// threshold (the plan already judged the condition old enough; only whether it still holds matters).
type ScanRechecker struct {
	Clients  collect.Clients
	Settings snapshot.Settings
}

// Recheck implements Rechecker.
func (r ScanRechecker) Recheck(ctx context.Context, c checks.Check, namespace string) (*report.Report, error) {
	rep, _, err := scan.Run(ctx, r.Clients, scan.Options{
		Scope:    snapshot.Scope{Namespace: namespace, AllNamespaces: namespace == ""},
		Settings: r.Settings,
		Checks:   []checks.Check{c},
		MinAge:   0,
	})
	if err != nil {
		return nil, fmt.Errorf("re-check %s: %w", c.Info().ID, err)
	}
	return rep, nil
}

// view indexes fresh findings for judging a step.
type view struct {
	byID map[string]report.Finding
	// byObject holds findings by check and object uid, to tell a changed diagnosis from a cleared one.
	byObject map[string][]report.Finding
	// skipped maps a check to why the re-check could not run it.
	skipped map[string]string
}

func newView(reports ...*report.Report) *view {
	v := &view{byID: map[string]report.Finding{}, byObject: map[string][]report.Finding{}, skipped: map[string]string{}}
	for _, r := range reports {
		if r == nil {
			continue
		}
		for _, f := range r.Findings {
			v.byID[f.ID] = f
			if f.Object.UID != "" {
				k := f.Check + "\x00" + f.Object.UID
				v.byObject[k] = append(v.byObject[k], f)
			}
		}
		for _, n := range r.Coverage.Skipped {
			v.skipped[n.Check] = n.Reason
		}
	}
	return v
}

// judge decides from the fresh findings whether a step may go ahead. It returns the empty status
// to go ahead, else the result: already resolved when none of the step's findings (or none of
// their proposals of this fix) are still reported; refused when a finding is still reported but
// its object changed since the plan, or the same object now has another diagnosis; failed when
// the check could not run. expectRV returns the resourceVersion a finding's object should have:
// the plan's, or the one a write of this run produced.
func judge(a Action, s *Step, v *view, expectRV func(report.ObjectRef) string) (Status, string) {
	key := a.Key(s.Params)
	var resolvedReasons []string
	live := 0
	for _, f := range s.Findings {
		if reason, skipped := v.skipped[f.Check]; skipped {
			return StatusFailed, fmt.Sprintf("cannot re-check finding %s: check %s could not run (%s)", f.ID, f.Check, reason)
		}
		fresh, present := v.byID[f.ID]
		if !present {
			if others := v.byObject[f.Check+"\x00"+f.Object.UID]; f.Object.UID != "" && len(others) > 0 {
				o := others[0]
				return StatusRefused, fmt.Sprintf("%s is now diagnosed as %s (finding %s), not %s as planned: scan again and review",
					f.Object, o.RootCause.ID, o.ID, f.RootCause.ID)
			}
			resolvedReasons = append(resolvedReasons, fmt.Sprintf("finding %s is no longer reported by %s", f.ID, f.Check))
			continue
		}
		if !proposes(fresh, a, s.Action, key) {
			what := s.Action
			if key != "" {
				what += " " + key
			}
			resolvedReasons = append(resolvedReasons, fmt.Sprintf("finding %s no longer proposes %s", f.ID, what))
			continue
		}
		if fresh.Object.UID != f.Object.UID {
			return StatusRefused, fmt.Sprintf("%s was replaced since the plan: uid %s, the plan saw %s", f.Object, fresh.Object.UID, f.Object.UID)
		}
		if want := expectRV(f.Object); fresh.Object.ResourceVersion != want {
			return StatusRefused, fmt.Sprintf("%s changed since the plan: resourceVersion %s, the plan saw %s", f.Object, fresh.Object.ResourceVersion, want)
		}
		live++
	}
	if live > 0 {
		return "", ""
	}
	return StatusAlreadyResolved, strings.Join(resolvedReasons, "; ")
}

// proposes reports whether a finding still proposes the action with the same key.
func proposes(f report.Finding, a Action, action, key string) bool {
	for _, fx := range f.Fixes {
		if fx.Action == action && a.Key(fx.Params) == key {
			return true
		}
	}
	return false
}
