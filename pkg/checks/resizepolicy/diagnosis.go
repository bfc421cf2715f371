package resizepolicy

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/internal/uniq"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// Texts kruise and the apiserver write that the check recognizes.
const (
	eventFailedInPlace = "FailedUpdatePodInPlace"
	// forbiddenUpdate is the apiserver's message when a pod update changes an immutable field.
	forbiddenUpdate = "pod updates may not change fields other than"
	// failedPrefix and failedSuffix frame the pod's name in a FailedUpdatePodInPlace message.
	failedPrefix = "failed to update pod "
	failedSuffix = " in-place"
	// reasonStartInPlace is the InPlaceUpdateReady=False reason kruise sets before it updates a pod.
	reasonStartInPlace = "StartInPlaceUpdate"
	// maxQuote bounds an event message quoted in evidence.
	maxQuote = 240
)

// dropRejected returns the containers whose resizePolicy a pod update without the field would
// change on this apiserver (so the update is rejected), and how that was inferred.
func (pa *pass) dropRejected(p *podDiff) ([]*containerDiff, string) {
	carrying := p.carriesPolicy()
	if len(carrying) == 0 || pa.serverErr != nil {
		return nil, ""
	}
	if !pa.serverDefaults() {
		return carrying, fmt.Sprintf("inferred: apiserver %s does not default resizePolicy, so an update without the field changes every container that carries it", pa.s.ServerVersion)
	}
	if pa.gate != "on" {
		return nil, ""
	}
	var out []*containerDiff
	for _, c := range carrying {
		if c.init || !sameList(c.podList, redefaulted(c.spec)) {
			out = append(out, c)
		}
	}
	return out, fmt.Sprintf("inferred: apiserver %s re-defaults only NotRequired for requested cpu, then memory, so an update without the field changes these containers' lists",
		pa.s.ServerVersion)
}

// rejection is a FailedUpdatePodInPlace event of the workload about this pod.
type rejection struct {
	event     *corev1.Event
	forbidden bool
	// resize is true when the apiserver's quoted diff touches ResizePolicy.
	resize bool
}

func rejections(s *snapshot.Snapshot, w *kruise.Workload, pod *corev1.Pod) []rejection {
	prefix := failedPrefix + pod.Name + failedSuffix
	var out []rejection
	for _, ev := range s.EventsFor(w.Kind, w.Namespace, w.Name, w.UID) {
		if ev.Reason != eventFailedInPlace || !strings.HasPrefix(ev.Message, prefix) {
			continue
		}
		out = append(out, rejection{
			event:     ev,
			forbidden: strings.Contains(ev.Message, forbiddenUpdate),
			resize:    strings.Contains(ev.Message, "ResizePolicy"),
		})
	}
	return out
}

// quoteEvent keeps the first line of an event message, cut after the apiserver's reason: the
// diff that follows can show env values and is not quoted.
func quoteEvent(msg string) string {
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	if i := strings.Index(msg, forbiddenUpdate); i >= 0 {
		msg = msg[:i+len(forbiddenUpdate)] + " ..."
	}
	if len(msg) > maxQuote {
		msg = msg[:maxQuote] + " ..."
	}
	return msg
}

// judgedPod is what the rules judge: a pod's difference from its placement's template, with the
// fields every finding about it shares and how its drift was dated.
type judgedPod struct {
	*podDiff
	base      checks.Draft
	sinceLine string
}

// rules are the check's root causes, most specific first. A pod the rollout will still update is
// reported only when an old kruise-manager fails that update.
var rules = []checks.Rule[*pass, *judgedPod]{
	(*pass).dropsPolicy,
	(*pass).sidecarDrifts,
	(*pass).immutableDrifts,
	(*pass).benignDefaults,
}

// diagnose explains a judged pod's difference from its placement's template.
func (pa *pass) diagnose(p *podDiff) (checks.Draft, bool) {
	t := &judgedPod{podDiff: p, base: checks.Draft{
		Object: checks.Ref("v1", "Pod", p.pod),
		Owner:  workloadRef(p.w),
		Node:   p.pod.Spec.NodeName,
	}}
	t.base.Since, t.sinceLine = pa.driftSince(p)
	return checks.Diagnose(rules, pa, t)
}

// dropsPolicy: an old kruise-manager's in-place update of the pod is, or would be, rejected.
func (pa *pass) dropsPolicy(t *judgedPod) (checks.Draft, bool) {
	if !pa.mgrOld || t.place.stand == standKept {
		return checks.Draft{}, false
	}
	rejections := rejections(pa.s, t.w, t.pod)
	rejected, how := pa.dropRejected(t.podDiff)
	var seen []rejection
	if updatePending(t.podDiff) {
		for _, r := range rejections {
			if r.forbidden && r.resize {
				seen = append(seen, r)
			}
		}
	}
	if len(rejected) == 0 && len(seen) == 0 {
		return checks.Draft{}, false
	}
	return pa.kruiseDrops(t.base, t.podDiff, rejected, how, seen, rejections), true
}

