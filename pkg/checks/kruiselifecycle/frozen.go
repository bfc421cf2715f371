package kruiselifecycle

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// frozenWorkload is a CloneSet whose status shows it has not been reconciled for the threshold.
type frozenWorkload struct {
	w *kruise.Workload
	// since is the earliest moment from which the controller should have acted.
	since   time.Time
	signals []string
	// scale is true when a scale step is missing (pods to create or delete, or a replica count
	// the status has not caught up with).
	scale bool
	// detail lines that support, but do not make, the verdict.
	support []string
}

// countRevision counts pods whose controller-revision-hash names the revision: kruise writes the
// revision name ("<cloneset>-<hash>"), or the hash alone with CloneSetShortHash, and compares the
// part after the last '-' (EqualToRevisionHash, pkg/controller/cloneset/utils).
func countRevision(pods []*metav1.ObjectMeta, revision string) int32 {
	var n int32
	for _, p := range pods {
		if revisionMatches(p.Labels["controller-revision-hash"], revision) {
			n++
		}
	}
	return n
}

func revisionMatches(label, revision string) bool {
	short := func(h string) string { return h[strings.LastIndexByte(h, '-')+1:] }
	return label != "" && (label == revision || short(label) == short(revision))
}

// cloneSetState is what a frozen verdict dates a CloneSet's status against: its pods and
// events, and when its spec, status and pods last changed.
type cloneSetState struct {
	w                   *kruise.Workload
	active, terminating []*metav1.ObjectMeta
	events              []*corev1.Event
	specAt              time.Time
	specSource          string
	statusAt, podsAt    time.Time
}

func newCloneSetState(s *snapshot.Snapshot, w *kruise.Workload) *cloneSetState {
	c := &cloneSetState{w: w, events: s.EventsFor(w.Kind, w.Namespace, w.Name, w.UID)}
	c.active, c.terminating = ownedPods(s, w)
	var specBy string
	c.specAt, specBy = specWrite(w)
	c.specSource = "managedFields: last spec write by " + specBy
	if c.specAt.IsZero() {
		c.specAt, c.specSource = w.CreationTimestamp.Time, "creation time (no managedFields entry dates the spec change)"
		if n := len(c.events); n > 0 && snapshot.EventTime(c.events[n-1]).After(c.specAt) {
			c.specAt, c.specSource = snapshot.EventTime(c.events[n-1]), "newest event about the CloneSet (no managedFields entry dates the spec change)"
		}
	}
	c.statusAt, _ = statusWrite(w)
	for _, p := range c.active {
		c.podsAt = later(c.podsAt, p.CreationTimestamp.Time, metaWrite(p))
	}
	for _, p := range c.terminating {
		del := p.DeletionTimestamp.Time
		if p.DeletionGracePeriodSeconds != nil {
			del = del.Add(-time.Duration(*p.DeletionGracePeriodSeconds) * time.Second)
		}
		c.podsAt = later(c.podsAt, del)
	}
	return c
}

// statusDate says when the status and the pods last changed, for evidence.
func (c *cloneSetState) statusDate(now time.Time) string {
	parts := []string{}
	if !c.statusAt.IsZero() {
		parts = append(parts, "status last written "+checks.Age(now, c.statusAt)+" ago")
	} else {
		parts = append(parts, "status never written through the status subresource")
	}
	if !c.podsAt.IsZero() {
		parts = append(parts, "its pods last changed "+checks.Age(now, c.podsAt)+" ago")
	}
	return strings.Join(parts, ", ")
}

// signal is one difference between a CloneSet's status and reality, dated by the newest change a
// healthy controller would have reacted to; scale says a scale step is missing.
type signal struct {
	at    time.Time
	line  string
	scale bool
}

// frozenSignal tests one difference; it fires only once its date is older than the threshold.
type frozenSignal func(p *pass, c *cloneSetState) (signal, bool)

// frozenSignals are the differences a frozen verdict tests, in the order its evidence lists them.
func frozenSignals() []frozenSignal {
	return []frozenSignal{generationUnobserved, replicasStale, updatedReplicasStale, scaleStepMissing}
}

func later(ts ...time.Time) time.Time {
	var out time.Time
	for _, t := range ts {
		if t.After(out) {
			out = t
		}
	}
	return out
}

