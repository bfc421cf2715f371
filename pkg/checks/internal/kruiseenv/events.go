package kruiseenv

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// ReasonFailedCreate is the reason of the Warning event the kruise-manager records on a workload
// for each pod create the apiserver refuses (createPods, pkg/controller/cloneset/sync/cloneset_scale.go,
// kruise v1.9.0).
const ReasonFailedCreate = "FailedCreate"

// FailedCreates returns the workload's Warning FailedCreate events, newest last.
func FailedCreates(s *snapshot.Snapshot, w *kruise.Workload) []*corev1.Event {
	return FailedCreatesOf(s, w.Kind, &w.ObjectMeta)
}

// FailedCreatesOf are the Warning FailedCreate events on any object that creates pods (a core
// workload, a ReplicaSet).
func FailedCreatesOf(s *snapshot.Snapshot, kind string, m *metav1.ObjectMeta) []*corev1.Event {
	var out []*corev1.Event
	for _, e := range s.EventsFor(kind, m.Namespace, m.Name, m.UID) {
		if e.Type == corev1.EventTypeWarning && e.Reason == ReasonFailedCreate {
			out = append(out, e)
		}
	}
	return out
}

// EventLine renders an event for evidence: reason, type, count, age and message (cut short).
func EventLine(now time.Time, e *corev1.Event) string {
	src := e.Source.Component
	if src == "" {
		src = e.ReportingController
	}
	return checks.Evidencef("event %s %s from %s (x%d, last %s ago): %s", e.Type, e.Reason, src, checks.EventCount(e),
		checks.Age(now, snapshot.EventTime(e)), EventMessage(e.Message))
}

// EventMessage cuts kruise's FailedCreate dumps ("failed to create pod: <err>, pod: {...}"):
// the pod JSON can hold environment values, which evidence never prints.
func EventMessage(msg string) string {
	for _, cut := range []string{", pod: {", ", pvc: {"} {
		if i := strings.Index(msg, cut); i >= 0 {
			msg = msg[:i]
		}
	}
	return checks.Truncate(msg, 300)
}
