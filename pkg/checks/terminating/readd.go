package terminating

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/knowledge"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// readdSource is one writer seen trying to add a finalizer to the object after its deletion
// began, from one source (its log or its Warning events).
type readdSource struct {
	name  string
	count int32
	last  time.Time
	line  string
}

// readdRace reports a controller that keeps adding a finalizer to an object being deleted. The
// Cluster API controllers log the apiserver's refusal and record no Event, so their leader's log
// is read first; Warning events from any controller are the second source.
func (a *pass) readdRace(t *target) (checks.Draft, bool) {
	subj, owners := t.subject, t.owners
	srcs := append(a.readdFromLog(subj), a.readdFromEvents(subj)...)
	if len(srcs) == 0 {
		return checks.Draft{}, false
	}
	var ev, names []string
	var total int32
	for _, r := range srcs {
		total += r.count
		names = append(names, r.name)
		ev = append(ev, r.line)
	}
	for _, o := range owners.get() {
		ev = append(ev, o.line())
	}
	msg := fmt.Sprintf("%s keeps trying to add a finalizer to this object although its deletion began (%d times); the "+
		"apiserver refuses with 422. The controller has not noticed the deletion, so it does not do its cleanup and "+
		"remove the finalizers %s either.", strings.Join(names, ", "), total, strings.Join(subj.meta.GetFinalizers(), ", "))
	var refs []string
	if isCAPIGroup(subj.group) {
		bug, _ := knowledge.LookupBug(knowledge.BugCAPIFinalizerReadd)
		refs = append(refs, bug.Reference...)
		line, more := a.capiReaddVersion(bug)
		ev = append(ev, line)
		msg += " " + more
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

// capiReaddVersion says what the running controllers' version tells about the race: only whether
// they can re-add (v1.9.0 and later). The fix is in clusterctl, whose version the cluster does not
// record.
func (a *pass) capiReaddVersion(bug knowledge.Bug) (evidence, message string) {
	fix := fmt.Sprintf("The fix is in clusterctl, not in the controllers: %s deletes before removing finalizers "+
		"(%s). The cluster does not record which clusterctl ran a move: run moves with a fixed clusterctl.", bug.FixedIn, bug.Reference[2])
	v, dep, ok := a.capiVersion()
	if !ok {
		return "the Cluster API controller's version is unknown (no Deployment of it found)",
			fmt.Sprintf("Cluster API controllers %s add their finalizer before checking for a pause (%s). %s", bug.Affected, bug.Reference[1], fix)
	}
	if !bug.Affected.Contains(v) {
		return fmt.Sprintf("Cluster API %s (Deployment %s) is older than %s: its controllers do not re-add finalizers during a move (%s)", v, dep, bug.Affected.From, bug.Reference[0]),
			"This Cluster API version does not have the clusterctl move race: look at the controller the evidence names."
	}
	return fmt.Sprintf("Cluster API %s (Deployment %s): controllers %s can re-add finalizers during a clusterctl move (%s)", v, dep, bug.Affected, bug.Reference[1]),
		fmt.Sprintf("Cluster API %s adds finalizers before checking for a pause, so a clusterctl older than v1.9.5 races with it during a move (%s). %s", v, bug.Reference[0], fix)
}

// readdFromLog counts the refusals the Cluster API controller's leader logged for the object.
func (a *pass) readdFromLog(subj subject) []readdSource {
	l := a.s.ClusterAPILog
	if l == nil || !isCAPIGroup(subj.group) {
		return nil
	}
	byController := map[string]*readdSource{}
	var errs = map[string]string{}
	for _, line := range l.Lines {
		r, ok := parseRefusal(line)
		if !ok || !r.about(subj.kind, subj.group, subj.meta.GetNamespace(), subj.meta.GetName()) {
			continue
		}
		name := "controller " + r.controller
		if r.controller == "" {
			name = "Cluster API controller"
		}
		s := byController[name]
		if s == nil {
			s = &readdSource{name: name}
			byController[name] = s
		}
		s.count++
		if !r.at.Before(s.last) {
			s.last, errs[name] = r.at, r.err
		}
	}
	out := make([]readdSource, 0, len(byController))
	for name, s := range byController {
		s.line = fmt.Sprintf("%d refused finalizer update(s) in the log of %s/%s (container %s, last %s, at most %d bytes read), %s, last %s ago: %s",
			s.count, l.Namespace, l.Pod, l.Container, l.Since, l.LimitBytes, name, checks.Age(a.now, s.last), oneLine(errs[name], 200))
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// readdFromEvents counts the Warning events that carry the refusal, by reporting component.
func (a *pass) readdFromEvents(subj subject) []readdSource {
	type reporter struct {
		readdSource
		reason, message string
	}
	byName := map[string]*reporter{}
	for _, e := range a.s.EventsFor(subj.kind, subj.meta.GetNamespace(), subj.meta.GetName(), subj.meta.GetUID()) {
		if e.Type != "Warning" || !strings.Contains(e.Message, knowledge.FinalizerReaddMessage) {
			continue
		}
		name := eventReporter(e)
		r := byName[name]
		if r == nil {
			r = &reporter{readdSource: readdSource{name: name}}
			byName[name] = r
		}
		r.count += checks.EventCount(e)
		if t := snapshot.EventTime(e); !t.Before(r.last) {
			r.last, r.reason, r.message = t, e.Reason, e.Message
		}
	}
	out := make([]readdSource, 0, len(byName))
	for _, r := range byName {
		r.line = fmt.Sprintf("%d Warning event(s) %s from %s, last %s ago: %s", r.count, r.reason, r.name,
			checks.Age(a.now, r.last), oneLine(r.message, 200))
		out = append(out, r.readdSource)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// capiVersion returns the running Cluster API core controller's version, read from its image.
func (a *pass) capiVersion() (knowledge.Version, string, bool) {
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
