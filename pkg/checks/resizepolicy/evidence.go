package resizepolicy

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks/internal/kruiseenv"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/knowledge"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

func workloadRef(w *kruise.Workload) *report.ObjectRef {
	ref := kruiseenv.WorkloadRef(w)
	return &ref
}

func kindName(w *kruise.Workload) string { return strings.ToLower(w.Kind) + "/" + w.Name }

func (pa *pass) managerLine() string {
	line := pa.kruiseEnv.ManagerEvidence()
	if pa.mgrOld {
		if b, ok := knowledge.LookupBug(knowledge.BugKruiseDropsResizePolicy); ok {
			line += fmt.Sprintf(": versions %s are built against a Kubernetes API without resizePolicy", b.Affected)
		}
	}
	return line
}

func (pa *pass) serverLine() string {
	if pa.serverErr != nil {
		return fmt.Sprintf("apiserver version %q from /version could not be parsed: %v", pa.s.ServerVersion, pa.serverErr)
	}
	switch {
	case pa.serverDefaults():
		return fmt.Sprintf("apiserver %s (from /version) defaults resizePolicy on pods when %s is on (%s)", pa.s.ServerVersion, gate, pa.defaulting)
	case pa.serverHasField():
		return fmt.Sprintf("apiserver %s (from /version) does not default resizePolicy; a pod update may not change it", pa.s.ServerVersion)
	}
	return fmt.Sprintf("apiserver %s (from /version)", pa.s.ServerVersion)
}

func (pa *pass) common(p *podDiff) []string {
	ev := []string{pa.serverLine()}
	if pa.gateWhy != "" {
		ev = append(ev, pa.gateWhy)
	}
	ev = append(ev, pa.managerLine())
	ev = append(ev, revisionLines(p)...)
	for _, name := range p.missingSidecarSets {
		line := fmt.Sprintf("container %s is an injected sidecar whose SidecarSet is not in the snapshot: not compared", name)
		if err, ok := pa.s.Unread[snapshot.InputSidecarSets]; ok {
			line += fmt.Sprintf(" (%v)", err)
		}
		ev = append(ev, line)
	}
	return ev
}

// revisionLines say where the pod stands in its workload's rollout, so which revision's
// template it is compared with.
func revisionLines(p *podDiff) []string {
	out := []string{p.place.why()}
	if st, ok := inPlaceState(p.pod); ok && st.Revision != "" {
		out = append(out, fmt.Sprintf("annotation %s: last in-place update written for revision %s", kruise.AnnotationInPlaceState, st.Revision))
	}
	return out
}

func containerLine(c *containerDiff) string {
	kind := "container"
	if c.init {
		kind = "init container"
	}
	ref := "not declared"
	if c.hasRef {
		ref = c.ref.String()
	}
	line := fmt.Sprintf("%s %s: pod resizePolicy %s; %s %s", kind, c.name, c.pod, c.refSource, ref)
	if !c.hasRef {
		line = fmt.Sprintf("%s %s: pod resizePolicy %s", kind, c.name, c.pod)
	}
	if len(c.differs) > 0 {
		line += " (differs for " + joinResources(c.differs) + ")"
	}
	if c.injected {
		if len(c.sidecarSets) > 0 {
			line += "; injected by SidecarSet " + strings.Join(c.sidecarSets, ",")
		} else {
			line += fmt.Sprintf("; injected (env %s), its SidecarSet is not in the snapshot", kruise.EnvSidecarInjected)
		}
	}
	return line
}

func joinResources(rs []corev1.ResourceName) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = string(r)
	}
	return strings.Join(parts, ",")
}

func inPlaceCondition(pod *corev1.Pod) (string, time.Time) {
	for _, c := range pod.Status.Conditions {
		if string(c.Type) == kruise.ConditionInPlaceReady && c.Status == corev1.ConditionFalse {
			line := fmt.Sprintf("pod condition %s=False", kruise.ConditionInPlaceReady)
			if c.Reason != "" {
				line += " (reason " + c.Reason + ")"
			}
			if !c.LastTransitionTime.IsZero() {
				line += " since " + c.LastTransitionTime.UTC().Format(time.RFC3339)
			}
			if c.Reason == reasonStartInPlace {
				line += ": an in-place update started and never completed"
			}
			return line, c.LastTransitionTime.Time
		}
	}
	return "", time.Time{}
}

func evictFix(p *podDiff, note string) report.Fix {
	desc := fmt.Sprintf("Evict pod %s/%s through the Eviction API (PodDisruptionBudgets respected); %s %s recreates it from revision %s",
		p.pod.Namespace, p.pod.Name, p.w.Kind, p.w.Name, p.place.revision)
	if note != "" {
		desc += "; " + note
	}
	return report.Fix{Action: checks.ActionEvictPod, Description: desc, Risk: report.RiskMedium, Params: map[string]string{}}
}
