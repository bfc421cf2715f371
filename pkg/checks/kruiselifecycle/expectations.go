package kruiselifecycle

import (
	"time"

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
		},
	}, expectationsDoc)}
}

// PodCandidates returns the pods of CloneSets whose status disagrees with their pods in the
// metadata, so phases are known for the few that may be frozen.
func (expectationsUnsatisfied) PodCandidates(s *snapshot.Snapshot) []types.UID {
	return expectationCandidates(s)
}

func expectationCandidates(s *snapshot.Snapshot) []types.UID {
	var out []types.UID
	for _, w := range s.Workloads {
		if w.Kind != kruise.KindCloneSet || !s.Scope.PodsComplete(w) {
			continue
		}
		active, _ := ownedPods(s, w)
		n := int32(len(active))
		suspect := w.Generation > w.Status.ObservedGeneration || w.Status.Replicas != n ||
			(w.Replicas != nil && *w.Replicas != n) ||
			(w.Status.UpdateRevision != "" && w.Status.UpdatedReplicas != countRevision(active, w.Status.UpdateRevision)) ||
			deletionPlanned(w, active)
		if !suspect {
			continue
		}
		for _, p := range active {
			out = append(out, p.UID)
		}
	}
	return out
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
