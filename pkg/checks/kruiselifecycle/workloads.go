package kruiselifecycle

import (
	"fmt"
	"time"

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
