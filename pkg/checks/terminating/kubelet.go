package terminating

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/internal/uniq"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// kubeletTroubleReasons are the kubelet's events about a pod it cannot stop.
var kubeletTroubleReasons = map[string]bool{
	"FailedKillPod": true, "FailedPreStopHook": true, "ExceededGracePeriod": true, "FailedUnMount": true,
}

// kubeletKillFailing reports a pod whose live kubelet has not confirmed its containers stopped.
func (a *pass) kubeletKillFailing(t *target) (checks.Draft, bool) {
	p, full, owners := t.pod, t.full, t.owners
	grace := graceSeconds(p)
	if grace == 0 {
		return checks.Draft{}, false
	}
	if !full && len(p.Finalizers) > 0 {
		return checks.Draft{}, false // without the pod's spec the finalizers are what can be diagnosed
	}
	if full && p.Spec.NodeName == "" {
		return checks.Draft{}, false // an unbound pod is deleted without waiting for a kubelet
	}
	var ev []string
	node := p.Spec.NodeName
	if n, ok := a.s.Node(node); ok {
		ev = append(ev, a.readyLine(n))
		_, hb := a.heartbeat(n)
		ev = append(ev, hb...)
	} else if !full {
		ev = append(ev, "the pod's full object was not read, so its node is unknown")
		node = "its node"
	} else if !a.s.NodeAbsent(node) {
		ev = append(ev, "nodes were not read, so the state of node "+node+" is unknown")
	}
	var reasons []string
	for _, e := range a.s.EventsFor("Pod", p.Namespace, p.Name, p.UID) {
		if kubeletTroubleReasons[e.Reason] {
			reasons = append(reasons, e.Reason)
			ev = append(ev, fmt.Sprintf("%s %s from %s (x%d, %s ago): %s", e.Type, e.Reason, eventReporter(e), checks.EventCount(e),
				checks.Age(a.now, snapshot.EventTime(e)), oneLine(e.Message, 200)))
		}
	}
	var running []string
	for _, st := range append(append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...),
		p.Status.ContainerStatuses...), p.Status.EphemeralContainerStatuses...) {
		if st.State.Running != nil {
			running = append(running, st.Name)
		}
	}
	if len(running) > 0 {
		ev = append(ev, "containers still running: "+strings.Join(running, ", "))
	}
	if len(reasons) == 0 && full {
		ev = append(ev, "no kubelet Warning event about this pod")
	}
	for _, o := range owners.get() {
		ev = append(ev, "after the kubelet: "+o.line())
	}
	what := "has not reported why"
	switch {
	case len(reasons) > 0:
		what = "reports " + strings.Join(uniq.Of(reasons), ", ")
	case len(running) > 0:
		what = "still reports containers running: " + strings.Join(running, ", ")
	}
	return checks.Draft{
		RootCause: RootCauseKubeletKillFailing,
		Summary:   fmt.Sprintf("Terminating for %s: the kubelet on %s has not stopped the pod", checks.Age(a.now, p.DeletionTimestamp.Time), node),
		Message: fmt.Sprintf("The pod's grace period is over, but the kubelet on %s has not confirmed that its containers "+
			"stopped (it deletes the pod with grace period 0 when they have). It %s. checks.Check the kubelet and the container "+
			"runtime on that node; force-deleting would leave the containers running.", node, what),
		Evidence: ev,
	}, true
}
