package kruiselifecycle

import (
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// expectationsThreshold is the check's default threshold; it stands for the manager's
// --expectation-timeout (default 5m), read from its Deployment at run time.
const expectationsThreshold = 5 * time.Minute

// expectationsUnsatisfied is the expectations-unsatisfied check.
type expectationsUnsatisfied struct{ checks.Documented }

// ExpectationsUnsatisfied returns the expectations-unsatisfied check.
func ExpectationsUnsatisfied() checks.Check {
	return expectationsUnsatisfied{checks.Describe(checks.Info{
		ID:         ExpectationsUnsatisfiedID,
		Threshold:  expectationsThreshold,
		RootCauses: expectationsRootCauses(),
		Needs: []checks.Need{
			{Input: snapshot.InputKruiseWorkloads},
			{Input: snapshot.InputPods},
			{Input: snapshot.InputEvents, Optional: true},
			{Input: snapshot.InputControllers, Optional: true},
			{Input: snapshot.InputControllerLogs, Optional: true},
			{Input: snapshot.InputAdmission, Optional: true},
			{Input: snapshot.InputNamespaces, Optional: true},
		},
	}, expectationsDoc)}
}

// DeclareReads declares the pods of CloneSets whose status disagrees with their pods in the
// metadata, so phases are known for the few that may be frozen.
func (expectationsUnsatisfied) DeclareReads(s *snapshot.Snapshot) snapshot.Reads {
	return snapshot.Reads{Pods: expectationReads(s)}
}

// expectationReads declares the active pods of each CloneSet, read once its status disagrees
// with them. A pod read in full may show it has finished and is no longer active, so once one of
// them is read, whether the status disagrees is judged again on the pods read so far.
func expectationReads(s *snapshot.Snapshot) []snapshot.PodReads {
	var out []snapshot.PodReads
	for _, w := range s.Workloads {
		if w.Kind != kruise.KindCloneSet || !s.Scope.PodsComplete(w) {
			continue
		}
		active, _ := ownedPods(s, w)
		if len(active) == 0 {
			continue
		}
		uids := make([]types.UID, len(active))
		for i, p := range active {
			uids[i] = p.UID
		}
		declared := statusDisagrees(w, active)
		out = append(out, snapshot.PodReads{UIDs: uids, When: func(s *snapshot.Snapshot) bool {
			if !slices.ContainsFunc(uids, func(uid types.UID) bool { _, full := s.FullPod(uid); return full }) {
				return declared
			}
			active, _ := ownedPods(s, w)
			return statusDisagrees(w, active)
		}})
	}
	return out
}

// statusDisagrees reports whether the CloneSet's status disagrees with its active pods.
func statusDisagrees(w *kruise.Workload, active []*metav1.ObjectMeta) bool {
	n := int32(len(active))
	return w.Generation > w.Status.ObservedGeneration || w.Status.Replicas != n ||
		(w.Replicas != nil && *w.Replicas != n) ||
		(w.Status.UpdateRevision != "" && w.Status.UpdatedReplicas != countRevision(active, w.Status.UpdateRevision)) ||
		deletionPlanned(w, active)
}

// Run reports the CloneSets whose status is frozen past the threshold, each with its root cause.
func (c expectationsUnsatisfied) Run(s *snapshot.Snapshot, threshold time.Duration) []report.Finding {
	p := newPass(s, threshold, expectationsThreshold, c.Info())
	var out []report.Finding
	for _, v := range p.frozenWorkloads() {
		out = append(out, p.expectationsFinding(v))
	}
	return out
}
