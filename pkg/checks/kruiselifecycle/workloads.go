package kruiselifecycle

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// requeueFix is the requeue-workload fix for the named workload.
func requeueFix(kind, namespace, name string) report.Fix {
	return report.Fix{
		Action:      checks.ActionRequeueWorkload,
		Description: fmt.Sprintf("annotate %s %s/%s with workloaddoctor.io/requeued-at so the kruise-manager reconciles it again", kind, namespace, name),
		Risk:        report.RiskLow,
	}
}

// effectiveThreshold is the age a condition must reach. Without --min-age the check's own default
// stands for "as long as the manager's --expectation-timeout" (its wait before giving up on an
// expectation); a value from --min-age, even one equal to the default, is used as given.
func effectiveThreshold(s *snapshot.Snapshot, threshold, ownDefault, expectationTimeout time.Duration) time.Duration {
	if s.Scope.MinAgeSet || threshold != ownDefault {
		return threshold
	}
	return expectationTimeout
}

// eventLine renders an event for evidence: reason, type, count, age and message (cut short).
func eventLine(now time.Time, e *corev1.Event) string {
	src := e.Source.Component
	if src == "" {
		src = e.ReportingController
	}
	return checks.Evidencef("event %s %s from %s (x%d, last %s ago): %s", e.Type, e.Reason, src, checks.EventCount(e),
		checks.Age(now, snapshot.EventTime(e)), eventMessage(e.Message))
}

// eventMessage cuts kruise's FailedCreate dumps ("failed to create pod: <err>, pod: {...}"):
// the pod JSON can hold environment values, which evidence never prints.
func eventMessage(msg string) string {
	for _, cut := range []string{", pod: {", ", pvc: {"} {
		if i := strings.Index(msg, cut); i >= 0 {
			msg = msg[:i]
		}
	}
	return checks.Truncate(msg, 300)
}
