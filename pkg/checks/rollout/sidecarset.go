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
)

// maxNamed bounds the pods a finding names.
const maxNamed = 5

// sidecarStall is a SidecarSet whose update may have stopped: injected pods still on an older
// sidecar hash, none updated since, and the leader's "update in flight" lines about them.
type sidecarStall struct {
	ss       *kruise.SidecarSet
	hash     string
	old      []*metav1.ObjectMeta
	since    time.Time
	inFlight []string
}

// newSidecarStall judges one SidecarSet. Its controller writes the status before it checks its
// update expectations, and returns with "matched pods has some update in flight" while any is
// unsatisfied (Processor.UpdateSidecarSet, pkg/controller/sidecarset/sidecarset_processor.go,
// kruise v1.9.0): a leaked expectation leaves the counts as they are and the pods on the old
// sidecar hash for good, until the manager restarts (openkruise/kruise#1168, #2253). Pods the
// user holds back (NotUpdate, paused, partition, updateStrategy.selector) are not a stall.
func newSidecarStall(p *pass, ss *kruise.SidecarSet, threshold time.Duration) (*sidecarStall, bool) {
	s := p.Snapshot
	st := &sidecarStall{ss: ss, hash: ss.Hash(), since: lastSpecChange(ss)}
	if st.hash == "" || ss.Strategy.Type == kruise.SidecarSetNotUpdate || ss.Strategy.Paused || ss.Status.ObservedGeneration < ss.Generation {
		return nil, false
	}
	for _, pod := range s.Pods {
		if !kruise.Injected(pod.Annotations, ss.Name) {
			continue
		}
		rev, ok := kruise.PodSidecarRevisionOf(pod.Annotations, ss.Name)
		switch {
		case ok && rev.Hash == st.hash:
			if rev.UpdateTimestamp.After(st.since) {
				st.since = rev.UpdateTimestamp.Time
			}
		case pod.DeletionTimestamp == nil && ss.Upgradable(pod.Annotations):
			st.old = append(st.old, pod)
		}
	}
	if len(st.old) == 0 || (ss.Strategy.Partition != nil && int32(len(st.old)) <= *ss.Strategy.Partition) || s.Now.Sub(st.since) < threshold {
		return nil, false
	}
	st.inFlight = inFlightLines(p.Env, ss, st.old, st.since)
	sort.Slice(st.old, func(i, j int) bool {
		return st.old[i].Namespace+"/"+st.old[i].Name < st.old[j].Namespace+"/"+st.old[j].Name
	})
	return st, true
}

// draft is the draft every finding on the SidecarSet starts from, with the root cause.
func (st *sidecarStall) draft(p *pass, rootCause string) checks.Draft {
	ss, s := st.ss, p.Snapshot
	return checks.Draft{
		RootCause: rootCause,
		Object:    checks.Ref(kruise.Group+"/v1alpha1", kruise.KindSidecarSet, &ss.ObjectMeta),
		Since:     st.since,
		Evidence: []string{
			checks.Evidencef("SidecarSet %s: status matchedPods %d, updatedPods %d, readyPods %d, updatedReadyPods %d; no pod updated to hash %s for %s",
				ss.Name, ss.Status.MatchedPods, ss.Status.UpdatedPods, ss.Status.ReadyPods, ss.Status.UpdatedReadyPods, checks.Truncate(st.hash, 40), checks.Age(s.Now, st.since)),
			checks.Evidencef("%d injected pods still carry an older hash of %s: %s", len(st.old), ss.Name, podNames(st.old)),
		},
	}
}

// sidecarSetRules are the root causes of a SidecarSet whose update stopped, most specific first.
func sidecarSetRules() []checks.Rule[*pass, *sidecarStall] {
	return []checks.Rule[*pass, *sidecarStall]{sidecarSetInFlight, sidecarSetStalled}
}

// sidecarSetInFlight: the leader logs the update in flight it waits on, which never lands.
func sidecarSetInFlight(p *pass, st *sidecarStall) (checks.Draft, bool) {
	if len(st.inFlight) == 0 {
		return checks.Draft{}, false
	}
	d := st.draft(p, RootCauseSidecarSetInFlight)
	d.Summary = fmt.Sprintf("SidecarSet %s update stopped: the kruise-manager waits on an update in flight that never lands", st.ss.Name)
	d.Message = "The SidecarSet controller returns before updating any pod while it expects an update of a matched pod it never sees " +
		"(its in-memory expectation leaked); the counts stay frozen and the pods keep the old sidecars until the kruise-manager leader restarts."
	d.Evidence = append(append(d.Evidence, st.inFlight...), p.ManagerEvidence())
	if line := p.LeaderEvidence(); line != "" {
		d.Evidence = append(d.Evidence, line)
	}
	if fx, ok := p.RestartFix(); ok {
		d.Fixes = []report.Fix{fx}
	}
	return d, true
}

// sidecarSetStalled: no log line names the leak, yet nothing else holds the update. Unready
// matched pods, which maxUnavailable waits for, and a selective update are no stall without one.
func sidecarSetStalled(p *pass, st *sidecarStall) (checks.Draft, bool) {
	ss := st.ss
	if ss.Strategy.Selective || ss.Status.ReadyPods < ss.Status.MatchedPods {
		return checks.Draft{}, false
	}
	why := "no \"update in flight\" line was found in the leader's log"
	if !p.LogsRead {
		why = "the leader's log was not read (" + p.LogsUnread + ")"
	}
	d := st.draft(p, RootCauseSidecarSetStalled)
	d.Summary = fmt.Sprintf("SidecarSet %s has updated no pod for %s while %d still run older sidecars", ss.Name, checks.Age(p.Snapshot.Now, st.since), len(st.old))
	d.Message = "The SidecarSet is neither paused nor held by a partition, every matched pod is ready, and still no pod has moved to its " +
		"current sidecars. The known cause is a leaked update expectation in the kruise-manager, but " + why +
		": read the leader's log for \"matched pods has some update in flight\" before restarting it."
	d.Evidence = append(d.Evidence, p.ManagerEvidence())
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
