// Package e2e runs the plugin and kubectl against real control planes started by internal/testcluster.
// The binaries come from `make tools` (bin/tools) and `make build` (bin/kubectl-workloaddoctor).
package e2e

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/testcluster"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// commandTimeout bounds one plugin or kubectl invocation.
const commandTimeout = 2 * time.Minute

// repoRoot returns the plugin repository's root directory.
func repoRoot(t testing.TB) string {
	t.Helper()
	root, err := testcluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// pluginBinary returns bin/kubectl-workloaddoctor, failing with a hint when it was not built.
func pluginBinary(t testing.TB) string {
	t.Helper()
	path := filepath.Join(repoRoot(t), "bin", "kubectl-workloaddoctor")
	if fi, err := os.Stat(path); err != nil || fi.IsDir() {
		t.Fatalf("plugin binary %s is missing: run `make build` in the repo root first", path)
	}
	return path
}

// commandEnv is the environment for plugin and kubectl runs: the given kubeconfig, the repo's
// bin and bin/tools first on PATH (kubectl finds the plugin there), a private HOME so no
// ~/.kube cache or config leaks in, and no color codes in the output.
func commandEnv(t testing.TB, kubeconfig string) []string {
	t.Helper()
	path, err := testcluster.CommandPATH()
	if err != nil {
		t.Fatal(err)
	}
	env := []string{"KUBECONFIG=" + kubeconfig, "PATH=" + path, "HOME=" + t.TempDir(), "NO_COLOR=1"}
	for _, kv := range os.Environ() {
		switch strings.SplitN(kv, "=", 2)[0] {
		case "KUBECONFIG", "PATH", "HOME", "NO_COLOR":
		default:
			env = append(env, kv)
		}
	}
	return env
}

// run executes bin with args and returns its output and exit code; failing to start or a timeout
// fails the test, a non-zero exit does not.
func run(t testing.TB, kubeconfig, bin string, args ...string) (stdout, stderr string, exitCode int) {
	t.Helper()
	return runEnv(t, kubeconfig, nil, bin, args...)
}

// runEnv is run with extra environment variables (KEY=value), for the test-only settings a
// parallel test cannot set with t.Setenv.
func runEnv(t testing.TB, kubeconfig string, extraEnv []string, bin string, args ...string) (stdout, stderr string, exitCode int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), commandTimeout)
	defer cancel()
	var out, errOut bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(commandEnv(t, kubeconfig), extraEnv...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exitErr *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("%s %s: %v\nstdout:\n%s\nstderr:\n%s", filepath.Base(bin), strings.Join(args, " "), ctx.Err(), &out, &errOut)
	case errors.As(err, &exitErr):
		exitCode = exitErr.ExitCode()
	case err != nil:
		t.Fatalf("run %s: %v", bin, err)
	}
	return out.String(), errOut.String(), exitCode
}

// runPlugin runs bin/kubectl-workloaddoctor directly with KUBECONFIG set to kubeconfig.
func runPlugin(t testing.TB, kubeconfig string, args ...string) (stdout, stderr string, exitCode int) {
	t.Helper()
	return run(t, kubeconfig, pluginBinary(t), args...)
}

// runKubectl runs the real kubectl from bin/tools, which finds the plugin on PATH as
// `kubectl workloaddoctor`.
func runKubectl(t testing.TB, kubeconfig string, args ...string) (stdout, stderr string, exitCode int) {
	t.Helper()
	return run(t, kubeconfig, testcluster.Binary(t, "kubectl"), args...)
}

// eventually polls cond every 250ms until it returns true, failing the test with what after timeout.
// cond's error aborts the wait; return false, nil to keep waiting.
func eventually(t testing.TB, timeout time.Duration, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	if err := wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// assertFinding checks a finding's root cause, severity, evidence fragments (in the evidence or
// the message) and fixes, each written "action", or "action:finalizer" for finalizer removals.
func assertFinding(t *testing.T, f report.Finding, rootCause string, sev report.Severity, evidence, fixes []string) {
	t.Helper()
	all := strings.Join(f.RootCause.Evidence, "\n") + "\n" + f.RootCause.Message
	if f.RootCause.ID != rootCause || f.Severity != sev {
		t.Fatalf("%s: root cause %s (%s), want %s (%s)\n%s", f.Object, f.RootCause.ID, f.Severity, rootCause, sev, all)
	}
	for _, s := range evidence {
		if !strings.Contains(all, s) {
			t.Errorf("%s: evidence lacks %q:\n%s", f.Object, s, all)
		}
	}
	var got []string
	for _, fx := range f.Fixes {
		s := fx.Action
		if fin := fx.Params["finalizer"]; fin != "" {
			s += ":" + fin
		}
		got = append(got, s)
	}
	if strings.Join(got, ",") != strings.Join(fixes, ",") {
		t.Errorf("%s: fixes %v, want %v", f.Object, got, fixes)
	}
}
