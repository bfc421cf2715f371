// Package resizepolicy holds the resize-policy-drift check: containers[].resizePolicy of the pods
// of OpenKruise workloads that update in place, compared with the workload template or the
// SidecarSet, and why a difference stays (an old kruise-manager, an immutable field, apiserver
// defaulting).
package resizepolicy

import (
	"time"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// ID is the check that compares in-place workloads' pods with their templates.
const ID = "resize-policy-drift"

// check is the resize-policy-drift check.
type check struct{}

// New returns the resize-policy-drift check.
func New() checks.Check { return check{} }

// Info describes the check and its root causes.
func (check) Info() checks.Info {
	return checks.Info{
		ID:    ID,
		Title: "resizePolicy drift between pods and their in-place workload",
		Description: "For OpenKruise workloads that update pods in place (CloneSet InPlaceIfPossible/InPlaceOnly, " +
			"Advanced StatefulSet podUpdatePolicy InPlaceIfPossible/InPlaceOnly, Advanced DaemonSet InPlaceIfPossible), " +
			"compares every owned pod's containers[].resizePolicy with the workload template (and, for injected sidecars, " +
			"with the SidecarSet), container by container and resource by resource. An unset entry equals NotRequired, " +
			"the value the kubelet applies and that v1.27-v1.32 apiservers write on pods with InPlacePodVerticalScaling on; " +
			"the order of entries does not matter. Pods one workload created from one revision with the same sidecars are " +
			"alike, so of each such group the oldest pod (and the newest, when they were created more than an hour apart) is " +
			"read in full, and the whole group when it differs in any way; pods updated in place or named by a failed " +
			"in-place update are always read.",
		Threshold:  5 * time.Minute,
		RootCauses: rootCauses(),
		Needs: []checks.Need{
			{Input: snapshot.InputPods, PodAnnotations: []string{kruise.AnnotationInPlaceState, kruise.AnnotationSidecarHash, kruise.AnnotationSidecarInjects}},
			{Input: snapshot.InputKruiseWorkloads},
			{Input: snapshot.InputControllers, Optional: true},
			{Input: snapshot.InputEvents, Optional: true},
			{Input: snapshot.InputSidecarSets, Optional: true},
		},
	}
}

func (check) Run(s *snapshot.Snapshot, threshold time.Duration) []report.Finding {
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
	info := check{}.Info()
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
