package terminating

import (
	"fmt"
	"strings"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/knowledge"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// ownerState is what the check could find out about the controller that owns a finalizer.
type ownerState int

const (
	// ownerUnknown: the owner could not be identified, or not found where the check could look,
	// which does not show that it is gone.
	ownerUnknown ownerState = iota
	// ownerMissing: a known owner is certainly not installed; Where names the evidence.
	ownerMissing
	// ownerUnavailable: its workload exists with no available replica.
	ownerUnavailable
	// ownerRunning: its workload has available replicas.
	ownerRunning
	// ownerBuiltIn: a control-plane component, assumed running.
	ownerBuiltIn
)

// finalizerOwner is who is supposed to remove one finalizer, and how the check knows.
type finalizerOwner struct {
	Finalizer string
	// Owner names the controller in prose.
	Owner string
	State ownerState
	// How says how the owner was identified, so the user can verify it.
	How string
	// Where says what was found (or not) of the owner, and where the check looked.
	Where string
	// Cleanup is what removing the finalizer by hand skips.
	Cleanup string
	// Workload is the owner's workload found running (or the first found).
	Workload *workload
}

// line renders the owner as one evidence line.
func (o finalizerOwner) line() string {
	s := "finalizer " + o.Finalizer + ": " + o.How
	if o.Where != "" {
		s += "; " + o.Where
	}
	return s
}

// ownerCache resolves the owners of a subject's finalizers once per subject.
type ownerCache struct {
	a      *pass
	subj   subject
	done   bool
	owners []finalizerOwner
}

func newOwnerCache(a *pass, subj subject) *ownerCache {
	return &ownerCache{a: a, subj: subj}
}

func (c *ownerCache) get() []finalizerOwner {
	if !c.done {
		c.done = true
		for _, f := range c.subj.meta.GetFinalizers() {
			c.owners = append(c.owners, c.a.resolveOwner(c.subj, f))
		}
	}
	return c.owners
}

// missing returns the finalizers whose owner is certainly not installed.
func (c *ownerCache) missing() []finalizerOwner {
	var out []finalizerOwner
	for _, o := range c.get() {
		if o.State == ownerMissing {
			out = append(out, o)
		}
	}
	return out
}

// resolveOwner finds who removes a finalizer: the known-finalizer table first, then the field
// manager that added it (metadata.managedFields). A field manager's name is the writer's binary
// name (docs/domain.md, "Stuck deletion"): a workload named like it is a candidate owner, but
// none named like it is no evidence that the owner is gone. Only a known owner whose workload is
// absent from a search of every namespace is declared missing, or the operator of a custom
// resource whose leader Lease proves it uninstalled (operatorFromLease).
func (a *pass) resolveOwner(subj subject, fin string) finalizerOwner {
	m := subj.meta
	o := finalizerOwner{Finalizer: fin}
	mgrs := managerNames(finalizerManagers(m, fin))
	row, known := knowledge.LookupFinalizer(fin)
	if known {
		o.Owner, o.Cleanup = row.Owner, row.Cleanup
		o.How = "owner " + row.Owner + " (known-finalizer table)"
		if row.BuiltIn {
			o.State = ownerBuiltIn
			o.Where = "built into the control plane, assumed running"
			return o
		}
	} else {
		o.Owner = "unknown"
		o.How = "not in the known-finalizer table"
		if len(mgrs) > 0 {
			o.Owner = "the controller that writes as field manager " + strings.Join(mgrs, ", ")
			o.Cleanup = "whatever cleanup that controller does before removing it (unknown to this tool)"
		}
	}
	if len(mgrs) == 0 {
		if !known {
			o.How += ", and metadata.managedFields name no manager that added it"
		}
	} else {
		o.How += "; added by field manager " + strings.Join(mgrs, ", ") + " (metadata.managedFields)"
	}
	locatable := known && (len(row.Workloads) > 0 || row.ImageRepository != "")
	if locatable {
		if ws := a.tableWorkloads(row); len(ws) > 0 {
			o.setFromWorkloads(ws)
			return o
		}
	}
	var candidates, notes []string
	for _, mgr := range mgrs {
		switch knowledge.ClassifyFieldManager(mgr) {
		case knowledge.ManagerControlPlane:
			if !known {
				o.State = ownerBuiltIn
				o.Where = mgr + " is a control-plane component, assumed running"
				return o
			}
		case knowledge.ManagerClient:
			notes = append(notes, mgr+" is a client command a person or a script ran, which names no controller")
		case knowledge.ManagerGeneric:
			notes = append(notes, mgr+" is the default binary name of many controllers, which names none of them")
		default:
			candidates = append(candidates, mgr)
		}
	}
	if ws := a.managerWorkloads(candidates); len(ws) > 0 {
		o.setFromWorkloads(ws)
		o.Where = "named like the field manager: " + o.Where
		return o
	}
	if !known && subj.group != "" {
		if a.operatorFromLease(&o, subj.group) || o.State == ownerRunning {
			o.How += "; " + o.Owner
			return o
		}
		if o.Where != "" {
			notes = append(notes, o.Where)
		}
	}
	o.State = ownerUnknown
	switch {
	case locatable:
		where, everywhere := a.searched()
		if everywhere {
			o.State = ownerMissing
			o.Where = "not installed: " + tableLocator(row) + " among " + where + " (listed in full)"
			return o
		}
		notes = append(notes, tableLocator(row)+" among "+where+", so whether it is installed elsewhere is unknown")
	case len(candidates) > 0:
		where, _ := a.searched()
		notes = append(notes, "no workload named "+orList(candidates)+" or with a container so named among "+where+
			" (a field manager is named after the writer's binary, not its workload: this does not show the owner is gone)")
	default:
		notes = append(notes, "the check has nothing to look the owner up by")
	}
	o.Where = strings.Join(notes, "; ")
	return o
}

// setFromWorkloads sets the owner's state from the workloads found for it.
func (o *finalizerOwner) setFromWorkloads(ws []workload) {
	var parts []string
	o.State = ownerUnavailable
	for i := range ws {
		parts = append(parts, ws[i].status())
		if ws[i].available > 0 && o.State != ownerRunning {
			o.State = ownerRunning
			o.Workload = &ws[i]
		}
	}
	if o.Workload == nil {
		o.Workload = &ws[0]
	}
	o.Where = strings.Join(parts, ", ")
}

func orList(items []string) string { return strings.Join(items, " or ") }

// removeFinalizerFix proposes removing one finalizer whose owner is missing.
func removeFinalizerFix(o finalizerOwner, risk report.Risk) report.Fix {
	cleanup := o.Cleanup
	if cleanup == "" {
		cleanup = "the cleanup its owner would do"
	}
	return report.Fix{
		Action:      checks.ActionRemoveFinalizer,
		Description: fmt.Sprintf("Remove finalizer %s (only that one). Skipped: %s.", o.Finalizer, cleanup),
		Risk:        risk,
		Params:      map[string]string{"finalizer": o.Finalizer},
	}
}

// finalizerOwners reports the remaining finalizers: a missing owner first, else owners that
// run but have not removed theirs.
func (a *pass) finalizerOwners(t *target) (checks.Draft, bool) {
	subj, owners := t.subject, t.owners
	all := owners.get()
	if len(all) == 0 {
		return checks.Draft{}, false
	}
	var ev []string
	for _, o := range all {
		ev = append(ev, o.line())
	}
	age := checks.Age(a.now, subj.meta.GetDeletionTimestamp().Time)
	if missing := owners.missing(); len(missing) > 0 {
		var names, fixesFor []string
		var fixes []report.Fix
		for _, o := range missing {
			names = append(names, o.Finalizer)
			fixesFor = append(fixesFor, fmt.Sprintf("%s (%s; %s)", o.Finalizer, o.Owner, o.Where))
			fixes = append(fixes, removeFinalizerFix(o, report.RiskMedium))
		}
		ev = append(ev, a.warningEvents(subj.kind, subj.meta, 3)...)
		return checks.Draft{
			RootCause: RootCauseFinalizerOwnerMissing,
			Summary:   fmt.Sprintf("%s for %s: no controller runs for finalizer %s", subj.noun, age, strings.Join(names, ", ")),
			Message: fmt.Sprintf("The deletion waits for finalizer %s: its owner is not installed in this cluster, so "+
				"nothing will ever remove it. Removing it by hand skips the cleanup it guards.", strings.Join(fixesFor, ", ")),
			Evidence: ev,
			Fixes:    fixes,
		}, true
	}
	var parts []string
	unknown, present := 0, 0
	for _, o := range all {
		parts = append(parts, o.Finalizer+" ("+notActingReason(o)+")")
		if o.State == ownerUnknown {
			unknown++
		} else {
			present++
		}
	}
	ev = append(ev, a.warningEvents(subj.kind, subj.meta, 3)...)
	for _, o := range all {
		if o.Workload != nil {
			ev = append(ev, a.warningEvents(o.Workload.kind, o.Workload.meta, 2)...)
		}
	}
	msg := fmt.Sprintf("The deletion waits for %s.", strings.Join(parts, "; "))
	if present > 0 {
		msg += " An owner that is there has not finished its cleanup; its Warning events and logs say why."
	}
	if unknown > 0 {
		msg += " An owner that was not found may run under another name, in a namespace not searched, or outside the " +
			"cluster: find it before anything else."
	}
	msg += " Removing a finalizer by hand would skip cleanup its owner still intends to do."
	summary := "not removed by its owner"
	if present == 0 {
		summary = "not removed; its owner was not found"
	}
	return checks.Draft{
		RootCause: RootCauseFinalizerOwnerNotActing,
		Summary:   fmt.Sprintf("%s for %s: finalizer %s %s", subj.noun, age, strings.Join(subj.meta.GetFinalizers(), ", "), summary),
		Message:   msg,
		Evidence:  ev,
	}, true
}

// notActingReason says in a few words why a present owner has not removed its finalizer.
func notActingReason(o finalizerOwner) string {
	switch o.State {
	case ownerRunning:
		return o.Owner + " runs but has not removed it"
	case ownerUnavailable:
		return o.Owner + " has no available replica, so it cannot remove it"
	case ownerBuiltIn:
		return o.Owner + " is part of the control plane and has not removed it"
	}
	return "its owner was not found, which does not show it is gone"
}
