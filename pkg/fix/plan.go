package fix

import "context"

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
