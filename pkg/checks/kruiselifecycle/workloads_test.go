package kruiselifecycle

import (
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

func TestKruiseThreshold(t *testing.T) {
	if got := effectiveThreshold(&snapshot.Snapshot{Scope: snapshot.Scope{MinAgeSet: true}}, 10*time.Minute, 10*time.Minute, 30*time.Second); got != 10*time.Minute {
		t.Errorf("an explicit --min-age equal to the default must be used as given, got %v", got)
	}
	if got := effectiveThreshold(&snapshot.Snapshot{}, 10*time.Minute, 10*time.Minute, 30*time.Second); got != 30*time.Second {
		t.Errorf("default threshold = %v, want the manager's expectation timeout", got)
	}
	if got := effectiveThreshold(&snapshot.Snapshot{}, 0, 10*time.Minute, 30*time.Second); got != 0 {
		t.Errorf("--min-age 0s = %v, want 0", got)
	}
}

// An unreadable manager leaves the findings in place, with what is known, and the coverage degraded.
func TestKruiseChecksDegradeWithoutTheManager(t *testing.T) {
	w := leakedCloneSet().cloneSet(t)
	p := cloneSetPod(w, "demo-akx2p", kruise.StatePreparingNormal, 30*time.Minute, "5d4f8b7c9")
	s := snapshotOf(controlPlane{}, []*kruise.Workload{w}, []*corev1.Pod{p}, nil)
	s.Unread[snapshot.InputControllers] = errors.New("forbidden: list apps/deployments in all namespaces")
	findings, cov := checks.Run(s, []checks.Check{StuckPreparingNormal(), ExpectationsUnsatisfied()}, -1)
	if len(findings) != 2 {
		t.Fatalf("want a finding from each check, got %+v", findings)
	}
	for _, f := range findings {
		if !strings.Contains(strings.Join(f.RootCause.Evidence, "\n"), "kruise-manager could not be read (forbidden: list apps/deployments") {
			t.Errorf("%s evidence does not say the manager could not be read:\n%s", f.Check, strings.Join(f.RootCause.Evidence, "\n"))
		}
	}
	if len(cov.Degraded) != 2 || len(cov.Skipped) != 0 {
		t.Errorf("coverage = %+v, want both checks degraded", cov)
	}
}
