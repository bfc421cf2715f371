package cmd

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// TestCaptureLeavesNothingWhenItFails: a capture that ends early (Ctrl-C cancels its context)
// leaves no recorded answers and no directory of its own behind; one whose -o holds a file
// already fails before it records anything. No apiserver is needed: nothing is ever answered.
func TestCaptureLeavesNothingWhenItFails(t *testing.T) {
	dir := t.TempDir()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	// Nothing listens on port 1: a request that got as far as a dial would fail there.
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
users: [{name: u, user: {token: t}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	taken := filepath.Join(dir, "taken.tgz")
	if err := os.WriteFile(taken, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range []struct{ out, says string }{
		{filepath.Join(dir, "b.tgz"), "cannot reach"},
		{filepath.Join(dir, "unpacked") + "/", "cannot reach"},
		{taken, "never overwrites"},
	} {
		streams, _, _, _ := genericiooptions.NewTestIOStreams()
		root := NewRootCommand(streams)
		root.SetArgs([]string{"capture", "-A", "--kubeconfig", kubeconfig, "-o", tc.out})
		root.SilenceErrors, root.SilenceUsage = true, true
		err := root.ExecuteContext(cancelled)
		var exit *ExitError
		if !errors.As(err, &exit) || exit.Code != ExitFailure || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("-o %s: %v, want exit 1 saying %q", tc.out, err, tc.says)
		}
		left, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(left) != 1 || left[0].Name() != "taken.tgz" {
			var names []string
			for _, e := range left {
				names = append(names, e.Name())
			}
			t.Errorf("-o %s: the capture left %v", tc.out, names)
		}
	}
	if b, _ := os.ReadFile(taken); string(b) != "precious" {
		t.Error("the file at -o changed")
	}
}
