// Package resizepolicy holds the resize-policy-drift check: containers[].resizePolicy of the pods
// of OpenKruise workloads that update in place, compared with the workload template or the
// SidecarSet, and why a difference stays (an old kruise-manager, an immutable field, apiserver
// defaulting).
package resizepolicy

import (
	_ "embed"
	"time"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// ID is the check that compares in-place workloads' pods with their templates.
const ID = "resize-policy-drift"

//go:embed resizepolicy.md
var documentation string

// check is the resize-policy-drift check.
type check struct{ info checks.Info }

// New returns the resize-policy-drift check.
func New() checks.Check {
	return check{info: checks.MustDocument(checks.Info{
		ID:         ID,
		Threshold:  5 * time.Minute,
		RootCauses: rootCauses(),
		Needs: []checks.Need{
			{Input: snapshot.InputPods, PodAnnotations: []string{kruise.AnnotationInPlaceState, kruise.AnnotationSidecarHash, kruise.AnnotationSidecarInjects}},
			{Input: snapshot.InputKruiseWorkloads},
			{Input: snapshot.InputControllers, Optional: true},
			{Input: snapshot.InputEvents, Optional: true},
			{Input: snapshot.InputSidecarSets, Optional: true},
		},
	}, documentation)}
}

// Info describes the check and its root causes.
func (c check) Info() checks.Info { return c.info }

// Run compares the pods read in full with their templates and reports drift older than the threshold.
func (c check) Run(s *snapshot.Snapshot, threshold time.Duration) []report.Finding {
	var pods []*podDiff
	for _, w := range inPlaceWorkloads(s) {
		for _, meta := range ownedPods(s, w) {
			pod, full := s.FullPod(meta.UID)
			if !full {
				continue
			}
			pods = append(pods, comparePod(s, w, pod))
		}
	}
	env := newCluster(s, pods)
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
