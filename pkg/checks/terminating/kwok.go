package terminating

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/knowledge"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// KWOK names (docs/domain.md, "KWOK").
const (
	kwokFinalizer      = "kwok.x-k8s.io/fake"
	kwokNodeAnnotation = "kwok.x-k8s.io/node"
	kwokNodeFake       = "fake"
)

// kwokController is the kwok controller the cluster runs as a Deployment, if any.
type kwokController struct {
	Deployment *appsv1.Deployment
	Container  corev1.Container
}

// args returns the container's command line, where kwok's flags may be.
func (k *kwokController) args() []string {
	return append(append([]string{}, k.Container.Command...), k.Container.Args...)
}

// findKwokController finds kwok's Deployment the way the known-finalizer table locates kwok:
// its default place, else any Deployment running the kwok image.
func (a *pass) findKwokController() *kwokController {
	if !a.kwokLooked {
		a.kwokLooked = true
		a.kwok = a.lookupKwokController()
	}
	return a.kwok
}

func (a *pass) lookupKwokController() *kwokController {
	row, ok := knowledge.LookupFinalizer(kwokFinalizer)
	if !ok {
		return nil
	}
	for _, d := range a.tableDeployments(row) {
		for _, c := range d.Spec.Template.Spec.Containers {
			if knowledge.ImageRepository(c.Image) == row.ImageRepository {
				return &kwokController{Deployment: d, Container: c}
			}
		}
		if len(d.Spec.Template.Spec.Containers) > 0 {
			return &kwokController{Deployment: d, Container: d.Spec.Template.Spec.Containers[0]}
		}
	}
	return nil
}

// boolFlag reads a boolean flag: "--name" and "--name=true" are true.
func boolFlag(args []string, name string) (value, set bool) {
	for _, a := range args {
		switch {
		case a == "--"+name:
			value, set = true, true
		case strings.HasPrefix(a, "--"+name+"="):
			if b, err := strconv.ParseBool(strings.TrimPrefix(a, "--"+name+"=")); err == nil {
				value, set = b, true
			}
		}
	}
	return value, set
}

// kwokManages says whether kwok manages the node and how that is known: the controller's node
// selection flags, or the annotation kwok's shipped manifests select nodes by.
func kwokManages(n *corev1.Node, ctrl *kwokController) (bool, string) {
	if n == nil {
		return false, ""
	}
	if ctrl != nil {
		args := ctrl.args()
		dep := ctrl.Deployment.Namespace + "/" + ctrl.Deployment.Name
		if single := knowledge.FlagValue(args, "manage-single-node", ""); single != "" {
			if single == n.Name {
				return true, fmt.Sprintf("kwok Deployment %s runs with --manage-single-node=%s", dep, single)
			}
		} else if all, _ := boolFlag(args, "manage-all-nodes"); all {
			return true, fmt.Sprintf("kwok Deployment %s runs with --manage-all-nodes=true", dep)
		}
		if sel := knowledge.FlagValue(args, "manage-nodes-with-annotation-selector", ""); sel != "" {
			if s, err := labels.Parse(sel); err == nil && s.Matches(labels.Set(n.Annotations)) {
				return true, fmt.Sprintf("node annotations match kwok Deployment %s --manage-nodes-with-annotation-selector=%s", dep, sel)
			}
		}
		if sel := knowledge.FlagValue(args, "manage-nodes-with-label-selector", ""); sel != "" {
			if s, err := labels.Parse(sel); err == nil && s.Matches(labels.Set(n.Labels)) {
				return true, fmt.Sprintf("node labels match kwok Deployment %s --manage-nodes-with-label-selector=%s", dep, sel)
			}
		}
	}
	if n.Annotations[kwokNodeAnnotation] == kwokNodeFake {
		return true, fmt.Sprintf("node %s has annotation %s=%s, the selector of kwok's shipped manifests", n.Name, kwokNodeAnnotation, kwokNodeFake)
	}
	return false, ""
}

