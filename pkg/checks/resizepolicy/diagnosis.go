package resizepolicy

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
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
func (e *cluster) dropRejected(p *podDiff) ([]*containerDiff, string) {
	carrying := p.carriesPolicy()
	if len(carrying) == 0 || e.serverErr != nil {
		return nil, ""
	}
	if !e.serverDefaults() {
		return carrying, fmt.Sprintf("inferred: apiserver %s does not default resizePolicy, so an update without the field changes every container that carries it", e.s.ServerVersion)
	}
	if e.gate != "on" {
		return nil, ""
	}
	var out []*containerDiff
	for _, c := range carrying {
		if c.init || !sameList(c.podList, redefaulted(c.spec)) {
			out = append(out, c)
		}
	}
	return out, fmt.Sprintf("inferred: apiserver %s re-defaults only NotRequired for requested cpu, then memory, so an update without the field changes these containers' lists",
		e.s.ServerVersion)
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

// diagnose explains a judged pod's difference from its placement's template. A pod the rollout
// will still update is reported only when an old kruise-manager fails that update.
func (e *cluster) diagnose(p *podDiff) (checks.Draft, bool) {
	base := checks.Draft{
		Object: checks.Ref("v1", "Pod", p.pod),
		Owner:  workloadRef(p.w),
		Node:   p.pod.Spec.NodeName,
	}
	var sinceLine string
	base.Since, sinceLine = e.driftSince(p)
	rejections := rejections(e.s, p.w, p.pod)
	if e.mgrOld && p.place.stand != standKept {
		rejected, how := e.dropRejected(p)
		var seen []rejection
		if updatePending(p) {
			for _, r := range rejections {
				if r.forbidden && r.resize {
					seen = append(seen, r)
				}
			}
		}
		if len(rejected) > 0 || len(seen) > 0 {
			return e.kruiseDrops(base, p, rejected, how, seen, rejections), true
		}
	}
	if p.place.stand == standPending {
		return checks.Draft{}, false
	}
	if cs := p.differing(true); len(cs) > 0 {
		return withSince(e.sidecarDrift(base, p, cs), sinceLine), true
	}
	if cs := p.differing(false); len(cs) > 0 && e.gate == "on" {
		return withSince(e.immutable(base, p, cs), sinceLine), true
	}
	if cs := p.defaultedOnly(); len(cs) > 0 && e.serverDefaults() {
		return e.benign(base, p, cs), true
	}
	return checks.Draft{}, false
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
func (e *cluster) recreateHelps() bool { return !e.mgrOld }

func (e *cluster) kruiseDrops(f checks.Draft, p *podDiff, rejected []*containerDiff, how string, seen, all []rejection) checks.Draft {
	f.RootCause = RootCauseKruiseDropsResizePolicy
	f.Summary = fmt.Sprintf("kruise-manager %s drops resizePolicy: in-place updates of this pod are rejected", e.mgr.Version)
	f.Message = fmt.Sprintf("kruise-manager %s has no resizePolicy in its Kubernetes API; its in-place update sends pod %s without the field "+
		"and the apiserver rejects the change. Upgrade kruise to >= v1.7.0; evicting the pod lets %s recreate it on the new revision.",
		e.mgr.Version, p.pod.Name, kindName(p.w))
	f.Evidence = e.common(p)
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

func (e *cluster) sidecarDrift(f checks.Draft, p *podDiff, cs []*containerDiff) checks.Draft {
	var sets []string
	for _, c := range cs {
		sets = append(sets, c.sidecarSets...)
	}
	sets = uniq(sets)
	f.RootCause = RootCauseSidecarResizePolicyDrift
	f.Summary = fmt.Sprintf("sidecar %s resizePolicy differs from SidecarSet %s", cs[0].name, strings.Join(sets, ","))
	f.Message = fmt.Sprintf("Container %s was injected by SidecarSet %s, which now declares a different resizePolicy; the pod cannot take it in place.",
		cs[0].name, strings.Join(sets, ","))
	return e.recreate(f, p, cs, "the new pod is injected with the SidecarSet's current containers",
		"kruise-manager < v1.7.0 injects sidecars without resizePolicy: a recreated pod would not get it either; upgrade kruise to >= v1.7.0")
}

func (e *cluster) immutable(f checks.Draft, p *podDiff, cs []*containerDiff) checks.Draft {
	f.RootCause = RootCauseResizePolicyImmutable
	f.Summary = fmt.Sprintf("container %s resizePolicy differs from the template and cannot change in place", cs[0].name)
	f.Message = fmt.Sprintf("The %s template of revision %s, which %s recreates this pod from, declares a different resizePolicy than pod %s has; a pod update may not change resizePolicy, so the pod keeps its own until it is recreated.",
		kindName(p.w), p.place.revision, kindName(p.w), p.pod.Name)
	return e.recreate(f, p, cs, "the new pod gets revision "+p.place.revision+"'s resizePolicy",
		"kruise-manager < v1.7.0 creates pods without resizePolicy: a recreated pod would not get the template's either; upgrade kruise to >= v1.7.0")
}

// recreate completes a finding about containers whose declared policy only a recreated pod can
// take: it offers eviction when a recreated pod would get that policy, else says why not.
func (e *cluster) recreate(f checks.Draft, p *podDiff, cs []*containerDiff, evictNote, noHelp string) checks.Draft {
	f.Evidence = e.common(p)
	for _, c := range cs {
		f.Evidence = append(f.Evidence, containerLine(c))
	}
	if e.recreateHelps() {
		f.Fixes = []report.Fix{evictFix(p, evictNote)}
	} else {
		f.Evidence = append(f.Evidence, noHelp)
	}
	return f
}

func (e *cluster) benign(f checks.Draft, p *podDiff, cs []*containerDiff) checks.Draft {
	f.RootCause = RootCauseBenignDefaulting
	f.Summary = "resizePolicy on the pod was defaulted by the apiserver; it means the same as the template"
	f.Message = fmt.Sprintf("Apiserver %s added resizePolicy NotRequired to pod %s where the %s template sets none; NotRequired is also what an unset entry means, so nothing differs in effect.",
		e.s.ServerVersion, p.pod.Name, kindName(p.w))
	f.Evidence = e.common(p)
	for _, c := range cs {
		f.Evidence = append(f.Evidence, containerLine(c)+"; defaulted "+joinResources(c.defaulted)+"=NotRequired")
	}
	switch {
	case !e.kruiseEnv.VersionKnown():
		f.Evidence = append(f.Evidence, "kruise-manager version unknown: this apiserver re-defaults the same values on every pod update, so in-place updates pass either way")
	case e.mgrOld:
		f.Evidence = append(f.Evidence, fmt.Sprintf("kruise-manager %s drops resizePolicy on in-place updates, but this apiserver re-defaults the same list, so they pass; upgrade kruise to >= v1.7.0 before the apiserver to >= v1.33, which no longer re-defaults",
			e.mgr.Version))
	default:
		f.Evidence = append(f.Evidence, fmt.Sprintf("kruise-manager %s keeps resizePolicy on in-place updates (>= v1.7.0)", e.mgr.Version))
	}
	return f
}

func uniq(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}
