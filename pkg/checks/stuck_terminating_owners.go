package checks

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/knowledge"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// stOwnerState is what the check could find out about the controller that owns a finalizer.
type stOwnerState int

const (
	// stOwnerUnknown: the owner could not be identified or its Deployments were not read.
	stOwnerUnknown stOwnerState = iota
	// stOwnerMissing: the owner was identified and no Deployment of it exists.
	stOwnerMissing
	// stOwnerUnavailable: its Deployment exists with no available replica.
	stOwnerUnavailable
	// stOwnerRunning: its Deployment has available replicas.
	stOwnerRunning
	// stOwnerBuiltIn: a control-plane component, assumed running.
	stOwnerBuiltIn
)

// stFinalizerOwner is who is supposed to remove one finalizer, and how the check knows.
type stFinalizerOwner struct {
	Finalizer string
	// Owner names the controller in prose.
	Owner string
	State stOwnerState
	// How says how the owner was identified, so the user can verify it.
	How string
	// Where says what was found (or not) of the owner: Deployments and their availability.
	Where string
	// Cleanup is what removing the finalizer by hand skips.
	Cleanup    string
	Deployment *appsv1.Deployment
}

// line renders the owner as one evidence line.
func (o stFinalizerOwner) line() string {
	s := "finalizer " + o.Finalizer + ": " + o.How
	if o.Where != "" {
		s += "; " + o.Where
	}
	return s
}

// stOwnerCache resolves the owners of a subject's finalizers once per subject.
type stOwnerCache struct {
	a      *termAnalysis
	subj   stSubject
	done   bool
	owners []stFinalizerOwner
}

func stNewOwnerCache(a *termAnalysis, subj stSubject) *stOwnerCache {
	return &stOwnerCache{a: a, subj: subj}
}

func (c *stOwnerCache) get() []stFinalizerOwner {
	if !c.done {
		c.done = true
		for _, f := range c.subj.meta.GetFinalizers() {
			c.owners = append(c.owners, c.a.resolveOwner(c.subj.meta, f))
		}
	}
	return c.owners
}

// missing returns the finalizers whose owner is known not to run.
func (c *stOwnerCache) missing() []stFinalizerOwner {
	var out []stFinalizerOwner
	for _, o := range c.get() {
		if o.State == stOwnerMissing {
			out = append(out, o)
		}
	}
	return out
}