// sidecarDrifts: an injected sidecar's policy differs from its SidecarSet's.
func (pa *pass) sidecarDrifts(t *judgedPod) (checks.Draft, bool) {
	return drifts(t, true, pa.sidecarDrift)
}

// immutableDrifts: a container's policy differs from the template, which the gate makes immutable.
func (pa *pass) immutableDrifts(t *judgedPod) (checks.Draft, bool) {
	if pa.gate != "on" {
		return checks.Draft{}, false
	}
	return drifts(t, false, pa.immutable)
}

// drifts explains the containers of a settled pod whose declared policy differs (the injected
// sidecars, or the others) with explain, dated by the pod's drift.
func drifts(t *judgedPod, sidecars bool, explain func(checks.Draft, *podDiff, []*containerDiff) checks.Draft) (checks.Draft, bool) {
	if t.place.stand == standPending {
		return checks.Draft{}, false
	}
	cs := t.differing(sidecars)
	if len(cs) == 0 {
		return checks.Draft{}, false
	}
	return withSince(explain(t.base, t.podDiff, cs), t.sinceLine), true
}

// benignDefaults: the only difference is what this apiserver defaults.
func (pa *pass) benignDefaults(t *judgedPod) (checks.Draft, bool) {
	if t.place.stand == standPending || !pa.serverDefaults() {
		return checks.Draft{}, false
	}
	cs := t.defaultedOnly()
	if len(cs) == 0 {
		return checks.Draft{}, false
	}
	return pa.benign(t.base, t.podDiff, cs), true
}

// withSince adds the line that says how the drift was dated.
func withSince(f checks.Draft, line string) checks.Draft {
	f.Evidence = append(f.Evidence, line)
	return f
}

// updatePending reports whether the pod still waits for an update: it is on an older revision,
// or kruise's InPlaceUpdateReady condition is False. A rejection event about a pod that has
// since been updated is stale.
func updatePending(p *podDiff) bool {
	rev, upd := p.pod.Labels[revisionLabel], p.w.Status.UpdateRevision
	if rev != "" && upd != "" && rev != upd {
		return true
	}
	line, _ := inPlaceCondition(p.pod)
	return line != ""
}

// recreateHelps says whether a recreated pod would get the declared policy: kruise < v1.7.0
// creates and injects pods through an API without resizePolicy, so it would not.
func (pa *pass) recreateHelps() bool { return !pa.mgrOld }

func (pa *pass) kruiseDrops(f checks.Draft, p *podDiff, rejected []*containerDiff, how string, seen, all []rejection) checks.Draft {
	f.RootCause = RootCauseKruiseDropsResizePolicy
	f.Summary = fmt.Sprintf("kruise-manager %s drops resizePolicy: in-place updates of this pod are rejected", pa.mgr.Version)
	f.Message = fmt.Sprintf("kruise-manager %s has no resizePolicy in its Kubernetes API; its in-place update sends pod %s without the field "+
		"and the apiserver rejects the change. Upgrade kruise to >= v1.7.0; evicting the pod lets %s recreate it on the new revision.",
		pa.mgr.Version, p.pod.Name, kindName(p.w))
	f.Evidence = pa.common(p)
	for _, c := range p.carriesPolicy() {
		f.Evidence = append(f.Evidence, containerLine(c))
	}
	if len(rejected) > 0 {
		names := make([]string, len(rejected))
		for i, c := range rejected {
			names[i] = c.name
		}
		f.Evidence = append(f.Evidence, how+": "+strings.Join(names, ","))
	}
	since := time.Time{}
	for _, r := range all {
		line := fmt.Sprintf("event %s on %s", r.event.Reason, kindName(p.w))
		if r.event.Count > 1 {
			line += fmt.Sprintf(" (x%d)", r.event.Count)
		}
		line += fmt.Sprintf(" at %s: %q", snapshot.EventTime(r.event).UTC().Format(time.RFC3339), quoteEvent(r.event.Message))
		if r.resize {
			line += "; the apiserver's diff changes ResizePolicy"
		}
		f.Evidence = append(f.Evidence, line)
		if t := eventFirst(r.event); !t.IsZero() && (since.IsZero() || t.Before(since)) {
			since = t
		}
	}
	// kruise also records the error as the workload's FailedUpdate condition.
	if c, ok := p.w.Condition("FailedUpdate"); ok && c.Status == string(corev1.ConditionTrue) && strings.Contains(c.Message, `"`+p.pod.Name+`"`) {
		f.Evidence = append(f.Evidence, fmt.Sprintf("%s condition FailedUpdate: %q", kindName(p.w), quoteEvent(c.Message)))
	}
	if len(seen) == 0 && len(all) == 0 {
		f.Evidence = append(f.Evidence, fmt.Sprintf("no %s event about this pod in the snapshot: the rejection is inferred, not observed", eventFailedInPlace))
	}
	if line, t := inPlaceCondition(p.pod); line != "" {
		f.Evidence = append(f.Evidence, line)
		if !t.IsZero() && (since.IsZero() || t.Before(since)) {
			since = t
		}
	}
	if !since.IsZero() {
		f.Since = since
	}
	f.Fixes = []report.Fix{evictFix(p, "kruise < v1.7.0 creates the new pod without resizePolicy; upgrade kruise to >= v1.7.0")}
	return f
}

