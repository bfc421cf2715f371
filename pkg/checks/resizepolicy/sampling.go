package resizepolicy

import (
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// sampleWindow is how far apart in creation the pods of one group may be for one of them to
// stand for all: a rollout or scale-up creates its pods within minutes, while an apiserver
// upgrade or a new admission webhook between two creations is a matter of days.
const sampleWindow = time.Hour

// DeclareReads declares what the check reads of in-place workloads beyond the bulk lists.
//
// Pods: those the check judges (see placement), and of the pods the rollout will still update
// only those an old kruise-manager may fail to update. The pods one workload created from one
// revision, with the same sidecars injected, have the same containers except for what the
// apiserver and admission webhooks did when each was created, so the oldest and the newest of
// such a group stand for it (the oldest alone when all were created within sampleWindow, through
// the same apiserver): they are its sample, and the group is read whole once a sample read
// differs from its template in any way. Pods updated in place (created from a revision their
// labels no longer name) and pods a failed in-place update names are always read. Pods a
// partition keeps on the current revision are judged against that revision's template, so they
// are read once it is.
//
// ControllerRevisions: in full, the current revision of a workload whose partition keeps pods on
// it (its template is what those pods are judged against); metadata-only, the revision a
// drifting pod is judged against, once a pod read shows the drift (its creation dates it).
func (check) DeclareReads(s *snapshot.Snapshot) snapshot.Reads {
	env := newPass(s, nil)
	var out snapshot.Reads
	for _, w := range inPlaceWorkloads(s) {
		owned := ownedPods(s, w)
		d := &workloadReads{env: env, w: w, r: newRollout(s, w, owned)}
		pods, revisions := d.declare(owned)
		out.Pods = append(out.Pods, pods...)
		out.Revisions = append(out.Revisions, revisions...)
	}
	return out
}

// workloadReads declares the reads of one in-place workload.
type workloadReads struct {
	env *pass
	w   *kruise.Workload
	r   *rollout
}

// declare declares the workload's reads, in one pass over its pods.
func (d *workloadReads) declare(owned []*metav1.ObjectMeta) ([]snapshot.PodReads, []snapshot.RevisionReads) {
	type groupKey struct {
		revision, sidecarHash, injected string
		stand                           stand
	}
	failed := failedPods(d.env.s, d.w)
	groups := map[groupKey][]*metav1.ObjectMeta{}
	var keys []groupKey
	var pods []snapshot.PodReads
	var revisions []snapshot.RevisionReads
	// drifting are the pods judged against the update revision; its creation dates their drift.
	var drifting []*metav1.ObjectMeta
	kept, dated := false, -1
	for _, p := range owned {
		pl := d.r.place(p, d.env.hist.templateFor(d.w))
		switch {
		case pl.stand == standKept:
			if !kept {
				kept = true
				revisions = append(revisions, snapshot.RevisionReads{When: d.templateUnread,
					Reads: []snapshot.RevisionRead{{Namespace: d.w.Namespace, Name: revisionName(d.w, d.r.current), Full: true}}})
			}
		case !pl.judged() || (pl.stand == standPending && !d.env.mgrOld):
			continue
		default:
			if dated < 0 {
				dated = len(revisions)
				revisions = append(revisions, snapshot.RevisionReads{
					Reads: []snapshot.RevisionRead{{Namespace: d.w.Namespace, Name: revisionName(d.w, d.r.update)}}})
			}
			drifting = append(drifting, p)
		}
		if failed[p.Name] || p.Annotations[kruise.AnnotationInPlaceState] != "" {
			pods = append(pods, snapshot.PodReads{UIDs: []types.UID{p.UID}, When: d.whenJudged(pl.stand)})
			continue
		}
		k := groupKey{p.Labels[revisionLabel], p.Annotations[kruise.AnnotationSidecarHash], p.Annotations[kruise.AnnotationSidecarInjects], pl.stand}
		if groups[k] == nil {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], p)
	}
	if dated >= 0 {
		drifts := d.anyDiffers(drifting...)
		revisions[dated].When = func(s *snapshot.Snapshot) bool {
			return newHistory(s).revision(d.w, d.r.update) == nil && drifts(s)
		}
	}
	for _, k := range keys {
		pods = append(pods, d.sampled(groups[k], k.stand))
	}
	return pods, revisions
}

