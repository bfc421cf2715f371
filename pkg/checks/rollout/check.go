package rollout

import (
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks/internal/kruiseenv"
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
			{Input: snapshot.InputControllerLogs, Optional: true},
		},
	}, documentation)}
}

// DeclareReads declares, for each workload whose status says its rollout is not done, the few
// pods it most recently created or moved on the update revision (or PreparingUpdate): the
// pods a stalled rollout waits on. Workloads whose counts are complete cost no read.
// The daemon's pods are read too once one of those pods, read, shows an in-place update waiting
// for kruise-daemon, to say whether one is on that pod's node.
func (check) DeclareReads(s *snapshot.Snapshot) snapshot.Reads {
	var out []types.UID
	for _, w := range s.Workloads {
		r, ok := stalledRollout(s, w)
		if !ok || !s.Scope.PodsComplete(w) {
			continue
		}
		for i, p := range r.pods {
			if i == maxCandidates {
				break
			}
			out = append(out, p.UID)
		}
	}
	if len(out) == 0 {
		return snapshot.Reads{}
	}
	awaited := func(s *snapshot.Snapshot) bool {
		return slices.ContainsFunc(out, func(uid types.UID) bool {
			full, ok := s.FullPod(uid)
			return ok && awaitsDaemon(full)
		})
	}
	return snapshot.Reads{Pods: []snapshot.PodReads{{UIDs: out},
		{UIDs: newDaemonView(s, kruiseenv.New(s)).pods(), When: awaited}}}
}

// Run reports the rollouts that have not progressed for their threshold, and the SidecarSets
// whose update stopped.
func (c check) Run(s *snapshot.Snapshot, threshold time.Duration) []report.Finding {
	info := c.Info()
	p := newPass(s)
	var out []report.Finding
	for _, w := range s.Workloads {
		r, ok := stalledRollout(s, w)
		if !ok || !s.Scope.PodsComplete(w) || s.Now.Sub(r.since) < r.threshold(s, threshold) {
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
// kruise-daemon.
type pass struct {
	*kruiseenv.Env
	daemon *daemonView
}

func newPass(s *snapshot.Snapshot) *pass {
	env := kruiseenv.New(s)
	return &pass{Env: env, daemon: newDaemonView(s, env)}
}
