package e2e

import (
	"strings"
	"testing"
)

// clockAhead: a workstation whose clock runs an hour ahead of the cluster's scans a pod deleted a
// moment ago and held by a finalizer. Its age is measured on the apiserver's clock (the Date of
// its answers), so the pod is not yet stuck at the default --min-age, and nothing proposes a
// write for it; measured on the local clock it would look an hour stuck. The clock is shifted
// with the test-only WORKLOADDOCTOR_TEST_CLOCK_SKEW (see kruise_leader_test.go).
func (e *teEnv) clockAhead(t *testing.T) {
	const ns, finalizer = "st-clock", "example.com/archive"
	e.namespace(t, ns)
	pod := e.kwokPod(t, ns, "fresh-0", 30)
	e.addFinalizer(t, pod, "archiver", finalizer)
	e.deletePod(t, ns, pod.Name)
	e.waitKubeletDone(t, ns, pod.Name)
	defer e.removeFinalizer(t, pod, "archiver", finalizer)

	scan := func(wantExit int, args ...string) (findings int, stderr string) {
		t.Helper()
		args = append([]string{"-n", ns, "--checks", teCheck, "-o", "json"}, args...)
		scanned := pluginOn(e.c.Kubeconfig).withClockSkew("1h").scan(t, args...).wantExit(wantExit)
		return len(scanned.report().Findings), scanned.stderr
	}
	n, stderr := scan(0)
	if n != 0 {
		t.Fatalf("a pod deleted a moment ago is reported stuck when the local clock runs an hour ahead")
	}
	if !strings.Contains(stderr, "ahead of the apiserver's; ages are measured on the apiserver's clock") {
		t.Errorf("stderr does not say the clocks differ:\n%s", stderr)
	}
	// The same pod is a finding once the threshold is lifted: the scan saw it.
	if n, _ := scan(0, "--min-age", "0s"); n != 1 {
		t.Fatalf("with --min-age 0s: %d findings, want the pod's", n)
	}
}
