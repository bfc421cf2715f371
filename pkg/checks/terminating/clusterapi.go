package terminating

import (
	"fmt"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/knowledge"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// Cluster API names (docs/domain.md, "Stuck deletion").
const (
	capiGroup             = "cluster.x-k8s.io"
	capiPausedAnnotation  = "cluster.x-k8s.io/paused"
	capiDeleteForMove     = "clusterctl.cluster.x-k8s.io/delete-for-move"
	capiClusterNameLabel  = "cluster.x-k8s.io/cluster-name"
	capiClusterFinalizer  = "cluster.cluster.x-k8s.io"
	finalizerReaddMessage = "no new finalizers can be added if the object is being deleted"
	// maxOwnerDepth bounds the walk up ownerReferences (Machine -> MachineSet -> MachineDeployment -> Cluster).
	maxOwnerDepth = 6
)

// isCAPIGroup reports whether an API group belongs to Cluster API or one of its providers
// (infrastructure.cluster.x-k8s.io, bootstrap.cluster.x-k8s.io, ...).
func isCAPIGroup(group string) bool {
	return group == capiGroup || strings.HasSuffix(group, "."+capiGroup)
}

// pausedObject is an object found paused, and how.
type pausedObject struct {
	desc string // "Cluster ns/name"
	how  string // "spec.paused=true", "annotation cluster.x-k8s.io/paused"
	meta metav1.Object
}

// ownerPaused reports an object that is paused itself or whose Cluster API owner is paused.
func (a *analysis) ownerPaused(subj subject, owners *ownerCache) (checks.Draft, bool) {
	paused := a.pausedChain(subj)
	if len(paused) == 0 {
		return checks.Draft{}, false
	}
	var ev, names []string
	for _, p := range paused {
		ev = append(ev, p.desc+": "+p.how)
		names = append(names, p.desc)
	}
	moved := false
	for _, m := range append([]metav1.Object{subj.meta}, pausedMetas(paused)...) {
		if v, ok := m.GetAnnotations()[capiDeleteForMove]; ok {
			moved = true
			ev = append(ev, fmt.Sprintf("%s/%s has annotation %s=%q: a clusterctl move deleted it and did not finish", m.GetNamespace(), m.GetName(), capiDeleteForMove, v))
			break
		}
	}
	for _, o := range owners.get() {
		ev = append(ev, o.line())
	}
	msg := fmt.Sprintf("%s is paused, and Cluster API controllers do nothing for paused objects, so the finalizers %s stay until it is unpaused.",
		strings.Join(names, " and "), strings.Join(subj.meta.GetFinalizers(), ", "))
	if moved {
		msg += " The delete-for-move annotation shows an interrupted clusterctl move: finish or re-run the move."
	} else {
		msg += " If nothing is being moved, unpause it (remove the annotation or set spec.paused=false) and the controller completes the deletion."
	}
	return checks.Draft{
		RootCause: RootCauseOwnerPaused,
		Summary: fmt.Sprintf("%s for %s: %s is paused", subj.noun, checks.Age(a.now, subj.meta.GetDeletionTimestamp().Time),
			strings.Join(names, ", ")),
		Message:  msg,
		Evidence: ev,
	}, true
}

func pausedMetas(ps []pausedObject) []metav1.Object {
	out := make([]metav1.Object, 0, len(ps))
	for _, p := range ps {
		out = append(out, p.meta)
	}
	return out
}

// pausedChain returns the paused objects among the subject, its owners (as far as the
// snapshot holds them) and its Cluster.
func (a *analysis) pausedChain(subj subject) []pausedObject {
	var out []pausedObject
	seen := map[string]bool{}
	add := func(p pausedObject) {
		if !seen[p.desc] {
			seen[p.desc] = true
			out = append(out, p)
		}
	}
	var walk func(kind string, m metav1.Object, depth int)
	walk = func(kind string, m metav1.Object, depth int) {
		desc := fmt.Sprintf("%s %s/%s", kind, m.GetNamespace(), m.GetName())
		if m.GetNamespace() == "" {
			desc = kind + " " + m.GetName()
		}
		if _, ok := m.GetAnnotations()[capiPausedAnnotation]; ok {
			add(pausedObject{desc: desc, how: "annotation " + capiPausedAnnotation, meta: m})
		}
		if depth >= maxOwnerDepth {
			return
		}
		for _, ref := range m.GetOwnerReferences() {
			gv, _ := schema.ParseGroupVersion(ref.APIVersion)
			if ref.Kind == "Cluster" && gv.Group == capiGroup {
				if c := a.cluster(m.GetNamespace(), ref.Name); c != nil {
					a.clusterPaused(c, add)
				}
				continue
			}
			if o, ok := a.objectByUID(string(ref.UID)); ok {
				walk(o.Kind, o.Meta, depth+1)
			}
		}
	}
	walk(subj.kind, subj.meta, 0)
	if isCAPIGroup(subj.group) && subj.kind == "Cluster" {
		if c := a.clusterByUID(string(subj.meta.GetUID())); c != nil {
			a.clusterPaused(c, add)
		}
	}
	if name := subj.meta.GetLabels()[capiClusterNameLabel]; name != "" {
		if c := a.cluster(subj.meta.GetNamespace(), name); c != nil {
			a.clusterPaused(c, add)
		}
	}
	return out
}

// clusterPaused adds the Cluster if spec.paused or its annotation pauses it.
func (a *analysis) clusterPaused(c *unstructured.Unstructured, add func(pausedObject)) {
	desc := fmt.Sprintf("Cluster %s/%s", c.GetNamespace(), c.GetName())
	if p, _, _ := unstructured.NestedBool(c.Object, "spec", "paused"); p {
		add(pausedObject{desc: desc, how: "spec.paused=true", meta: c})
		return
	}
	if _, ok := c.GetAnnotations()[capiPausedAnnotation]; ok {
		add(pausedObject{desc: desc, how: "annotation " + capiPausedAnnotation, meta: c})
	}
}

func (a *analysis) cluster(ns, name string) *unstructured.Unstructured {
	for _, c := range a.s.Clusters {
		if c.GetNamespace() == ns && c.GetName() == name {
			return c
		}
	}
	return nil
}

func (a *analysis) clusterByUID(uid string) *unstructured.Unstructured {
	for _, c := range a.s.Clusters {
		if string(c.GetUID()) == uid {
			return c
		}
	}
	return nil
}

func (a *analysis) objectByUID(uid string) (snapshot.Object, bool) {
	if uid == "" {
		return snapshot.Object{}, false
	}
	if a.objByUID == nil {
		a.objByUID = make(map[types.UID]snapshot.Object, len(a.s.Objects))
		for _, o := range a.s.Objects {
			if o.Meta != nil {
				a.objByUID[o.Meta.UID] = o
			}
		}
	}
	o, ok := a.objByUID[types.UID(uid)]
	return o, ok
}

// readdRace reports Warning events showing a controller that keeps adding a finalizer to the
// object after its deletion began.
func (a *analysis) readdRace(subj subject, owners *ownerCache) (checks.Draft, bool) {
	type reporter struct {
		name, reason, message string
		count                 int32
		last                  time.Time
	}
	byName := map[string]*reporter{}
	for _, e := range a.s.EventsFor(subj.kind, subj.meta.GetNamespace(), subj.meta.GetName(), subj.meta.GetUID()) {
		if e.Type != "Warning" || !strings.Contains(e.Message, finalizerReaddMessage) {
			continue
		}
		name := eventReporter(e)
		r := byName[name]
		if r == nil {
			r = &reporter{name: name}
			byName[name] = r
		}
		r.count += checks.EventCount(e)
		if t := snapshot.EventTime(e); !t.Before(r.last) {
			r.last, r.reason, r.message = t, e.Reason, e.Message
		}
	}
	if len(byName) == 0 {
		return checks.Draft{}, false
	}
	var reps []*reporter
	for _, r := range byName {
		reps = append(reps, r)
	}
	sort.Slice(reps, func(i, j int) bool { return reps[i].name < reps[j].name })
	var ev, names []string
	var total int32
	for _, r := range reps {
		total += r.count
		names = append(names, r.name)
		ev = append(ev, fmt.Sprintf("%d Warning event(s) %s from %s, last %s ago: %s", r.count, r.reason, r.name,
			checks.Age(a.now, r.last), oneLine(r.message, 200)))
	}
	for _, o := range owners.get() {
		ev = append(ev, o.line())
	}
	var refs []string
	msg := fmt.Sprintf("%s keeps trying to add a finalizer to this object although its deletion began (%d times); the "+
		"apiserver refuses with 422. The controller has not noticed the deletion, so it does not do its cleanup and "+
		"remove the finalizers %s either.", strings.Join(names, ", "), total, strings.Join(subj.meta.GetFinalizers(), ", "))
	if isCAPIGroup(subj.group) {
		bug, _ := knowledge.LookupBug(knowledge.BugCAPIFinalizerReadd)
		refs = append(refs, bug.Reference...)
		if v, dep, ok := a.capiVersion(); ok {
			if _, affected := knowledge.Affected(knowledge.BugCAPIFinalizerReadd, v, nil); affected {
				ev = append(ev, fmt.Sprintf("Cluster API %s (Deployment %s) is in the range of %s (%s)", v, dep, bug.Reference[0], bug.Affected))
				msg += fmt.Sprintf(" Cluster API %s has this bug in clusterctl move (%s): upgrade to %s or later.", v, bug.Reference[0], bug.Affected.Fixed)
			} else {
				ev = append(ev, fmt.Sprintf("Cluster API %s (Deployment %s) is outside the range of %s (%s)", v, dep, bug.Reference[0], bug.Affected))
			}
		} else {
			msg += fmt.Sprintf(" Cluster API before %s does this in clusterctl move (%s).", bug.Affected.Fixed, bug.Reference[0])
		}
	}
	var fixes []report.Fix
	for _, o := range owners.missing() {
		fixes = append(fixes, removeFinalizerFix(o, report.RiskMedium))
	}
	return checks.Draft{
		RootCause: RootCauseFinalizerReaddRace,
		Summary: fmt.Sprintf("%s for %s: %s keeps re-adding a finalizer (%d refused)", subj.noun,
			checks.Age(a.now, subj.meta.GetDeletionTimestamp().Time), strings.Join(names, ", "), total),
		Message:    msg,
		Evidence:   ev,
		References: refs,
		Fixes:      fixes,
	}, true
}

// capiVersion returns the running Cluster API core controller's version, read from its image.
func (a *analysis) capiVersion() (knowledge.Version, string, bool) {
	row, ok := knowledge.LookupFinalizer(capiClusterFinalizer)
	if !ok {
		return knowledge.Version{}, "", false
	}
	for _, d := range a.tableDeployments(row) {
		for _, c := range d.Spec.Template.Spec.Containers {
			if v, err := knowledge.ImageVersion(c.Image); err == nil {
				return v, d.Namespace + "/" + d.Name, true
			}
		}
	}
	return knowledge.Version{}, "", false
}