// resolveOwner finds who removes a finalizer: the known-finalizer table first, then the field
// manager that added the finalizer (metadata.managedFields).
func (a *termAnalysis) resolveOwner(m metav1.Object, fin string) stFinalizerOwner {
	o := stFinalizerOwner{Finalizer: fin}
	mgrs := stManagerNames(stFinalizerManagers(m, fin))
	row, known := knowledge.LookupFinalizer(fin)
	tableWhere := ""
	if known {
		o.Owner, o.Cleanup = row.Owner, row.Cleanup
		o.How = "owner " + row.Owner + " (known-finalizer table)"
		if row.BuiltIn {
			o.State = stOwnerBuiltIn
			o.Where = "built into the control plane, assumed running"
			return o
		}
		if len(row.Deployments) > 0 || row.ImageRepository != "" {
			deps := a.tableDeployments(row)
			o.setFromDeployments(deps, a.read(snapshot.InputControllers), stTableLocator(row))
			if o.State != stOwnerMissing || len(mgrs) == 0 {
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
			o.State = stOwnerBuiltIn
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
	o.setFromDeployments(stUniqDeployments(deps), a.read(snapshot.InputControllers),
		"no Deployment named "+stOrList(mgrs)+" or running a container named so")
	if o.State == stOwnerMissing && tableWhere != "" {
		o.Where = tableWhere + ", " + o.Where
	}
	return o
}

// setFromDeployments sets the owner's state from the Deployments found for it.
func (o *stFinalizerOwner) setFromDeployments(deps []*appsv1.Deployment, controllersRead bool, notFound string) {
	if len(deps) == 0 {
		if controllersRead {
			o.State = stOwnerMissing
			o.Where = notFound
		} else {
			o.State = stOwnerUnknown
			o.Where = "Deployments were not (all) read, so whether it runs is unknown"
		}
		return
	}
	var parts []string
	o.State = stOwnerUnavailable
	for _, d := range deps {
		parts = append(parts, stDeploymentStatus(d))
		if d.Status.AvailableReplicas > 0 && o.State != stOwnerRunning {
			o.State = stOwnerRunning
			o.Deployment = d
		}
	}
	if o.Deployment == nil {
		o.Deployment = deps[0]
	}
	o.Where = strings.Join(parts, ", ")
}

func stDeploymentStatus(d *appsv1.Deployment) string {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	return fmt.Sprintf("Deployment %s/%s: %d/%d available", d.Namespace, d.Name, d.Status.AvailableReplicas, want)
}

func stTableLocator(row knowledge.FinalizerOwner) string {
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
func (a *termAnalysis) tableDeployments(row knowledge.FinalizerOwner) []*appsv1.Deployment {
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
func (a *termAnalysis) imageDeployments(repo string) []*appsv1.Deployment {
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
func (a *termAnalysis) managerDeployments(mgr string) []*appsv1.Deployment {
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

func stUniqDeployments(in []*appsv1.Deployment) []*appsv1.Deployment {
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

func stOrList(items []string) string { return strings.Join(items, " or ") }

// stFinalizerManagers returns the managedFields entries that own the finalizer: their fieldsV1 has
// f:metadata.f:finalizers with the key v:"<name>".
func stFinalizerManagers(m metav1.Object, fin string) []metav1.ManagedFieldsEntry {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(fin); err != nil {
		return nil
	}
	key := "v:" + strings.TrimSpace(buf.String())
	var out []metav1.ManagedFieldsEntry
	for _, e := range m.GetManagedFields() {
		if e.FieldsV1 == nil || e.Manager == "" {
			continue
		}
		var root struct {
			Metadata struct {
				Finalizers map[string]json.RawMessage `json:"f:finalizers"`
			} `json:"f:metadata"`
		}
		if err := json.Unmarshal(e.FieldsV1.Raw, &root); err != nil {
			continue
		}
		if _, ok := root.Metadata.Finalizers[key]; ok {
			out = append(out, e)
		}
	}
	return out
}

// stManagerNames returns the distinct manager names of managedFields entries, sorted.
func stManagerNames(entries []metav1.ManagedFieldsEntry) []string {
	seen := map[string]bool{}
	var out []string
	for _, e := range entries {
		if !seen[e.Manager] {
			seen[e.Manager] = true
			out = append(out, e.Manager)
		}
	}
	sort.Strings(out)
	return out
}

// stRemoveFinalizerFix proposes removing one finalizer whose owner is missing.
func stRemoveFinalizerFix(o stFinalizerOwner, risk report.Risk) report.Fix {
	cleanup := o.Cleanup
	if cleanup == "" {
		cleanup = "the cleanup its owner would do"
	}
	return report.Fix{
		Action:      ActionRemoveFinalizer,
		Description: fmt.Sprintf("Remove finalizer %s (only that one). Skipped: %s.", o.Finalizer, cleanup),
		Risk:        risk,
		Params:      map[string]string{"finalizer": o.Finalizer},
	}
}

// finalizerOwners reports the remaining finalizers: a missing owner first, else owners that
// run but have not removed theirs.
func (a *termAnalysis) finalizerOwners(subj stSubject, owners *stOwnerCache) (Draft, bool) {
	all := owners.get()
	if len(all) == 0 {
		return Draft{}, false
	}
	var ev []string
	for _, o := range all {
		ev = append(ev, o.line())
	}
	age := Age(a.now, subj.meta.GetDeletionTimestamp().Time)
	if missing := owners.missing(); len(missing) > 0 {
		var names, fixesFor []string
		var fixes []report.Fix
		for _, o := range missing {
			names = append(names, o.Finalizer)
			fixesFor = append(fixesFor, o.Finalizer+" ("+o.Owner+")")
			fixes = append(fixes, stRemoveFinalizerFix(o, report.RiskMedium))
		}
		ev = append(ev, a.warningEvents(subj.kind, subj.meta, 3)...)
		return Draft{
			RootCause: RCFinalizerOwnerMissing,
			Summary:   fmt.Sprintf("%s for %s: no controller runs for finalizer %s", subj.noun, age, strings.Join(names, ", ")),
			Message: fmt.Sprintf("The deletion waits for finalizer %s, but its owner does not run in this cluster, so "+
				"nothing will ever remove it. Removing it by hand skips the cleanup it guards.", strings.Join(fixesFor, ", ")),
			Evidence: ev,
			Fixes:    fixes,
		}, true
	}
	var parts []string
	for _, o := range all {
		parts = append(parts, o.Finalizer+" ("+stNotActingReason(o)+")")
	}
	ev = append(ev, a.warningEvents(subj.kind, subj.meta, 3)...)
	for _, o := range all {
		if o.Deployment != nil {
			ev = append(ev, a.warningEvents("Deployment", o.Deployment, 2)...)
		}
	}
	return Draft{
		RootCause: RCFinalizerOwnerNotActing,
		Summary:   fmt.Sprintf("%s for %s: finalizer %s not removed by its owner", subj.noun, age, strings.Join(subj.meta.GetFinalizers(), ", ")),
		Message: fmt.Sprintf("The deletion waits for %s. Its owner has not finished its cleanup; its Warning events and "+
			"logs say why. Removing the finalizer by hand would skip cleanup the owner still intends to do.", strings.Join(parts, "; ")),
		Evidence: ev,
	}, true
}

// stNotActingReason says in a few words why a present owner has not removed its finalizer.
func stNotActingReason(o stFinalizerOwner) string {
	switch o.State {
	case stOwnerRunning:
		return o.Owner + " runs but has not removed it"
	case stOwnerUnavailable:
		return o.Owner + " has no available replica, so it cannot remove it"
	case stOwnerBuiltIn:
		return o.Owner + " is part of the control plane and has not removed it"
	}
	return "owner " + o.Owner + " could not be checked"
}
