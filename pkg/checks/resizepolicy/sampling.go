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

// PodCandidates returns the pods of in-place workloads worth reading in full: those the check
// judges (see placement), and of the pods the rollout will still update only those an old
// kruise-manager may fail to update. The pods one workload created from one revision, with the
// same sidecars injected, have the same containers except for what the apiserver and admission
// webhooks did when each was created, so the oldest and the newest of such a group stand for it
// (the oldest alone when all were created within sampleWindow, through the same apiserver). Once
// they have been read (the collector asks again), a group whose samples differ from its template
// in any way is read whole. Pods updated in place (created from a revision their labels no longer
// name) and pods a failed in-place update names are always read.
func (check) PodCandidates(s *snapshot.Snapshot) []types.UID {
	pa := newPass(s, nil)
	var out []types.UID
	for _, w := range inPlaceWorkloads(s) {
		failed := failedPods(s, w)
		type groupKey struct {
			revision, sidecarHash, injected string
			stand                           stand
		}
		groups := map[groupKey][]*metav1.ObjectMeta{}
		place := map[groupKey]placement{}
		var keys []groupKey
		owned := ownedPods(s, w)
		r := newRollout(s, w, owned)
		for _, p := range owned {
			pl := r.place(p, pa.hist.templateFor(w))
			if !pl.judged() || (pl.stand == standPending && !pa.mgrOld) {
				continue
			}
			if failed[p.Name] || p.Annotations[kruise.AnnotationInPlaceState] != "" {
				out = append(out, p.UID)
				continue
			}
			k := groupKey{p.Labels[revisionLabel], p.Annotations[kruise.AnnotationSidecarHash], p.Annotations[kruise.AnnotationSidecarInjects], pl.stand}
			place[k] = pl
			if groups[k] == nil {
				keys = append(keys, k)
			}
			groups[k] = append(groups[k], p)
		}
		for _, k := range keys {
			g := groups[k]
			oldest, newest := g[0], g[0]
			for _, p := range g[1:] {
				if p.CreationTimestamp.Before(&oldest.CreationTimestamp) {
					oldest = p
				}
				if newest.CreationTimestamp.Before(&p.CreationTimestamp) {
					newest = p
				}
			}
			if pa.sampleMetaDiffers(w, oldest, place[k]) || pa.sampleMetaDiffers(w, newest, place[k]) {
				for _, p := range g {
					out = append(out, p.UID)
				}
				continue
			}
			out = append(out, oldest.UID)
			if newest.CreationTimestamp.Sub(oldest.CreationTimestamp.Time) > sampleWindow {
				out = append(out, newest.UID)
			}
		}
	}
	return out
}

// sampleMetaDiffers is sampleDiffers for a pod that may not have been read in full yet.
func (pa *pass) sampleMetaDiffers(w *kruise.Workload, meta *metav1.ObjectMeta, pl placement) bool {
	pod, full := pa.s.FullPod(meta.UID)
	return full && pa.sampleDiffers(w, pod, pl)
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