// kwokStageNotRun reports a pod on a kwok node that kwok has not finished deleting.
func (a *pass) kwokStageNotRun(t *target) (checks.Draft, bool) {
	p, full := t.pod, t.full
	hasFin := slices.Contains(p.Finalizers, kwokFinalizer)
	grace := graceSeconds(p)
	if !hasFin && grace == 0 {
		return checks.Draft{}, false // below: neither the finalizer nor a grace period kwok never ended
	}
	var node *corev1.Node
	if full && p.Spec.NodeName != "" {
		node, _ = a.s.Node(p.Spec.NodeName)
	}
	ctrl := a.findKwokController()
	managed, how := kwokManages(node, ctrl)
	// kwok's finalizer marks a kwok pod by itself; without it, a kwok node and a grace period
	// kwok never ended do.
	if !hasFin && !(managed && grace > 0) {
		return checks.Draft{}, false
	}
	var ev []string
	if hasFin {
		line := "finalizer " + kwokFinalizer + " is still on the pod"
		if mgrs := finalizerManagers(p, kwokFinalizer); len(mgrs) > 0 {
			line += " (added by field manager " + strings.Join(managerNames(mgrs), ", ") + ")"
		}
		ev = append(ev, line)
	}
	if grace > 0 {
		ev = append(ev, fmt.Sprintf("deletionGracePeriodSeconds %d: kwok has not deleted the pod with grace period 0, as its pod-delete stage does", grace))
	}
	if managed {
		ev = append(ev, how)
	}
	alive := false
	if node != nil {
		ev = append(ev, a.readyLine(node))
		stale, hb := a.heartbeat(node)
		ev = append(ev, hb...)
		alive = !stale
	}
	msg := fmt.Sprintf("kwok simulates this pod's node and plays its kubelet: its pod stages remove %s and delete the pod. That stage has not run.", kwokFinalizer)
	more, refs, msg := a.kwokControllerEvidence(ctrl, msg)
	ev = append(ev, more...)
	if node != nil && !alive {
		msg += " Node " + node.Name + " is not heartbeating either: kwok itself may not be running."
	} else if node != nil && len(refs) == 0 {
		msg += " kwok is alive (the node heartbeats), so check that its pod stages match this pod (--config, Stage objects) and its log."
	}
	var fixes []report.Fix
	if hasFin {
		fixes = append(fixes, report.Fix{Action: checks.ActionRemoveFinalizer, Risk: report.RiskLow,
			Description: fmt.Sprintf("Remove finalizer %s. Nothing is skipped: the pod is simulated. kwok (or the apiserver, once the grace period is 0) then completes the deletion.", kwokFinalizer),
			Params:      map[string]string{"finalizer": kwokFinalizer}})
	} else {
		msg += " Restarting kwok re-plays its stages."
	}
	nodeName := p.Spec.NodeName
	if nodeName == "" {
		nodeName = "unknown"
	}
	return checks.Draft{
		RootCause:  RootCauseKwokStageNotRun,
		Summary:    fmt.Sprintf("Terminating for %s on kwok node %s: kwok has not finished the deletion", checks.Age(a.now, p.DeletionTimestamp.Time), nodeName),
		Message:    msg,
		Evidence:   ev,
		References: refs,
		Fixes:      fixes,
	}, true
}

// kwokControllerEvidence says what is known of the kwok controller and its version and, when that
// version has the known bug of a stage that never runs, its references and a message saying so in
// place of msg.
func (a *pass) kwokControllerEvidence(ctrl *kwokController, msg string) (ev, refs []string, _ string) {
	if ctrl == nil {
		if a.read(snapshot.InputControllers) {
			ev = append(ev, "no kwok controller Deployment found (kwok may run outside the cluster), so its version is unknown")
		} else {
			ev = append(ev, "Deployments were not read, so kwok's version is unknown")
		}
	} else {
		dep := ctrl.Deployment.Namespace + "/" + ctrl.Deployment.Name
		ev = append(ev, fmt.Sprintf("kwok controller: %s, image %s", deploymentStatus(ctrl.Deployment), ctrl.Container.Image))
		v, err := knowledge.ImageVersion(ctrl.Container.Image)
		switch {
		case err != nil:
			ev = append(ev, "kwok version unknown: "+err.Error())
		default:
			if bug, affected := knowledge.Affected(knowledge.BugKwokStageNotRun, v, nil); affected {
				ev = append(ev, fmt.Sprintf("kwok %s is in the range of %s (%s): %s", v, strings.Join(bug.Reference, ", "), bug.Affected, bug.Summary))
				refs = append(refs, bug.Reference...)
				msg = fmt.Sprintf("kwok %s (Deployment %s) has a known bug, %s: a stale re-listed copy of the pod cancels the "+
					"delayed stage that removes %s, so the pod stays Terminating. Fixed in %s; a restarted kwok also re-plays "+
					"the stages, since the jobs live in its memory.", v, dep, bug.Reference[0], kwokFinalizer, bug.Affected.Fixed)
			} else if bug.ID != "" {
				ev = append(ev, fmt.Sprintf("kwok %s is outside the range of %s (%s)", v, bug.Reference[0], bug.Affected))
			}
		}
	}
	return ev, refs, msg
}
