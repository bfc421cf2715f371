package rollout

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// Names OpenKruise and the kubelet write on pods that the check reads.
const (
	// annotationRuntimeMeta is written by kruise-daemon with the containers' hashes
	// (apis/apps/pub/inplace_update.go RuntimeContainerMetaKey, kruise v1.9.0).
	annotationRuntimeMeta     = "apps.kruise.io/runtime-containers-meta"
	conditionResizePending    = "PodResizePending"
	conditionResizeInProgress = "PodResizeInProgress"
	kruiseDaemon              = "kruise-daemon"
)

// inPlaceState is the part of apps.kruise.io/inplace-update-state the check reads
// (InPlaceUpdateState, apis/apps/pub/inplace_update.go).
type inPlaceState struct {
	Revision              string `json:"revision"`
	UpdateEnvFromMetadata bool   `json:"updateEnvFromMetadata"`
	UpdateResources       bool   `json:"updateResources"`
	LastContainerStatuses map[string]struct {
		ImageID string `json:"imageID"`
	} `json:"lastContainerStatuses"`
}

// verdict is why one pod of a new revision does not count as updated and ready.
type verdict struct {
	cause string
	// line is the evidence about this pod; block names another check's stuck pod.
	line  string
	block *report.BlockRef
}

// judgePod says why the pod holds its workload's rollout, or nil when it does not: Ready, and
// no lifecycle state or in-place update left to finish. The order follows the controllers: a
// pod another check owns (Terminating, PreparingNormal) is pointed at; a PreparingUpdate pod
// waits on its hook before anything else (cloneset_update.go updatePod, kruise v1.9.0); then
// the kubelet's side in the order a pod meets it (scheduling, image, in-place completion,
// start, readiness).
func judgePod(ps *pass, hook *kruise.LifecycleHook, p *corev1.Pod) *verdict {
	name := "pod " + p.Name
	state := p.Labels[kruise.LabelLifecycleState]
	_, specified := p.Labels[kruise.LabelSpecifiedDelete]
	switch {
	case state == kruise.StatePreparingDelete || specified:
		// On its way out by the user's or the scale-in's choice, held by a preDelete hook by design.
		return nil
	case p.DeletionTimestamp != nil:
		return &verdict{cause: RootCauseBlockedByStuckPod, block: podBlock(p),
			line: checks.Evidencef("%s is Terminating (deleted %s ago); stuck-terminating judges it", name, checks.Age(ps.Snapshot.Now, p.DeletionTimestamp.Time))}
	case state == kruise.StatePreparingUpdate:
		if held := hooked(hook, p); len(held) > 0 {
			return &verdict{cause: RootCauseInPlaceHookPending,
				line: checks.Evidencef("%s is PreparingUpdate since %s ago, held by the inPlaceUpdate hook's %s", name, stateAge(ps.Snapshot.Now, p), strings.Join(held, ", "))}
		}
	}
	v := kubeletVerdict(ps, p)
	if state == kruise.StatePreparingNormal {
		// stuck-preparing-normal owns the pod; the rollout still names what the kubelet or the
		// scheduler reports, but a pod merely not Ready (KruisePodReady follows the lifecycle
		// state) is that check's story alone.
		if v == nil || v.cause == RootCausePodsNotReady {
			v = &verdict{cause: RootCauseBlockedByStuckPod,
				line: checks.Evidencef("%s is PreparingNormal since %s ago; stuck-preparing-normal judges it", name, stateAge(ps.Snapshot.Now, p))}
		}
		v.block = podBlock(p)
	}
	return v
}

// kubeletVerdict judges what the scheduler and kubelet report about the pod.
func kubeletVerdict(ps *pass, p *corev1.Pod) *verdict {
	name := "pod " + p.Name
	if c := condition(p, corev1.PodScheduled); c != nil && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
		return &verdict{cause: RootCausePodsUnschedulable,
			line: checks.Evidencef("%s is Pending: PodScheduled=False reason Unschedulable for %s: %s", name, checks.Age(ps.Snapshot.Now, c.LastTransitionTime.Time), checks.Truncate(c.Message, 300))}
	}
	state, inPlace := readInPlaceState(p)
	for _, cs := range p.Status.ContainerStatuses {
		if wt := cs.State.Waiting; wt != nil && slices.Contains([]string{"ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull"}, wt.Reason) {
			what := ""
			if inPlace {
				what = " (in-place update)"
			}
			return &verdict{cause: RootCauseImagePullFailing,
				line: checks.Evidencef("%s container %s%s waits with %s for image %s: %s", name, cs.Name, what, wt.Reason, specImage(p, cs.Name), checks.Truncate(wt.Message, 200))}
		}
	}
	// A resize-only update leaves InPlaceUpdateReady True (defaultCheckPodNeedsBeUnready,
	// inplace_update_defaults.go, kruise v1.9.0): the lifecycle state Updating, which kruise keeps
	// until the update completed (refreshPodState, cloneset_update.go), says it has not.
	if inPlace && (!conditionTrue(p, kruise.ConditionInPlaceReady) || p.Labels[kruise.LabelLifecycleState] == kruise.StateUpdating) {
		return inPlaceVerdict(ps, p, state)
	}
	for _, cs := range p.Status.ContainerStatuses {
		if wt := cs.State.Waiting; wt != nil && wt.Reason == "CrashLoopBackOff" {
			last := ""
			if t := cs.LastTerminationState.Terminated; t != nil {
				last = fmt.Sprintf("; last exit code %d reason %s", t.ExitCode, t.Reason)
			}
			return &verdict{cause: RootCauseCrashLooping,
				line: checks.Evidencef("%s container %s is in CrashLoopBackOff after %d restarts%s", name, cs.Name, cs.RestartCount, last)}
		}
	}
	if conditionTrue(p, corev1.PodReady) {
		return nil
	}
	var why []string
	for _, g := range p.Spec.ReadinessGates {
		if !conditionTrue(p, g.ConditionType) {
			why = append(why, fmt.Sprintf("readiness gate %s not True", g.ConditionType))
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		if !cs.Ready {
			why = append(why, fmt.Sprintf("container %s not ready", cs.Name))
		}
	}
	if len(why) == 0 {
		why = append(why, "Ready condition not True")
	}
	return &verdict{cause: RootCausePodsNotReady, line: checks.Evidencef("%s is not Ready (phase %s): %s", name, p.Status.Phase, strings.Join(why, "; "))}
}

