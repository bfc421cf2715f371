//go:build linux

package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/scenario"
	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/testcluster"
)

// up starts the demo cluster unless it runs, waits for the scenario, scans it and says what to try.
func up(root, dir string) error {
	plugin := filepath.Join(root, "bin", "kubectl-workloaddoctor")
	if _, err := os.Stat(plugin); err != nil {
		return fmt.Errorf("%s is missing: run `make demo` (or `make build`)", plugin)
	}
	kubectl, err := testcluster.LookupBinary("kubectl")
	if err != nil {
		return err
	}
	for _, b := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"} {
		if _, err := testcluster.LookupBinary(b); err != nil {
			return err
		}
	}

	pid, running := serving(dir)
	switch {
	case running && exists(filepath.Join(dir, readyFile)):
		fmt.Printf("The demo cluster is already running (pid %d, state in %s).\n\n", pid, dir)
		legend(dir)
		nextCommands(root, dir)
		return nil
	case running:
		fmt.Printf("The demo cluster is starting (pid %d); waiting for it.\n", pid)
	default:
		if exists(dir) {
			fmt.Printf("Removing %s left by a demo that is no longer running.\n", dir)
			if err := cleanup(dir); err != nil {
				return err
			}
		}
		if pid, err = spawn(dir); err != nil {
			return err
		}
		fmt.Printf("Starting the demo cluster in the background (pid %d, log %s).\n", pid, filepath.Join(dir, logFile))
	}
	if err := waitReady(dir, pid); err != nil {
		return err
	}

	fmt.Printf("\n$ kubectl workloaddoctor scan -A --min-age 0s\n")
	scan := exec.Command(kubectl, "workloaddoctor", "scan", "-A", "--min-age", "0s")
	if scan.Env, err = demoEnv(dir); err != nil {
		return err
	}
	scan.Stdout, scan.Stderr = os.Stdout, os.Stderr
	err = scan.Run()
	var exit *exec.ExitError
	if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 2) { // 2: findings, as intended
		return fmt.Errorf("scan the demo cluster: %w", err)
	}
	fmt.Println()
	legend(dir)
	nextCommands(root, dir)
	return nil
}

// spawn starts `demo serve` in its own session, detached from the terminal, and returns its pid.
func spawn(dir string) (int, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return 0, fmt.Errorf("create %s: %w", dir, err)
	}
	self, err := os.Executable()
	if err != nil {
		return 0, fmt.Errorf("find the demo binary: %w", err)
	}
	log, err := os.OpenFile(filepath.Join(dir, logFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return 0, fmt.Errorf("open the demo log: %w", err)
	}
	defer log.Close()
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return 0, err
	}
	defer devnull.Close()
	cmd := exec.Command(self, "serve", "-dir", dir)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = devnull, log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("start the demo cluster: %w", err)
	}
	pid := cmd.Process.Pid
	if err := os.WriteFile(filepath.Join(dir, pidFile), []byte(strconv.Itoa(pid)), 0o600); err != nil {
		return 0, err
	}
	// Reap it if it dies while up waits; once up exits, init adopts it.
	go func() { _ = cmd.Wait() }()
	return pid, nil
}

// waitReady waits for serve to build the scenario, printing its progress lines.
func waitReady(dir string, pid int) error {
	deadline := time.Now().Add(upTimeout)
	var offset int64
	for {
		offset = printProgress(filepath.Join(dir, logFile), offset)
		if exists(filepath.Join(dir, readyFile)) {
			return nil
		}
		if data, err := os.ReadFile(filepath.Join(dir, failedFile)); err == nil {
			return fmt.Errorf("the demo cluster failed: %s\n(log: %s; `make demo-down` cleans up)", strings.TrimSpace(string(data)), filepath.Join(dir, logFile))
		}
		if !testcluster.ProcessAlive(pid) {
			return fmt.Errorf("the demo cluster (pid %d) exited; last lines of %s:\n%s", pid, filepath.Join(dir, logFile), testcluster.Tail(filepath.Join(dir, logFile), 20))
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the demo cluster is not ready after %s; see %s, and `make demo-down`", upTimeout, filepath.Join(dir, logFile))
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// printProgress prints the step lines serve logged since offset and returns the new offset.
func printProgress(path string, offset int64) int64 {
	f, err := os.Open(path)
	if err != nil {
		return offset
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return offset
	}
	r := bufio.NewReader(f)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return offset // a partial line is read again next time
		}
		offset += int64(len(line))
		// "15:04:05 demo: message"
		if len(line) > 9 && strings.HasPrefix(line[9:], progressPrefix) {
			fmt.Print("  " + line[9+len(progressPrefix):])
		}
	}
}

// progressPrefix marks serve's progress lines in the log.
const progressPrefix = "demo: "

// demoEnv is the environment of commands run against the demo cluster: its kubeconfig, and the
// plugin and kubectl first on PATH.
func demoEnv(dir string) ([]string, error) {
	path, err := testcluster.CommandPATH()
	if err != nil {
		return nil, err
	}
	env := []string{"KUBECONFIG=" + filepath.Join(dir, kubeconfig), "PATH=" + path}
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "KUBECONFIG" && k != "PATH" {
			env = append(env, kv)
		}
	}
	return env, nil
}

// legend says what the scenario broke, one line per story.
func legend(dir string) {
	data, err := os.ReadFile(filepath.Join(dir, scenarioFile))
	if err != nil {
		return
	}
	var shop scenario.Shop
	if json.Unmarshal(data, &shop) != nil {
		return
	}
	fmt.Println("What the demo broke on purpose; a scan finds each one, and nothing in the healthy catalog, orders, reviews and frontend:")
	seen := map[string]bool{}
	for _, e := range shop.Expected {
		if seen[e.Story] {
			continue
		}
		seen[e.Story] = true
		who := "fix   "
		if !e.Fixable {
			who = "person"
		}
		fmt.Printf("  [%s] %-29s %s\n", who, e.RootCause, e.Story)
	}
	fmt.Println("  [fix] means `fix` repairs it; [person] means the finding says what a person must do.")
	fmt.Println()
}

// nextCommands says how to reach the demo cluster and what to run there.
func nextCommands(root, dir string) {
	tools, _ := testcluster.ToolsDir()
	fmt.Printf(`The demo cluster keeps running in the background. Try, in this shell:

  export KUBECONFIG=%s PATH=%s:%s:$PATH

  kubectl workloaddoctor scan -A --min-age 0s -o wide          # the evidence behind every finding
  kubectl workloaddoctor explain prenormal-event-dropped       # any check, root cause or action, in prose
  kubectl workloaddoctor fix -A --min-age 0s --dry-run=server  # the fixes, checked by the API server, nothing written
  kubectl workloaddoctor fix -A --min-age 0s --yes             # apply them
  kubectl workloaddoctor scan -A --min-age 0s                  # ~20s later: only what needs a person is left

--min-age 0s reports a problem as soon as it is seen: each check otherwise waits its own threshold
(5-10 minutes), as it should in a real cluster, and the demo's problems are only minutes old.
After the fix, kruise-manager's standby takes the leader Lease over when the old one expires (15s).

make demo-down stops the cluster and removes %s.
`, filepath.Join(dir, kubeconfig), filepath.Join(root, "bin"), tools, dir)
}
