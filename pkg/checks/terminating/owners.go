package terminating

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/knowledge"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// ownerState is what the check could find out about the controller that owns a finalizer.
type ownerState int

const (
	// ownerUnknown: the owner could not be identified or its Deployments were not read.
	ownerUnknown ownerState = iota
	// ownerMissing: the owner was identified and no Deployment of it exists.
	ownerMissing
	// ownerUnavailable: its Deployment exists with no available replica.
	ownerUnavailable
	// ownerRunning: its Deployment has available replicas.
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
	// Where says what was found (or not) of the owner: Deployments and their availability.
	Where string
	// Cleanup is what removing the finalizer by hand skips.
	Cleanup    string
	Deployment *appsv1.Deployment
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
	a      *analysis
	subj   subject
	done   bool
	owners []finalizerOwner
}

func newOwnerCache(a *analysis, subj subject) *ownerCache {
	return &ownerCache{a: a, subj: subj}
}

func (c *ownerCache) get() []finalizerOwner {
	if !c.done {
		c.done = true
		for _, f := range c.subj.meta.GetFinalizers() {
			c.owners = append(c.owners, c.a.resolveOwner(c.subj.meta, f))
		}
	}
	return c.owners
}

// missing returns the finalizers whose owner is known not to run.
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
// manager that added the finalizer (metadata.managedFields).
func (a *analysis) resolveOwner(m metav1.Object, fin string) finalizerOwner {
	o := finalizerOwner{Finalizer: fin}
	mgrs := managerNames(finalizerManagers(m, fin))
	row, known := knowledge.LookupFinalizer(fin)
	tableWhere := ""
	if known {
		o.Owner, o.Cleanup = row.Owner, row.Cleanup
		o.How = "owner " + row.Owner + " (known-finalizer table)"
		if row.BuiltIn {
			o.State = ownerBuiltIn
			o.Where = "built into the control plane, assumed running"
			return o
		}
		if len(row.Deployments) > 0 || row.ImageRepository != "" {
			deps := a.tableDeployments(row)
			o.setFromDeployments(deps, a.read(snapshot.InputControllers), tableLocator(row))
			if o.State != ownerMissing || len(mgrs) == 0 {
				return o
			}
			tableWhere = o.Where
			// A renamed install: the manager that added the finalizer may still be found.
		}
	}
	if len(mgrs) == 0 {
		if !known {
			o.Owner = "unknown"
			o.How = "not in the known-finalizer table, and metadata.managedFields name no manager that added it"
		}
		return o
	}
	if !known {
		o.Owner = "field manager " + strings.Join(mgrs, ", ")
		o.Cleanup = "whatever cleanup " + strings.Join(mgrs, ", ") + " does before removing it (unknown to this tool)"
		o.How = "added by field manager " + strings.Join(mgrs, ", ") + " (metadata.managedFields; not in the known-finalizer table)"
	} else {
		o.How += "; added by field manager " + strings.Join(mgrs, ", ") + " (metadata.managedFields)"
	}
	for _, mgr := range mgrs {
		switch knowledge.ClassifyFieldManager(mgr) {
		case knowledge.ManagerControlPlane:
			o.State = ownerBuiltIn
			o.Where = mgr + " is a control-plane component, assumed running"
			return o
		case knowledge.ManagerClient:
			o.How += "; " + mgr + " is a client command, not a controller"
		}
	}
	var deps []*appsv1.Deployment
	for _, mgr := range mgrs {
		deps = append(deps, a.managerDeployments(mgr)...)
	}
	o.setFromDeployments(uniqDeployments(deps), a.read(snapshot.InputControllers),
		"no Deployment named "+orList(mgrs)+" or running a container named so")
	if o.State == ownerMissing && tableWhere != "" {
		o.Where = tableWhere + ", " + o.Where
	}
	return o
}

// setFromDeployments sets the owner's state from the Deployments found for it.
func (o *finalizerOwner) setFromDeployments(deps []*appsv1.Deployment, controllersRead bool, notFound string) {
	if len(deps) == 0 {
		if controllersRead {
			o.State = ownerMissing
			o.Where = notFound
		} else {
			o.State = ownerUnknown
			o.Where = "Deployments were not (all) read, so whether it runs is unknown"
		}
		return
	}
	var parts []string
	o.State = ownerUnavailable
	for _, d := range deps {
		parts = append(parts, deploymentStatus(d))
		if d.Status.AvailableReplicas > 0 && o.State != ownerRunning {
			o.State = ownerRunning
			o.Deployment = d
		}
	}
	if o.Deployment == nil {
		o.Deployment = deps[0]
	}
	o.Where = strings.Join(parts, ", ")
}