// inPlaceVerdict says why an in-place update has not completed (Refresh and
// defaultCheckContainersInPlaceUpdateCompleted, pkg/util/inplaceupdate, kruise v1.9.0): a resize
// the kubelet does not apply, env from metadata that waits on kruise-daemon's
// runtime-containers-meta, or containers still on the old image.
func inPlaceVerdict(ps *pass, p *corev1.Pod, state inPlaceState) *verdict {
	name := "pod " + p.Name
	since := "since " + stateAge(ps.Snapshot.Now, p) + " ago"
	if c := condition(p, conditionResizePending); c != nil && c.Status == corev1.ConditionTrue {
		return &verdict{cause: RootCauseInPlaceResizePending,
			line: checks.Evidencef("%s in-place update %s waits on a resize: PodResizePending reason %s: %s", name, since, c.Reason, checks.Truncate(c.Message, 200))}
	}
	if state.UpdateEnvFromMetadata && p.Annotations[annotationRuntimeMeta] == "" {
		return &verdict{cause: RootCauseInPlaceDaemonMissing,
			line: checks.Evidencef("%s in-place update %s changes env from metadata and waits for kruise-daemon on node %s, but the pod has no %s annotation; %s",
				name, since, p.Spec.NodeName, annotationRuntimeMeta, ps.daemon.line(p.Spec.NodeName))}
	}
	var old []string
	for _, cs := range p.Status.ContainerStatuses {
		if last, ok := state.LastContainerStatuses[cs.Name]; ok && last.ImageID == cs.ImageID && specImage(p, cs.Name) != cs.Image {
			old = append(old, fmt.Sprintf("%s runs %s, spec asks %s", cs.Name, cs.Image, specImage(p, cs.Name)))
		}
	}
	what := "InPlaceUpdateReady is not True"
	if c := condition(p, kruise.ConditionInPlaceReady); c != nil {
		what = fmt.Sprintf("InPlaceUpdateReady=%s reason %s", c.Status, c.Reason)
	}
	if s := p.Labels[kruise.LabelLifecycleState]; s != "" {
		what += "; lifecycle state " + s
	}
	if len(old) > 0 {
		what += "; containers still on the old image: " + strings.Join(old, "; ")
	}
	if state.UpdateResources {
		what += "; container resources not yet reported in status"
		if c := condition(p, conditionResizeInProgress); c != nil && c.Status == corev1.ConditionTrue {
			what += fmt.Sprintf(" (PodResizeInProgress reason %s: %s)", c.Reason, checks.Truncate(c.Message, 200))
		}
	}
	return &verdict{cause: RootCauseInPlaceUpdateIncomplete,
		line: checks.Evidencef("%s in-place update to revision %s not completed %s: %s", name, state.Revision, since, what)}
}

func readInPlaceState(p *corev1.Pod) (inPlaceState, bool) {
	raw, ok := p.Annotations[kruise.AnnotationInPlaceState]
	if !ok {
		return inPlaceState{}, false
	}
	var st inPlaceState
	_ = json.Unmarshal([]byte(raw), &st) // a state that does not decode still marks an in-place update
	return st, true
}

// hooked lists what of the hook is still on the pod: the controller leaves PreparingUpdate
// only when none is (kruise.PodHooked).
func hooked(h *kruise.LifecycleHook, p *corev1.Pod) []string {
	held := kruise.HookHeld(h, p)
	var out []string
	for _, f := range held.Finalizers {
		out = append(out, "finalizer "+f)
	}
	for _, k := range held.Labels {
		out = append(out, fmt.Sprintf("label %s=%s", k, h.LabelsHandler[k]))
	}
	return out
}

func condition(p *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

func conditionTrue(p *corev1.Pod, t corev1.PodConditionType) bool {
	c := condition(p, t)
	return c != nil && c.Status == corev1.ConditionTrue
}

func specImage(p *corev1.Pod, container string) string {
	for _, c := range p.Spec.Containers {
		if c.Name == container {
			return c.Image
		}
	}
	return ""
}

// stateAge is how long the pod has been in its lifecycle state (kruise.StateSince).
func stateAge(now time.Time, p *corev1.Pod) string {
	t, _ := kruise.StateSince(p)
	return checks.Age(now, t)
}

func podBlock(p *corev1.Pod) *report.BlockRef {
	return &report.BlockRef{APIVersion: "v1", Kind: "Pod", Namespace: p.Namespace, Name: p.Name}
}
