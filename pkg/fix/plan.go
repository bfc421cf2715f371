package fix

import (
	"context"
	"slices"
)

// Plan is what one run of fix applies, decided before anything is written: the steps (Select)
// and, read once, the budgets of the workloads whose serving pods they take away. The command
// shows it and hands it to Engine.Run, which applies it as it is: what the run reads meanwhile
// (each wave's fresh read, the resourceVersions its writes leave) stays in the run.
type Plan struct {
	// Steps are the actions, in the order Select chose them.
	Steps []*Step
	// Groups are the steps that take serving pods away, by workload, with the budgets read
	// when the plan was prepared (or refreshed).
	Groups []*Group
	// Action is the action the user chose (--action), "" when each finding's default is taken.
	Action string

	cat *Catalog
	// budgeted says the budgets were read: a plan put together by hand, without Prepare, has
	// no budget to take serving pods away within, so Run takes none away.
	budgeted bool
}

// Prepare plans the selected steps: it reads, once, the budget of each workload whose serving
// pods they take away. action is the action the user chose (--action), which lifts the refusal
// of a workload whose budget allows no pod away. A nil cat is NewCatalog().
func Prepare(ctx context.Context, c Clients, cat *Catalog, steps []*Step, action string) *Plan {
	if cat == nil {
		cat = NewCatalog()
	}
	return &Plan{Steps: steps, Groups: readBudgets(ctx, c, cat, steps, action), Action: action, cat: cat, budgeted: true}
}

// Refresh returns the plan with its budgets read again, leaving p as it was: a prompt can wait
// minutes, and a run acts on what the cluster is just before it writes.
func (p *Plan) Refresh(ctx context.Context, c Clients) *Plan {
	return Prepare(ctx, c, p.cat, p.Steps, p.Action)
}

// GroupChange is a workload whose budget reads differently in a refreshed plan than in the plan
// the user was shown: Before is nil for a workload the refreshed plan adds, After nil for one it
// no longer has.
type GroupChange struct {
	Before, After *Group
}

// Changes returns the workloads whose budget, refusal, failure or PodDisruptionBudgets differ
// between p and fresh, in fresh's order, then those only p had. The disruptions a
// PodDisruptionBudget allows move with every pod's readiness and each wave reads them again, so
// only which budgets apply is compared.
func (p *Plan) Changes(fresh *Plan) []GroupChange {
	before := map[string]*Group{}
	for _, g := range p.Groups {
		before[g.Budget.Workload.String()] = g
	}
	var out []GroupChange
	for _, g := range fresh.Groups {
		k := g.Budget.Workload.String()
		old, ok := before[k]
		delete(before, k)
		if !ok || !sameBudget(old, g) {
			out = append(out, GroupChange{Before: old, After: g})
		}
	}
	for _, g := range p.Groups {
		if _, gone := before[g.Budget.Workload.String()]; gone {
			out = append(out, GroupChange{Before: g})
		}
	}
	return out
}

func sameBudget(a, b *Group) bool {
	return a.Budget == b.Budget && a.Refusal == b.Refusal && a.Failure == b.Failure && slices.Equal(pdbNames(a), pdbNames(b))
}

func pdbNames(g *Group) []string {
	out := make([]string, len(g.PDBs))
	for i, p := range g.PDBs {
		out[i] = p.Name
	}
	return out
}
