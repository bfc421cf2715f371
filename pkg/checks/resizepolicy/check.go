package resizepolicy

import (
	"time"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// check is the resize-policy-drift check.
type check struct{ checks.Documented }

// New returns the resize-policy-drift check.
func New() checks.Check {
	return check{checks.Describe(checks.Info{
		ID:         ID,
		Threshold:  5 * time.Minute,
		RootCauses: rootCauses(),
		Needs: []checks.Need{
			{Input: snapshot.InputPods, PodAnnotations: []string{kruise.AnnotationInPlaceState, kruise.AnnotationSidecarHash, kruise.AnnotationSidecarInjects}},
			{Input: snapshot.InputKruiseWorkloads},
			{Input: snapshot.InputControllers, Optional: true},
			{Input: snapshot.InputEvents, Optional: true},
			{Input: snapshot.InputSidecarSets, Optional: true},
			{Input: snapshot.InputControllerRevisions, Optional: true},
		},
	}, documentation)}
}

// Run compares the pods read in full with their templates and reports drift older than the threshold.
func (c check) Run(s *snapshot.Snapshot, threshold time.Duration) []report.Finding {
	hist := newHistory(s)
	var pods []*podDiff
	for _, w := range inPlaceWorkloads(s) {
		owned := ownedPods(s, w)
		r := newRollout(s, w, owned)
		for _, meta := range owned {
			pod, full := s.FullPod(meta.UID)
			if !full {
				continue
			}
			if pl := r.place(meta, hist.templateFor(w)); pl.judged() {
				pods = append(pods, comparePod(s, w, pod, pl))
			}
		}
	}
	env := newPass(s, pods)
	info := c.Info()
	var out []report.Finding
	for _, p := range pods {
		f, ok := env.diagnose(p)
		if !ok || s.Now.Sub(f.Since) < threshold {
			continue
		}
		out = append(out, checks.NewFinding(info, f))
	}
	return out
}
