package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/testcluster"
)

// TestPluginThroughKubectl checks what a user of the installed plugin sees through the real
// kubectl, without a cluster: kubectl finds the plugin on PATH, help and errors name it
// `kubectl workloaddoctor`, and kubectl's plugin completion reaches the plugin's own completion
// through hack/completion/kubectl_complete-workloaddoctor.
func TestPluginThroughKubectl(t *testing.T) {
	t.Parallel()
	plugin := pluginBinary(t)
	root := repoRoot(t)
	binDir := filepath.Dir(plugin)
	completionDir := filepath.Join(root, "hack", "completion")
	kubectl := testcluster.Binary(t, "kubectl")
	// No cluster is involved; a kubeconfig that does not exist keeps the user's out.
	kubeconfig := filepath.Join(t.TempDir(), "absent.kubeconfig")

	// withPath runs kubectl with PATH set to exactly dirs, so no plugin or completion script the
	// machine has installed elsewhere can answer in the plugin's place.
	withPath := func(dirs ...string) func(args ...string) (string, string, int) {
		return func(args ...string) (string, string, int) {
			t.Helper()
			ctx, cancel := context.WithTimeout(t.Context(), commandTimeout)
			defer cancel()
			cmd := exec.CommandContext(ctx, kubectl, args...)
			for _, kv := range commandEnv(t, kubeconfig) {
				if !strings.HasPrefix(kv, "PATH=") {
					cmd.Env = append(cmd.Env, kv)
				}
			}
			cmd.Env = append(cmd.Env, "PATH="+strings.Join(dirs, string(filepath.ListSeparator)))
			var out, errOut bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errOut
			err := cmd.Run()
			code := 0
			var exitErr *exec.ExitError
			switch {
			case ctx.Err() != nil:
				t.Fatalf("kubectl %s: %v\nstderr:\n%s", strings.Join(args, " "), ctx.Err(), &errOut)
			case errors.As(err, &exitErr):
				code = exitErr.ExitCode()
			case err != nil:
				t.Fatalf("run kubectl: %v", err)
			}
			return out.String(), errOut.String(), code
		}
	}
	kubectlRun := withPath(completionDir, binDir)
	kubectlNoCompletion := withPath(binDir)

	t.Run("kubectl plugin list finds it", func(t *testing.T) {
		stdout, stderr, code := kubectlRun("plugin", "list")
		if code != 0 {
			t.Fatalf("kubectl plugin list: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		if !slices.Contains(trimmedLines(stdout), plugin) {
			t.Errorf("kubectl plugin list does not list %s:\n%s", plugin, stdout)
		}
		for _, l := range trimmedLines(stderr) {
			if strings.Contains(l, "warning") {
				t.Errorf("kubectl plugin list warns: %s", l)
			}
		}
	})

	t.Run("help and errors say kubectl workloaddoctor", func(t *testing.T) {
		stdout, stderr, code := kubectlRun("workloaddoctor", "--help")
		if code != 0 {
			t.Fatalf("kubectl workloaddoctor --help: exit %d\nstderr:\n%s", code, stderr)
		}
		for _, want := range []string{"Usage:\n  kubectl workloaddoctor [command]", "kubectl workloaddoctor scan -A",
			`Use "kubectl workloaddoctor [command] --help"`} {
			if !strings.Contains(stdout, want) {
				t.Errorf("--help does not contain %q:\n%s", want, stdout)
			}
		}
		stdout, _, code = kubectlRun("workloaddoctor", "scan", "--help")
		if code != 0 || !strings.Contains(stdout, "Usage:\n  kubectl workloaddoctor scan [flags]") {
			t.Errorf("kubectl workloaddoctor scan --help: exit %d, want usage `kubectl workloaddoctor scan [flags]`:\n%s", code, stdout)
		}
		_, stderr, code = kubectlRun("workloaddoctor", "no-such-command")
		if want := `unknown command "no-such-command" for "kubectl workloaddoctor"`; code != 1 || !strings.Contains(stderr, want) {
			t.Errorf("unknown command: exit %d, stderr %q; want exit 1 and %q", code, stderr, want)
		}
		_, stderr, code = kubectlRun("workloaddoctor", "explain")
		if code != 1 || !strings.Contains(stderr, "error: ") {
			t.Errorf("explain without an ID: exit %d, stderr %q; want exit 1 and an error", code, stderr)
		}
	})

	t.Run("version -o json without a cluster", func(t *testing.T) {
		stdout, stderr, code := kubectlRun("workloaddoctor", "version", "--client", "-o", "json")
		if code != 0 {
			t.Fatalf("version --client -o json: exit %d\nstderr:\n%s", code, stderr)
		}
		var doc struct {
			PluginVersion struct {
				Version string `json:"version"`
			} `json:"pluginVersion"`
			ServerVersion json.RawMessage `json:"serverVersion"`
		}
		if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
			t.Fatalf("version -o json is not JSON: %v\n%s", err, stdout)
		}
		if doc.PluginVersion.Version == "" || doc.ServerVersion != nil {
			t.Errorf("version --client -o json = %s, want pluginVersion.version and no serverVersion", stdout)
		}
	})

	// What completion has to offer, from the plugin's own catalogue: the test holds whichever
	// checks are registered.
	stdout, stderr, code := kubectlRun("workloaddoctor", "checks", "-o", "json")
	if code != 0 {
		t.Fatalf("checks -o json: exit %d\nstderr:\n%s", code, stderr)
	}
	var catalog struct {
		Checks []struct {
			ID         string `json:"id"`
			RootCauses []struct {
				ID string `json:"id"`
			} `json:"rootCauses"`
		} `json:"checks"`
		Actions []struct {
			ID string `json:"id"`
		} `json:"actions"`
	}
	if err := json.Unmarshal([]byte(stdout), &catalog); err != nil {
		t.Fatalf("checks -o json is not JSON: %v\n%s", err, stdout)
	}
	var checkIDs, actionIDs []string
	explainIDs := map[string]bool{}
	for _, c := range catalog.Checks {
		checkIDs = append(checkIDs, c.ID)
		explainIDs[c.ID] = true
		for _, rc := range c.RootCauses {
			explainIDs[rc.ID] = true
		}
	}
	for _, a := range catalog.Actions {
		actionIDs = append(actionIDs, a.ID)
		explainIDs[a.ID] = true
	}
	if !slices.Contains(actionIDs, "remove-finalizer") {
		t.Fatalf("checks -o json lists actions %v, without remove-finalizer", actionIDs)
	}

	t.Run("completion through kubectl_complete-workloaddoctor", func(t *testing.T) {
		cases := []struct {
			name string
			args []string
			want []string
		}{
			{name: "scan --checks", args: []string{"scan", "--checks", ""}, want: checkIDs},
			{name: "scan --skip-checks", args: []string{"scan", "--skip-checks", ""}, want: checkIDs},
			{name: "fix --action", args: []string{"fix", "--action", ""}, want: actionIDs},
			{name: "explain", args: []string{"explain", ""}, want: setKeys(explainIDs)},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				// kubectl __complete is what the shell's completion function calls on TAB.
				args := append([]string{"__complete", "workloaddoctor"}, tc.args...)
				got, directive := completionChoices(t, kubectlRun, args...)
				if directive != ":4" { // cobra.ShellCompDirectiveNoFileComp, set only by the plugin
					t.Errorf("kubectl %s: directive %q, want :4 from the plugin", strings.Join(args, " "), directive)
				}
				slices.Sort(got)
				want := slices.Sorted(slices.Values(tc.want))
				if !slices.Equal(got, want) {
					t.Errorf("kubectl %s completes %v, want %v", strings.Join(args, " "), got, want)
				}
			})
		}
	})

	t.Run("without the completion script kubectl cannot complete the plugin's flags", func(t *testing.T) {
		got, directive := completionChoices(t, kubectlNoCompletion, "__complete", "workloaddoctor", "explain", "")
		if slices.Contains(got, "remove-finalizer") || directive == ":4" {
			t.Errorf("completion without kubectl_complete-workloaddoctor on PATH returned %v %s", got, directive)
		}
	})
}

// completionChoices runs a kubectl __complete command and returns the choices and the directive line.
func completionChoices(t *testing.T, kubectl func(args ...string) (string, string, int), args ...string) ([]string, string) {
	t.Helper()
	stdout, stderr, code := kubectl(args...)
	if code != 0 {
		t.Fatalf("kubectl %s: exit %d\nstderr:\n%s", strings.Join(args, " "), code, stderr)
	}
	out := trimmedLines(stdout)
	if len(out) == 0 || !strings.HasPrefix(out[len(out)-1], ":") {
		t.Fatalf("kubectl %s printed no directive line:\n%s", strings.Join(args, " "), stdout)
	}
	var choices []string
	for _, l := range out[:len(out)-1] {
		id, _, _ := strings.Cut(l, "\t") // a choice may carry a tab-separated description
		choices = append(choices, id)
	}
	return choices, out[len(out)-1]
}

func trimmedLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

func setKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
