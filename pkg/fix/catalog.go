package fix

import "github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"

// ActionDoc describes a fix action for people: `checks`, `explain` and the README read it.
type ActionDoc struct {
	ID            string
	Title         string
	Description   string
	Preconditions string
	// Risk is the risk of the action when the finding's fix does not state one.
	Risk report.Risk
	// TakesServingPod marks an action that removes a pod that may be serving: fix applies it in
	// waves within the owning workload's budget (budget.go).
	TakesServingPod bool
}

// Catalog is the set of fix actions a build can apply. It is built by NewCatalog and passed to
// whatever plans, applies or documents fixes, so there is no package-level registry.
type Catalog struct {
	actions []Action
	byID    map[string]Action
}

// NewCatalog returns the catalog of every built-in fix action, in the order `checks -o json`
// lists them.
func NewCatalog() *Catalog {
	actions := []Action{requeueWorkload{}, restartLeader{}, removeFinalizer{}, forceDelete(), evictPod(), newDeletePod()}
	c := &Catalog{actions: actions, byID: make(map[string]Action, len(actions))}
	for _, a := range actions {
		c.byID[a.Doc().ID] = a
	}
	return c
}

// All returns every action, in catalog order.
func (c *Catalog) All() []Action {
	return append([]Action(nil), c.actions...)
}

// Docs returns the documentation of every action, in catalog order.
func (c *Catalog) Docs() []ActionDoc {
	docs := make([]ActionDoc, 0, len(c.actions))
	for _, a := range c.actions {
		docs = append(docs, a.Doc())
	}
	return docs
}

// Lookup returns the action with the given ID.
func (c *Catalog) Lookup(id string) (Action, bool) {
	a, ok := c.byID[id]
	return a, ok
}