// frozenVerdict decides whether a CloneSet's status is frozen: each difference between status and
// reality is dated by the newest change a healthy controller would have reacted to within
// milliseconds, and counts only once that is older than the threshold.
func frozenVerdict(p *pass, w *kruise.Workload) *frozenWorkload {
	// A CloneSet being deleted is left to the garbage collector (and to stuck-terminating).
	if w.Kind != kruise.KindCloneSet || w.DeletionTimestamp != nil {
		return nil
	}
	c := newCloneSetState(p.Snapshot, w)
	var v *frozenWorkload
	for _, test := range frozenSignals() {
		sig, ok := test(p, c)
		if !ok {
			continue
		}
		if v == nil {
			v = &frozenWorkload{w: w, since: sig.at}
		}
		v.signals = append(v.signals, sig.line)
		if sig.at.Before(v.since) {
			v.since = sig.at
		}
		v.scale = v.scale || sig.scale
	}
	if v != nil {
		v.support = settledPreparingNormal(p.Snapshot.Now, c)
	}
	return v
}

func generationUnobserved(p *pass, c *cloneSetState) (signal, bool) {
	w, now := c.w, p.Snapshot.Now
	if w.Generation <= w.Status.ObservedGeneration || now.Sub(c.specAt) < p.frozenAfter {
		return signal{}, false
	}
	return signal{at: c.specAt, line: checks.Evidencef("status.observedGeneration %d < metadata.generation %d: the spec changed %s ago (dated by %s at %s) and was never observed",
		w.Status.ObservedGeneration, w.Generation, checks.Age(now, c.specAt), c.specSource, c.specAt.UTC().Format(time.RFC3339))}, true
}

func replicasStale(p *pass, c *cloneSetState) (signal, bool) {
	now, n := p.Snapshot.Now, int32(len(c.active))
	at := later(c.statusAt, c.podsAt)
	if c.w.Status.Replicas == n || now.Sub(at) < p.frozenAfter {
		return signal{}, false
	}
	return signal{at: at, scale: true, line: checks.Evidencef("status.replicas %d but %d active pods are controlled by it (%s)",
		c.w.Status.Replicas, n, c.statusDate(now))}, true
}

func updatedReplicasStale(p *pass, c *cloneSetState) (signal, bool) {
	w, now := c.w, p.Snapshot.Now
	rev := w.Status.UpdateRevision
	if rev == "" {
		return signal{}, false
	}
	upd := countRevision(c.active, rev)
	at := later(c.statusAt, c.podsAt)
	if upd == w.Status.UpdatedReplicas || now.Sub(at) < p.frozenAfter {
		return signal{}, false
	}
	return signal{at: at, line: checks.Evidencef("status.updatedReplicas %d but %d active pods carry updateRevision %s (%s)",
		w.Status.UpdatedReplicas, upd, rev, c.statusDate(now))}, true
}

// scaleStepMissing: the scale step the controller would take on the pods it lists, counted as it
// counts them, and no create or delete since.
func scaleStepMissing(p *pass, c *cloneSetState) (signal, bool) {
	w, now := c.w, p.Snapshot.Now
	pending := pendingScaleOf(p.Env, w, c.active)
	if len(pending) == 0 {
		return signal{}, false
	}
	var lastScale *corev1.Event
	for _, e := range c.events {
		if e.Reason == "SuccessfulCreate" || e.Reason == "SuccessfulDelete" {
			lastScale = e
		}
	}
	at := later(c.specAt, c.statusAt, c.podsAt)
	last := "none in the events read"
	if lastScale != nil {
		at = later(at, snapshot.EventTime(lastScale))
		last = fmt.Sprintf("the newest, %s, is %s old", lastScale.Reason, checks.Age(now, snapshot.EventTime(lastScale)))
	}
	if now.Sub(at) < p.frozenAfter {
		return signal{}, false
	}
	return signal{at: at, scale: true, line: checks.Evidencef("spec.replicas %d but %d active pods are controlled by it: %s; no SuccessfulCreate/SuccessfulDelete event followed for %s (%s)",
		replicasOf(w), len(c.active), strings.Join(pending, "; "), checks.Age(now, at), last)}, true
}

// settledPreparingNormal are the lifecycle states the controller would have refreshed: pods
// PreparingNormal with nothing left to wait for.
func settledPreparingNormal(now time.Time, c *cloneSetState) []string {
	var out []string
	for _, p := range c.active {
		if p.Labels[kruise.LabelLifecycleState] != kruise.StatePreparingNormal {
			continue
		}
		if h := c.w.Lifecycle.PreNormal; h == nil || len(hookMisses(h, p)) == 0 {
			since, _ := lifecycleSince(p)
			out = append(out, checks.Evidencef("pod %s is still PreparingNormal after %s with nothing left to wait for", p.Name, checks.Age(now, since)))
		}
	}
	return out
}
