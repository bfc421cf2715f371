package terminating

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// oneLine shortens a message for an evidence line.
func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > max {
		return s[:max] + "..."
	}
	return s
}

// warningEvents renders the newest Warning events about an object, at most n.
func (a *pass) warningEvents(kind string, m metav1.Object, n int) []string {
	var lines []string
	evs := a.s.EventsFor(kind, m.GetNamespace(), m.GetName(), m.GetUID())
	for i := len(evs) - 1; i >= 0 && len(lines) < n; i-- {
		e := evs[i]
		if e.Type != corev1.EventTypeWarning {
			continue
		}
		lines = append(lines, fmt.Sprintf("Warning %s from %s (x%d, %s ago): %s", e.Reason, eventReporter(e),
			checks.EventCount(e), checks.Age(a.now, snapshot.EventTime(e)), oneLine(e.Message, 200)))
	}
	return lines
}

// eventReporter names the component that emitted an event.
func eventReporter(e *corev1.Event) string {
	switch {
	case e.ReportingController != "":
		return e.ReportingController
	case e.Source.Component != "":
		return e.Source.Component
	}
	return "an unnamed component"
}
