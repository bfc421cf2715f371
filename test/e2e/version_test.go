package e2e

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/testcluster"
)

// TestPluginVersionThroughKubectl runs the plugin the way users do, as `kubectl workloaddoctor`
// found on PATH, and checks it reaches the cluster the kubeconfig names.
func TestPluginVersionThroughKubectl(t *testing.T) {
	t.Parallel()
	pluginBinary(t) // fail early with the `make build` hint
	c := testcluster.Start(t, testcluster.Options{})

	stdout, stderr, code := runKubectl(t, c.Kubeconfig, "workloaddoctor", "version")
	if code != 0 {
		t.Fatalf("kubectl workloaddoctor version: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	for i := range lines {
		lines[i] = strings.TrimSpace(lines[i])
	}
	if !slices.Contains(lines, "Server Version: v1.37.1") {
		t.Errorf("output has no line %q:\n%s", "Server Version: v1.37.1", stdout)
	}
	if !slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, "Plugin Version: ") }) {
		t.Errorf("output has no line starting with %q:\n%s", "Plugin Version: ", stdout)
	}

	stdout, stderr, code = runKubectl(t, c.Kubeconfig, "workloaddoctor", "version", "-o", "json")
	if code != 0 {
		t.Fatalf("kubectl workloaddoctor version -o json: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	var got struct {
		ServerVersion struct {
			GitVersion string `json:"gitVersion"`
		} `json:"serverVersion"`
		PluginVersion struct {
			Version string `json:"version"`
		} `json:"pluginVersion"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("version -o json is not JSON: %v\n%s", err, stdout)
	}
	if got.ServerVersion.GitVersion != "v1.37.1" {
		t.Errorf("serverVersion.gitVersion = %q, want v1.37.1", got.ServerVersion.GitVersion)
	}
	if got.PluginVersion.Version == "" {
		t.Errorf("pluginVersion.version is empty:\n%s", stdout)
	}
}
