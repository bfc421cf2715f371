package kruiselifecycle

import (
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks/internal/kruiseenv"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// ExpectationsUnsatisfiedID is the check's ID.
const ExpectationsUnsatisfiedID = "expectations-unsatisfied"

// expectationsThreshold is the check's default threshold; it stands for the manager's
// --expectation-timeout (default 5m), read from its Deployment at run time.
const expectationsThreshold = 5 * time.Minute

type expectationsUnsatisfied struct{}

// ExpectationsUnsatisfied returns the expectations-unsatisfied check.
func ExpectationsUnsatisfied() checks.Check { return expectationsUnsatisfied{} }

// Info describes the check and its root causes.
func (expectationsUnsatisfied) Info() checks.Info {
	return checks.Info{
		ID:    ExpectationsUnsatisfiedID,
		Title: "OpenKruise workloads the controller stopped reconciling",
		Description: "The CloneSet controller records what it expects to see after each create, delete and update " +
			"(expectations) and skips every reconcile, before computing status, while one is unsatisfied. If the " +
			"watch event that would satisfy it is lost, the CloneSet stays frozen: its status no longer matches " +
			"the pods, spec changes are not observed, and no pod is created or deleted. This check compares the " +
			"CloneSet's status with the pods it owns and its events, and dates each difference (managedFields of " +
			"the spec and status writes, pod changes, controller events): a difference older than the threshold " +
			"means the controller has not reconciled it. A rollout in progress, pods that are not Ready, a paused " +
			"update or a partition are not findings, because the status still matches the pods. The leader's " +
			"log, read through pods/log of the Lease holder, names the leaked expectation.\n\n" +
			"The default threshold is the kruise-manager's --expectation-timeout (5m unless set); --min-age " +
			"replaces it. Advanced StatefulSets and Advanced DaemonSets keep writing status while their update " +
			"expectations wait, so a frozen status does not show their leaks; they are not covered.",
		Threshold:  expectationsThreshold,
		RootCauses: expectationsRootCauses(),
		Needs: []checks.Need{
			{Input: snapshot.InputKruiseWorkloads},
			{Input: snapshot.InputPods},
			{Input: snapshot.InputEvents, Optional: true},
			{Input: snapshot.InputControllers, Optional: true},
			{Input: snapshot.InputControllerLogs, Optional: true},
		},
	}
}

// PodCandidates returns the pods of CloneSets whose status disagrees with their pods in the
// metadata, so phases are known for the few that may be frozen.
func (expectationsUnsatisfied) PodCandidates(s *snapshot.Snapshot) []types.UID {
	return expectationCandidates(s)
}

func expectationCandidates(s *snapshot.Snapshot) []types.UID {
	var out []types.UID
	for _, w := range s.Workloads {
		if w.Kind != kruise.KindCloneSet {
			continue
		}
		active, _ := ownedPods(s, w)
		n := int32(len(active))
		suspect := w.Generation > w.Status.ObservedGeneration || w.Status.Replicas != n ||
			(w.Replicas != nil && *w.Replicas != n) ||
			(w.Status.UpdateRevision != "" && w.Status.UpdatedReplicas != countRevision(active, w.Status.UpdateRevision))
		if !suspect {
			continue
		}
		for _, p := range active {
			out = append(out, p.UID)
		}
	}
	return out
}

func (c expectationsUnsatisfied) Run(s *snapshot.Snapshot, threshold time.Duration) []report.Finding {
	env := kruiseenv.New(s)
	th := effectiveThreshold(s, threshold, expectationsThreshold, env.ExpectationTimeout())
	var out []report.Finding
	for _, v := range frozenWorkloads(env, th) {
		out = append(out, expectationsFinding(c.Info(), env, v))
	}
	return out
}