func eventFirst(ev *corev1.Event) time.Time {
	if !ev.FirstTimestamp.IsZero() {
		return ev.FirstTimestamp.Time
	}
	return snapshot.EventTime(ev)
}

func (pa *pass) sidecarDrift(f checks.Draft, p *podDiff, cs []*containerDiff) checks.Draft {
	var sets []string
	for _, c := range cs {
		sets = append(sets, c.sidecarSets...)
	}
	sets = uniq.Of(sets)
	sort.Strings(sets)
	f.RootCause = RootCauseSidecarResizePolicyDrift
	f.Summary = fmt.Sprintf("sidecar %s resizePolicy differs from SidecarSet %s", cs[0].name, strings.Join(sets, ","))
	f.Message = fmt.Sprintf("Container %s was injected by SidecarSet %s, which now declares a different resizePolicy; the pod cannot take it in place.",
		cs[0].name, strings.Join(sets, ","))
	return pa.recreate(f, p, cs, "the new pod is injected with the SidecarSet's current containers",
		"kruise-manager < v1.7.0 injects sidecars without resizePolicy: a recreated pod would not get it either; upgrade kruise to >= v1.7.0")
}

func (pa *pass) immutable(f checks.Draft, p *podDiff, cs []*containerDiff) checks.Draft {
	f.RootCause = RootCauseResizePolicyImmutable
	f.Summary = fmt.Sprintf("container %s resizePolicy differs from the template and cannot change in place", cs[0].name)
	f.Message = fmt.Sprintf("The %s template of revision %s, which %s recreates this pod from, declares a different resizePolicy than pod %s has; a pod update may not change resizePolicy, so the pod keeps its own until it is recreated.",
		kindName(p.w), p.place.revision, kindName(p.w), p.pod.Name)
	return pa.recreate(f, p, cs, "the new pod gets revision "+p.place.revision+"'s resizePolicy",
		"kruise-manager < v1.7.0 creates pods without resizePolicy: a recreated pod would not get the template's either; upgrade kruise to >= v1.7.0")
}

// recreate completes a finding about containers whose declared policy only a recreated pod can
// take: it offers eviction when a recreated pod would get that policy, else says why not.
func (pa *pass) recreate(f checks.Draft, p *podDiff, cs []*containerDiff, evictNote, noHelp string) checks.Draft {
	f.Evidence = pa.common(p)
	for _, c := range cs {
		f.Evidence = append(f.Evidence, containerLine(c))
	}
	if pa.recreateHelps() {
		f.Fixes = []report.Fix{evictFix(p, evictNote)}
	} else {
		f.Evidence = append(f.Evidence, noHelp)
	}
	return f
}

func (pa *pass) benign(f checks.Draft, p *podDiff, cs []*containerDiff) checks.Draft {
	f.RootCause = RootCauseBenignDefaulting
	f.Summary = "resizePolicy on the pod was defaulted by the apiserver; it means the same as the template"
	f.Message = fmt.Sprintf("Apiserver %s added resizePolicy NotRequired to pod %s where the %s template sets none; NotRequired is also what an unset entry means, so nothing differs in effect.",
		pa.s.ServerVersion, p.pod.Name, kindName(p.w))
	f.Evidence = pa.common(p)
	for _, c := range cs {
		f.Evidence = append(f.Evidence, containerLine(c)+"; defaulted "+joinResources(c.defaulted)+"=NotRequired")
	}
	switch {
	case !pa.kruiseEnv.VersionKnown():
		f.Evidence = append(f.Evidence, "kruise-manager version unknown: this apiserver re-defaults the same values on every pod update, so in-place updates pass either way")
	case pa.mgrOld:
		f.Evidence = append(f.Evidence, fmt.Sprintf("kruise-manager %s drops resizePolicy on in-place updates, but this apiserver re-defaults the same list, so they pass; upgrade kruise to >= v1.7.0 before the apiserver to >= v1.33, which no longer re-defaults",
			pa.mgr.Version))
	default:
		f.Evidence = append(f.Evidence, fmt.Sprintf("kruise-manager %s keeps resizePolicy on in-place updates (>= v1.7.0)", pa.mgr.Version))
	}
	return f
}
