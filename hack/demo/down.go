//go:build linux

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// down stops a running serve and removes the state directory.
func down(dir string) error {
	if !exists(dir) {
		fmt.Printf("No demo cluster (%s does not exist).\n", dir)
		return nil
	}
	if pid, running := serving(dir); running {
		fmt.Printf("Stopping the demo cluster (pid %d).\n", pid)
		_ = syscall.Kill(pid, syscall.SIGTERM)
		if !waitGone([]int{pid}, downTimeout) {
			fmt.Printf("It did not stop within %s; killing it.\n", downTimeout)
			_ = syscall.Kill(pid, syscall.SIGKILL)
			waitGone([]int{pid}, 10*time.Second)
		}
	}
	if err := cleanup(dir); err != nil {
		return err
	}
	fmt.Printf("Demo cluster stopped; %s removed.\n", dir)
	return nil
}

// cleanup kills what is left of the cluster's processes (they die with serve; this is for a
// serve killed in a way that left them) and removes the state directory.
func cleanup(dir string) error {
	var left []int
	if data, err := os.ReadFile(filepath.Join(dir, pidsFile)); err == nil {
		for _, f := range strings.Fields(string(data)) {
			if pid, err := strconv.Atoi(f); err == nil && ours(pid, dir) {
				left = append(left, pid)
			}
		}
	}
	for _, pid := range left {
		// Each component leads its own process group; anything it forked goes with it.
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	if len(left) > 0 && !waitGone(left, 10*time.Second) {
		return fmt.Errorf("processes %v of the demo cluster are still running", left)
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("remove %s: %w", dir, err)
	}
	return nil
}
