package kruiselifecycle

import (
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

const preparingNormalThreshold = 10 * time.Minute

// stuckPreparingNormal is the stuck-preparing-normal check.
type stuckPreparingNormal struct {
	checks.Documented
	// expectations describes expectations-unsatisfied, whose verdict this check reports for
	// pods of frozen workloads.
	expectations checks.Info
}

// StuckPreparingNormal returns the stuck-preparing-normal check.
func StuckPreparingNormal() checks.Check {
	return stuckPreparingNormal{Documented: checks.Describe(checks.Info{
		ID:         StuckPreparingNormalID,
		Threshold:  preparingNormalThreshold,
		RootCauses: preparingNormalRootCauses(),
		Needs: []checks.Need{
			{Input: snapshot.InputPods, PodAnnotations: []string{kruise.AnnotationLifecycleTime}},
			{Input: snapshot.InputKruiseWorkloads},
			{Input: snapshot.InputEvents, Optional: true},
			{Input: snapshot.InputControllers, Optional: true},
			{Input: snapshot.InputControllerLogs, Optional: true},
			{Input: snapshot.InputAdmission, Optional: true},
			{Input: snapshot.InputNamespaces, Optional: true},
		},
	}, preparingNormalDoc), expectations: ExpectationsUnsatisfied().Info()}
}

// DeclareReads declares, from the metadata-only pod list, the pods labelled PreparingNormal that
// an OpenKruise workload controls, plus the pods the expectations verdict needs in full.
func (stuckPreparingNormal) DeclareReads(s *snapshot.Snapshot) snapshot.Reads {
	var out []types.UID
	for _, p := range s.Pods {
		if p.Labels[kruise.LabelLifecycleState] != kruise.StatePreparingNormal {
			continue
		}
		if isOwner(snapshot.ControllerOf(p), kruise.KindCloneSet, kruise.KindStatefulSet) {
			out = append(out, p.UID)
		}
	}
	return snapshot.Reads{Pods: append([]snapshot.PodReads{{UIDs: out}}, expectationReads(s)...)}
}

// Run reports the pods PreparingNormal for longer than the threshold, each with its root cause.
func (c stuckPreparingNormal) Run(s *snapshot.Snapshot, threshold time.Duration) []report.Finding {
	info := c.Info()
	p := newPass(s, threshold, preparingNormalThreshold, c.expectations)
	var out []report.Finding
	pods := append([]*corev1.Pod(nil), s.FullPods...)
	sort.Slice(pods, func(i, j int) bool {
		if pods[i].Namespace != pods[j].Namespace {
			return pods[i].Namespace < pods[j].Namespace
		}
		return pods[i].Name < pods[j].Name
	})
	for _, pod := range pods {
		if pod.Labels[kruise.LabelLifecycleState] != kruise.StatePreparingNormal || pod.DeletionTimestamp != nil {
			continue
		}
		ref := snapshot.ControllerOf(pod)
		if !isOwner(ref, kruise.KindCloneSet, kruise.KindStatefulSet) {
			continue
		}
		since, sinceSource := lifecycleSince(&pod.ObjectMeta)
		if s.Now.Sub(since) < threshold {
			continue
		}
		w, _ := s.Workload(ref.UID)
		if w == nil && s.Scope.LabelSelector != "" {
			// Its workload does not match the selector: a finding would name it (owner, fixes).
			continue
		}
		sp := newStuckPod(p, pod, ref, w, since, sinceSource)
		d, _ := checks.Diagnose(preparingNormalRules(), p, sp)
		out = append(out, checks.NewFinding(info, d))
	}
	return out
}