// sampled declares the read of one group of alike pods: its oldest pod, and its newest when
// they were created more than sampleWindow apart, then the whole group once a sample differs.
func (d *workloadReads) sampled(g []*metav1.ObjectMeta, st stand) snapshot.PodReads {
	oldest, newest := g[0], g[0]
	all := make([]types.UID, len(g))
	for i, p := range g {
		if p.CreationTimestamp.Before(&oldest.CreationTimestamp) {
			oldest = p
		}
		if newest.CreationTimestamp.Before(&p.CreationTimestamp) {
			newest = p
		}
		all[i] = p.UID
	}
	sample := []types.UID{oldest.UID}
	if newest.CreationTimestamp.Sub(oldest.CreationTimestamp.Time) > sampleWindow {
		sample = append(sample, newest.UID)
	}
	return snapshot.PodReads{UIDs: sample, When: d.whenJudged(st), All: all, Widen: d.anyDiffers(oldest, newest)}
}

// whenJudged says when pods of a stand are judged: at once, except the pods a partition keeps,
// judged once the current revision's template is read.
func (d *workloadReads) whenJudged(st stand) snapshot.Condition {
	if st != standKept {
		return nil
	}
	return func(s *snapshot.Snapshot) bool { return newHistory(s).template(d.w, d.r.current) != nil }
}

// templateUnread says whether the current revision's data is still to be read.
func (d *workloadReads) templateUnread(s *snapshot.Snapshot) bool {
	cr := newHistory(s).revision(d.w, d.r.current)
	return cr == nil || len(cr.Data.Raw) == 0
}

// anyDiffers says whether any of the pods, read in full, differs from its placement's template.
func (d *workloadReads) anyDiffers(pods ...*metav1.ObjectMeta) snapshot.Condition {
	return func(s *snapshot.Snapshot) bool {
		var now *pass
		for _, p := range pods {
			pod, full := s.FullPod(p.UID)
			if !full {
				continue
			}
			if now == nil {
				// The revisions read since the declaration give the kept pods their template.
				c := *d.env
				c.s, c.hist = s, newHistory(s)
				now = &c
			}
			if pl := d.r.place(p, now.hist.templateFor(d.w)); pl.judged() && now.sampleDiffers(d.w, pod, pl) {
				return true
			}
		}
		return false
	}
}

// sampleDiffers reports whether a pod read in full shows anything the check could report on its
// group: a policy that differs from its placement's template or is defaulted, a sidecar whose
// SidecarSet is missing, or a policy an old kruise-manager would drop.
func (pa *pass) sampleDiffers(w *kruise.Workload, pod *corev1.Pod, pl placement) bool {
	p := comparePod(pa.s, w, pod, pl)
	if len(p.missingSidecarSets) > 0 || (pa.mgrOld && len(p.carriesPolicy()) > 0) {
		return true
	}
	for _, c := range p.containers {
		if len(c.differs) > 0 || len(c.defaulted) > 0 {
			return true
		}
	}
	return false
}

// failedPods returns the names of the workload's pods that a FailedUpdatePodInPlace event names.
func failedPods(s *snapshot.Snapshot, w *kruise.Workload) map[string]bool {
	out := map[string]bool{}
	for _, ev := range s.EventsFor(w.Kind, w.Namespace, w.Name, w.UID) {
		if ev.Reason != eventFailedInPlace {
			continue
		}
		if rest, ok := strings.CutPrefix(ev.Message, failedPrefix); ok {
			if name, _, ok := strings.Cut(rest, failedSuffix); ok {
				out[name] = true
			}
		}
	}
	return out
}

func inPlaceWorkloads(s *snapshot.Snapshot) []*kruise.Workload {
	var out []*kruise.Workload
	for _, w := range s.Workloads {
		if w.InPlace() {
			out = append(out, w)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		if out[i].Kind != out[j].Kind {
			return out[i].Kind < out[j].Kind
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// ownedPods returns the pods whose controller is w and whose labels match w's selector.
func ownedPods(s *snapshot.Snapshot, w *kruise.Workload) []*metav1.ObjectMeta {
	return s.OwnedPods(w)
}

// revisionLabel is the label every kruise workload puts on its pods (apps/v1 ControllerRevisionHashLabelKey).
const revisionLabel = "controller-revision-hash"