func deploymentStatus(d *appsv1.Deployment) string {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	return fmt.Sprintf("Deployment %s/%s: %d/%d available", d.Namespace, d.Name, d.Status.AvailableReplicas, want)
}

func tableLocator(row knowledge.FinalizerOwner) string {
	var where []string
	if len(row.Deployments) > 0 {
		where = append(where, "no Deployment "+strings.Join(row.Deployments, " or "))
	}
	if row.ImageRepository != "" {
		where = append(where, "no Deployment running image "+row.ImageRepository)
	}
	return strings.Join(where, ", ")
}

// tableDeployments finds a known owner's Deployments: at its default places, else by image.
func (a *analysis) tableDeployments(row knowledge.FinalizerOwner) []*appsv1.Deployment {
	var out []*appsv1.Deployment
	for _, nn := range row.Deployments {
		ns, name, ok := strings.Cut(nn, "/")
		if !ok {
			continue
		}
		if d, ok := a.s.Deployment(ns, name); ok {
			out = append(out, d)
		}
	}
	if len(out) > 0 || row.ImageRepository == "" {
		return out
	}
	return a.imageDeployments(row.ImageRepository)
}

// imageDeployments returns the Deployments with a container running the image repository.
func (a *analysis) imageDeployments(repo string) []*appsv1.Deployment {
	var out []*appsv1.Deployment
	for _, d := range a.s.Deployments {
		for _, c := range d.Spec.Template.Spec.Containers {
			if knowledge.ImageRepository(c.Image) == repo {
				out = append(out, d)
				break
			}
		}
	}
	return out
}

// managerDeployments returns the Deployments a field manager may stand for: one named like it,
// or one with a container named like it.
func (a *analysis) managerDeployments(mgr string) []*appsv1.Deployment {
	var out []*appsv1.Deployment
	for _, d := range a.s.Deployments {
		if d.Name == mgr {
			out = append(out, d)
			continue
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			if c.Name == mgr {
				out = append(out, d)
				break
			}
		}
	}
	return out
}

func uniqDeployments(in []*appsv1.Deployment) []*appsv1.Deployment {
	seen := map[*appsv1.Deployment]bool{}
	var out []*appsv1.Deployment
	for _, d := range in {
		if !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	return out
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
func (a *analysis) finalizerOwners(subj subject, owners *ownerCache) (checks.Draft, bool) {
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
			fixesFor = append(fixesFor, o.Finalizer+" ("+o.Owner+")")
			fixes = append(fixes, removeFinalizerFix(o, report.RiskMedium))
		}
		ev = append(ev, a.warningEvents(subj.kind, subj.meta, 3)...)
		return checks.Draft{
			RootCause: RootCauseFinalizerOwnerMissing,
			Summary:   fmt.Sprintf("%s for %s: no controller runs for finalizer %s", subj.noun, age, strings.Join(names, ", ")),
			Message: fmt.Sprintf("The deletion waits for finalizer %s, but its owner does not run in this cluster, so "+
				"nothing will ever remove it. Removing it by hand skips the cleanup it guards.", strings.Join(fixesFor, ", ")),
			Evidence: ev,
			Fixes:    fixes,
		}, true
	}
	var parts []string
	for _, o := range all {
		parts = append(parts, o.Finalizer+" ("+notActingReason(o)+")")
	}
	ev = append(ev, a.warningEvents(subj.kind, subj.meta, 3)...)
	for _, o := range all {
		if o.Deployment != nil {
			ev = append(ev, a.warningEvents("Deployment", o.Deployment, 2)...)
		}
	}
	return checks.Draft{
		RootCause: RootCauseFinalizerOwnerNotActing,
		Summary:   fmt.Sprintf("%s for %s: finalizer %s not removed by its owner", subj.noun, age, strings.Join(subj.meta.GetFinalizers(), ", ")),
		Message: fmt.Sprintf("The deletion waits for %s. Its owner has not finished its cleanup; its Warning events and "+
			"logs say why. Removing the finalizer by hand would skip cleanup the owner still intends to do.", strings.Join(parts, "; ")),
		Evidence: ev,
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
	return "owner " + o.Owner + " could not be checked"
}
