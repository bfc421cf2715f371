package rollout

import (
	"fmt"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks/internal/kruiseenv"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// maxNamed bounds the pods a finding names.
const maxNamed = 5

// sidecarSetDraft judges one SidecarSet. Its controller writes the status before it checks its
// update expectations, and returns with "matched pods has some update in flight" while any is
// unsatisfied (Processor.UpdateSidecarSet, pkg/controller/sidecarset/sidecarset_processor.go,
// kruise v1.9.0): a leaked expectation leaves the counts as they are and the pods on the old
// sidecar hash for good, until the manager restarts (openkruise/kruise#1168, #2253). Pods the
// user holds back (NotUpdate, paused, partition, updateStrategy.selector) are not a stall; nor
// are unready matched pods, which maxUnavailable waits for, unless the log names the leak; nor
// pods whose change is more than images, which wait to be recreated by design.
func sidecarSetDraft(s *snapshot.Snapshot, env *kruiseenv.Env, ss *kruise.SidecarSet, threshold time.Duration) (checks.Draft, bool) {
	hash := ss.Hash()
	st := ss.Status
	if hash == "" || ss.Strategy.Type == kruise.SidecarSetNotUpdate || ss.Strategy.Paused || st.ObservedGeneration < ss.Generation {
		return checks.Draft{}, false
	}
	var old []*metav1.ObjectMeta
	since := lastSpecChange(ss)
	for _, p := range s.Pods {
		if !kruise.Injected(p.Annotations, ss.Name) {
			continue
		}
		rev, ok := kruise.PodSidecarRevisionOf(p.Annotations, ss.Name)
		switch {
		case ok && rev.Hash == hash:
			if rev.UpdateTimestamp.After(since) {
				since = rev.UpdateTimestamp.Time
			}
		case p.DeletionTimestamp == nil && ss.Upgradable(p.Annotations):
			old = append(old, p)
		}
	}
	if len(old) == 0 || (ss.Strategy.Partition != nil && int32(len(old)) <= *ss.Strategy.Partition) || s.Now.Sub(since) < threshold {
		return checks.Draft{}, false
	}
	inFlight := inFlightLines(env, ss, old, since)
	if len(inFlight) == 0 && (ss.Strategy.Selective || st.ReadyPods < st.MatchedPods) {
		return checks.Draft{}, false
	}
	sort.Slice(old, func(i, j int) bool { return old[i].Namespace+"/"+old[i].Name < old[j].Namespace+"/"+old[j].Name })
	ev := []string{
		checks.Evidencef("SidecarSet %s: status matchedPods %d, updatedPods %d, readyPods %d, updatedReadyPods %d; no pod updated to hash %s for %s",
			ss.Name, st.MatchedPods, st.UpdatedPods, st.ReadyPods, st.UpdatedReadyPods, checks.Truncate(hash, 40), checks.Age(s.Now, since)),
		checks.Evidencef("%d injected pods still carry an older hash of %s: %s", len(old), ss.Name, podNames(old)),
	}
	d := checks.Draft{Object: checks.Ref(kruise.Group+"/v1alpha1", kruise.KindSidecarSet, &ss.ObjectMeta), Since: since}
	if len(inFlight) == 0 {
		why := "no \"update in flight\" line was found in the leader's log"
		if !env.LogsRead {
			why = "the leader's log was not read (" + env.LogsUnread + ")"
		}
		d.RootCause = RootCauseSidecarSetStalled
		d.Summary = fmt.Sprintf("SidecarSet %s has updated no pod for %s while %d still run older sidecars", ss.Name, checks.Age(s.Now, since), len(old))
		d.Message = "The SidecarSet is neither paused nor held by a partition, every matched pod is ready, and still no pod has moved to its " +
			"current sidecars. The known cause is a leaked update expectation in the kruise-manager, but " + why +
			": read the leader's log for \"matched pods has some update in flight\" before restarting it."
		d.Evidence = append(ev, env.ManagerEvidence())
		return d, true
	}
	d.RootCause = RootCauseSidecarSetInFlight
	d.Summary = fmt.Sprintf("SidecarSet %s update stopped: the kruise-manager waits on an update in flight that never lands", ss.Name)
	d.Message = "The SidecarSet controller returns before updating any pod while it expects an update of a matched pod it never sees " +
		"(its in-memory expectation leaked); the counts stay frozen and the pods keep the old sidecars until the kruise-manager leader restarts."
	d.Evidence = append(append(ev, inFlight...), env.ManagerEvidence())
	if line := env.LeaderEvidence(); line != "" {
		d.Evidence = append(d.Evidence, line)
	}
	if fx, ok := env.RestartFix(); ok {
		d.Fixes = []report.Fix{fx}
	}
	return d, true
}

// inFlightRecent is how recent an "update in flight" line must be to show a leak: the
// controller requeues after a second while the expectation is unsatisfied (RequeueAfter in
// UpdateSidecarSet), so a leak logs the line every second, while a healthy batch logs it only
// for the moment its updates take to reach the informer.
const inFlightRecent = 2 * time.Minute

// inFlightLines are the leader's "update in flight" lines that name the SidecarSet or one of
// the pods still on an older hash, logged since the update stopped moving and recently, the
// newest few.
func inFlightLines(env *kruiseenv.Env, ss *kruise.SidecarSet, old []*metav1.ObjectMeta, since time.Time) []string {
	if !env.LogsRead || env.Manager == nil {
		return nil
	}
	names := map[string]bool{}
	for _, p := range old {
		names[p.Namespace+"/"+p.Name] = true
	}
	var out []string
	for _, l := range kruise.ParseInFlightLogs(env.LogText(), env.Snapshot.Now) {
		recent := !l.Time.IsZero() && l.Time.After(since) && env.Snapshot.Now.Sub(l.Time) <= inFlightRecent
		if recent && (l.SidecarSet == ss.Name || names[l.Pod]) {
			out = append(out, "kruise-manager log: "+checks.Truncate(l.Line, 300))
		}
	}
	if len(out) > 3 {
		out = out[len(out)-3:]
	}
	return out
}

// lastSpecChange is the newest write to the SidecarSet other than its status (its managedFields),
// or its creation: the update to the current hash cannot have started before it.
func lastSpecChange(ss *kruise.SidecarSet) time.Time {
	t := ss.CreationTimestamp.Time
	for _, m := range ss.ManagedFields {
		if m.Subresource == "" && m.Time != nil && m.Time.After(t) {
			t = m.Time.Time
		}
	}
	return t
}

func podNames(ps []*metav1.ObjectMeta) string {
	var names []string
	for i, p := range ps {
		if i == maxNamed {
			names = append(names, fmt.Sprintf("and %d more", len(ps)-maxNamed))
			break
		}
		names = append(names, p.Namespace+"/"+p.Name)
	}
	return strings.Join(names, ", ")
}
