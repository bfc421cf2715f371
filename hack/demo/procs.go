//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/testcluster"
)

// serving returns serve's pid and whether it runs (the pid is alive and is a demo serve for dir,
// not a process that reused the pid after a reboot).
func serving(dir string) (int, bool) {
	data, err := os.ReadFile(filepath.Join(dir, pidFile))
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 0 {
		return 0, false
	}
	cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if err != nil {
		return pid, false
	}
	args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	return pid, testcluster.ProcessAlive(pid) && len(args) >= 4 && args[1] == "serve" && args[3] == dir
}

// ours reports whether pid is alive and was started for this state directory (a cluster component
// runs with its files under dir).
func ours(pid int, dir string) bool {
	cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	return err == nil && testcluster.ProcessAlive(pid) && strings.Contains(string(cmdline), dir)
}

// waitGone waits until none of pids runs, at most timeout, and reports whether they are gone.
func waitGone(pids []int, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for len(testcluster.LeakedProcesses(pids)) > 0 {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(200 * time.Millisecond)
	}
	return true
}
