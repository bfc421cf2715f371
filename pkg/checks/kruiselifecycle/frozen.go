package kruiselifecycle

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks/internal/kruiseenv"
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

// frozenWorkloads computes the verdict for every CloneSet of the snapshot, by UID.
func frozenWorkloads(env *kruiseenv.Env, th time.Duration) map[types.UID]*frozenWorkload {
	out := map[types.UID]*frozenWorkload{}
	for _, w := range env.Snapshot.Workloads {
		// A workload whose pods the label selector may have cut is not judged on them.
		if !env.Snapshot.Scope.PodsComplete(w) {
			continue
		}
		if v := frozenVerdict(env, w, th); v != nil {
			out[w.UID] = v
		}
	}
	return out
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

type signal struct {
	at   time.Time
	line string
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
func frozenVerdict(env *kruiseenv.Env, w *kruise.Workload, th time.Duration) *frozenWorkload {
	// A CloneSet being deleted is left to the garbage collector (and to stuck-terminating).
	if w.Kind != kruise.KindCloneSet || w.DeletionTimestamp != nil {
		return nil
	}
	s, now := env.Snapshot, env.Snapshot.Now
	active, terminating := ownedPods(s, w)
	events := s.EventsFor(w.Kind, w.Namespace, w.Name, w.UID)

	specAt, specBy := specWrite(w)
	specSource := "managedFields: last spec write by " + specBy
	if specAt.IsZero() {
		specAt, specSource = w.CreationTimestamp.Time, "creation time (no managedFields entry dates the spec change)"
		if n := len(events); n > 0 && snapshot.EventTime(events[n-1]).After(specAt) {
			specAt, specSource = snapshot.EventTime(events[n-1]), "newest event about the CloneSet (no managedFields entry dates the spec change)"
		}
	}
	statusAt, _ := statusWrite(w)
	var podsAt time.Time
	for _, p := range active {
		podsAt = later(podsAt, p.CreationTimestamp.Time, metaWrite(p))
	}
	for _, p := range terminating {
		del := p.DeletionTimestamp.Time
		if p.DeletionGracePeriodSeconds != nil {
			del = del.Add(-time.Duration(*p.DeletionGracePeriodSeconds) * time.Second)
		}
		podsAt = later(podsAt, del)
	}
	statusDate := func() string {
		parts := []string{}
		if !statusAt.IsZero() {
			parts = append(parts, "status last written "+checks.Age(now, statusAt)+" ago")
		} else {
			parts = append(parts, "status never written through the status subresource")
		}
		if !podsAt.IsZero() {
			parts = append(parts, "its pods last changed "+checks.Age(now, podsAt)+" ago")
		}
		return strings.Join(parts, ", ")
	}

	var fired []signal
	scale := false
	n := int32(len(active))
	if w.Generation > w.Status.ObservedGeneration && now.Sub(specAt) >= th {
		fired = append(fired, signal{specAt, checks.Evidencef("status.observedGeneration %d < metadata.generation %d: the spec changed %s ago (dated by %s at %s) and was never observed",
			w.Status.ObservedGeneration, w.Generation, checks.Age(now, specAt), specSource, specAt.UTC().Format(time.RFC3339))})
	}
	if w.Status.Replicas != n {
		if at := later(statusAt, podsAt); now.Sub(at) >= th {
			fired = append(fired, signal{at, checks.Evidencef("status.replicas %d but %d active pods are controlled by it (%s)", w.Status.Replicas, n, statusDate())})
			scale = true
		}
	}
	if rev := w.Status.UpdateRevision; rev != "" {
		if upd := countRevision(active, rev); upd != w.Status.UpdatedReplicas {
			if at := later(statusAt, podsAt); now.Sub(at) >= th {
				fired = append(fired, signal{at, checks.Evidencef("status.updatedReplicas %d but %d active pods carry updateRevision %s (%s)", w.Status.UpdatedReplicas, upd, rev, statusDate())})
			}
		}
	}
	// The scale step the controller would take on the pods it lists, counted as it counts them.
	if pending := pendingScaleOf(env, w, active); len(pending) > 0 {
		var lastScale *corev1.Event
		for _, e := range events {
			if e.Reason == "SuccessfulCreate" || e.Reason == "SuccessfulDelete" {
				lastScale = e
			}
		}
		at := later(specAt, statusAt, podsAt)
		if lastScale != nil {
			at = later(at, snapshot.EventTime(lastScale))
		}
		if now.Sub(at) >= th {
			last := "none in the events read"
			if lastScale != nil {
				last = fmt.Sprintf("the newest, %s, is %s old", lastScale.Reason, checks.Age(now, snapshot.EventTime(lastScale)))
			}
			fired = append(fired, signal{at, checks.Evidencef("spec.replicas %d but %d active pods are controlled by it: %s; no SuccessfulCreate/SuccessfulDelete event followed for %s (%s)",
				replicasOf(w), n, strings.Join(pending, "; "), checks.Age(now, at), last)})
			scale = true
		}
	}
	if len(fired) == 0 {
		return nil
	}
	v := &frozenWorkload{w: w, since: fired[0].at, scale: scale}
	for _, f := range fired {
		v.signals = append(v.signals, f.line)
		if f.at.Before(v.since) {
			v.since = f.at
		}
	}
	// Lifecycle states the controller would have refreshed.
	for _, p := range active {
		if p.Labels[kruise.LabelLifecycleState] != kruise.StatePreparingNormal {
			continue
		}
		if h := w.Lifecycle.PreNormal; h == nil || len(hookMisses(h, p)) == 0 {
			since, _ := lifecycleSince(p)
			v.support = append(v.support, checks.Evidencef("pod %s is still PreparingNormal after %s with nothing left to wait for", p.Name, checks.Age(now, since)))
		}
	}
	return v
}
