package rollout

import (
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks/internal/kruiseenv"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks/internal/webhookenv"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// check is the rollout-stalled check.
type check struct{ checks.Documented }

// New returns the rollout-stalled check.
func New() checks.Check {
	return check{checks.Describe(checks.Info{
		ID:         ID,
		Threshold:  10 * time.Minute,
		RootCauses: rootCauses(),
		Needs: []checks.Need{
			{Input: snapshot.InputPods, PodAnnotations: []string{kruise.AnnotationLifecycleTime, kruise.AnnotationSidecarHash, kruise.AnnotationSidecarHashWithoutImage, kruise.AnnotationSidecarInjects}},
			{Input: snapshot.InputKruiseWorkloads},
			{Input: snapshot.InputSidecarSets, Optional: true},
			{Input: snapshot.InputEvents, Optional: true},
			{Input: snapshot.InputControllers, Optional: true},
			{Input: snapshot.InputReplicaSets, Optional: true},
			{Input: snapshot.InputNodes, Optional: true},
			{Input: snapshot.InputControllerLogs, Optional: true},
			{Input: snapshot.InputAdmission, Optional: true},
			{Input: snapshot.InputNamespaces, Optional: true},
		},
	}, documentation)}
}

// DeclareReads declares, for each workload whose status says its rollout is not done, the few
// pods it most recently created or moved on the update revision (or PreparingUpdate), and those
// of its kind that hold a controller before it (a StatefulSet's pods on another revision, a
// DaemonSet's pods being deleted): the pods a stalled rollout waits on. A Deployment's pods are
// known once its ReplicaSets are read, which only Deployments whose controller reports them
// stuck cost. Workloads whose counts are complete cost no read.
// The daemon's pods are read too once one of those pods, read, shows an in-place update waiting
// for kruise-daemon, to say whether one is on that pod's node.
func (check) DeclareReads(s *snapshot.Snapshot) snapshot.Reads {
	var out []types.UID
	for _, r := range rollouts(s) {
		out = append(out, r.candidates()...)
	}
	// A pod the rollout waits on may be held by its node (nodeDown).
	reads := snapshot.Reads{Nodes: []snapshot.NodeReads{{From: snapshot.NodesOfPods}}}
	for _, d := range stalledDeployments(s) {
		sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
		if err != nil {
			continue
		}
		reads.ReplicaSets = append(reads.ReplicaSets, snapshot.ReplicaSetRead{Namespace: d.Namespace, Selector: sel.String(), Deployment: d.UID})
	}
	if len(reads.ReplicaSets) > 0 {
		reads.Pods = append(reads.Pods, snapshot.PodReads{From: func(s *snapshot.Snapshot) []types.UID {
			var uids []types.UID
			for _, d := range stalledDeployments(s) {
				if r, ok := deploymentRollout(s, d); ok {
					uids = append(uids, r.candidates()...)
				}
			}
			return uids
		}})
	}
	if len(out) == 0 {
		return reads
	}
	awaited := func(s *snapshot.Snapshot) bool {
		return slices.ContainsFunc(out, func(uid types.UID) bool {
			full, ok := s.FullPod(uid)
			return ok && awaitsDaemon(full)
		})
	}
	reads.Pods = append(reads.Pods, snapshot.PodReads{UIDs: out},
		snapshot.PodReads{UIDs: newDaemonView(s, kruiseenv.New(s)).pods(), When: awaited})
	return reads
}

// Run reports the rollouts that have not progressed for their threshold, and the SidecarSets
// whose update stopped.
func (c check) Run(s *snapshot.Snapshot, threshold time.Duration) []report.Finding {
	info := c.Info()
	p := newPass(s, threshold)
	var out []report.Finding
	for _, r := range rollouts(s) {
		if s.Now.Sub(r.since) < r.threshold(s, threshold) {
			continue
		}
		if d, ok := checks.Diagnose(workloadRules(), p, newStall(p, r)); ok {
			out = append(out, checks.NewFinding(info, d))
		}
	}
	for _, ss := range s.SidecarSets {
		st, ok := newSidecarStall(p, ss, threshold)
		if !ok {
			continue
		}
		if d, ok := checks.Diagnose(sidecarSetRules(), p, st); ok {
			out = append(out, checks.NewFinding(info, d))
		}
	}
	return out
}

// pass is what one run of the check knows besides the snapshot: the kruise-manager and
// kruise-daemon, and the threshold of the run.
type pass struct {
	*kruiseenv.Env
	daemon    *daemonView
	threshold time.Duration
	// hooks are the admission webhooks, read once a refused create names one.
	hooks *webhookenv.Env
}

func newPass(s *snapshot.Snapshot, threshold time.Duration) *pass {
	env := kruiseenv.New(s)
	return &pass{Env: env, daemon: newDaemonView(s, env), threshold: threshold}
}
