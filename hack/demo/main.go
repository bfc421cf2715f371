//go:build linux

// Command demo runs the project's demo: a local cluster (etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler, kwok) on loopback ports, with the "shop" scenario of
// internal/scenario, in which every check of the plugin has something real to find.
//
//	demo up     start the cluster in the background (state in .demo/), build the scenario, scan it
//	demo down   stop the cluster and remove .demo/
//
// `up` re-executes itself detached as `demo serve`, which owns the cluster: its processes die
// with it (parent-death signal), it writes .demo/kubeconfig and .demo/ready, and stops the cluster
// on SIGTERM. `up` with a .demo/ whose serve no longer runs (a reboot, a kill) starts over; with a
// running one it says so. `make demo` and `make demo-down` run these. Linux only: the harness's
// parent-death signal and /proc are.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/scenario"
	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/testcluster"
)

// Files in the state directory.
const (
	pidFile      = "pid"           // the serve process
	pidsFile     = "pids"          // the cluster's processes, for down to check
	logFile      = "demo.log"      // serve's output
	kubeconfig   = "kubeconfig"    // admin kubeconfig of the demo cluster
	readyFile    = "ready"         // written once the scenario is built
	failedFile   = "failed"        // why serve gave up
	scenarioFile = "scenario.json" // what the scenario broke, for the legend
)

const (
	// upTimeout bounds the wait for the cluster and the scenario (PodGC alone takes about a minute).
	upTimeout = 10 * time.Minute
	// downTimeout bounds the wait for serve to stop the cluster after SIGTERM.
	downTimeout = 60 * time.Second
)

func main() {
	fs := flag.NewFlagSet("demo", flag.ExitOnError)
	dir := fs.String("dir", "", "state directory (default: .demo in the repository root)")
	fs.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: demo [-dir DIR] up|down")
		fs.PrintDefaults()
	}
	if len(os.Args) < 2 {
		fs.Usage()
		os.Exit(1)
	}
	cmd := os.Args[1]
	_ = fs.Parse(os.Args[2:])
	root, err := testcluster.RepoRoot()
	if err != nil {
		fail(err)
	}
	if *dir == "" {
		*dir = filepath.Join(root, ".demo")
	}
	if *dir, err = filepath.Abs(*dir); err != nil {
		fail(err)
	}
	switch cmd {
	case "up":
		err = up(root, *dir)
	case "down":
		err = down(*dir)
	case "serve":
		err = serve(*dir)
	default:
		fs.Usage()
		os.Exit(1)
	}
	if err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "demo:", err)
	os.Exit(1)
}

// ---- up ----

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
	scan.Env = demoEnv(root, dir)
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
		if !alive(pid) {
			return fmt.Errorf("the demo cluster (pid %d) exited; last lines of %s:\n%s", pid, filepath.Join(dir, logFile), tail(filepath.Join(dir, logFile), 20))
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

func demoEnv(root, dir string) []string {
	tools, _ := testcluster.ToolsDir()
	path := strings.Join([]string{filepath.Join(root, "bin"), tools, os.Getenv("PATH")}, string(os.PathListSeparator))
	env := []string{"KUBECONFIG=" + filepath.Join(dir, kubeconfig), "PATH=" + path}
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k != "KUBECONFIG" && k != "PATH" {
			env = append(env, kv)
		}
	}
	return env
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
		fmt.Printf("  [%s] %-26s %s\n", who, e.RootCause, e.Story)
	}
	fmt.Println("  [fix] means `fix` repairs it; [person] means the finding says what a person must do.")
	fmt.Println()
}

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

// ---- serve ----

// logf writes a progress line for up to show.
func logf(format string, args ...any) {
	fmt.Printf("%s %s%s\n", time.Now().Format("15:04:05"), progressPrefix, fmt.Sprintf(format, args...))
}

func serve(dir string) (err error) {
	if err := os.WriteFile(filepath.Join(dir, pidFile), []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	var c *testcluster.Cluster
	defer func() {
		// up waits for this file; the cluster stops after it is written.
		if err != nil {
			_ = os.WriteFile(filepath.Join(dir, failedFile), []byte(err.Error()+"\n"), 0o600)
		}
		if c != nil {
			c.Stop()
		}
	}()

	opts, files, err := scenario.ClusterOptions(filepath.Join(dir, "scenario"))
	if err != nil {
		return err
	}
	opts.Dir = filepath.Join(dir, "cluster")
	detail := func(format string, args ...any) { fmt.Printf(time.Now().Format("15:04:05 ")+format+"\n", args...) }
	logf("starting etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok")
	if c, err = testcluster.New(ctx, opts, detail); err != nil {
		return err
	}
	var pids []string
	for _, p := range c.Processes() {
		pids = append(pids, strconv.Itoa(p))
	}
	if err := os.WriteFile(filepath.Join(dir, pidsFile), []byte(strings.Join(pids, " ")+"\n"), 0o600); err != nil {
		return err
	}
	raw, err := os.ReadFile(c.Kubeconfig)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, kubeconfig), raw, 0o600); err != nil {
		return err
	}
	logf("cluster up at %s; installing the OpenKruise CRDs", c.APIServerURL)
	crds, err := scenario.KruiseCRDs()
	if err != nil {
		return err
	}
	if err := c.InstallCRDFiles(ctx, crds...); err != nil {
		return err
	}
	shop, err := scenario.Build(ctx, scenario.Env{Kube: c.Clientset(), Dynamic: c.Dynamic(), Files: files,
		Logf: func(format string, args ...any) {
			msg := fmt.Sprintf(format, args...)
			if strings.HasPrefix(msg, "[") {
				logf("%s", msg)
			} else {
				detail("%s", msg)
			}
		}})
	if err != nil {
		return err
	}
	raw, err = json.MarshalIndent(shop, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, scenarioFile), raw, 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, readyFile), []byte(time.Now().Format(time.RFC3339)+"\n"), 0o600); err != nil {
		return err
	}
	logf("the shop is up, and broken")
	<-ctx.Done()
	detail("stopping the demo cluster")
	return nil
}

// ---- down ----

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
	return pid, alive(pid) && len(args) >= 4 && args[1] == "serve" && args[3] == dir
}

// ours reports whether pid is alive and was started for this state directory (a cluster component
// runs with its files under dir).
func ours(pid int, dir string) bool {
	cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	return err == nil && alive(pid) && strings.Contains(string(cmdline), dir)
}

// alive reports whether pid runs and is not a zombie.
func alive(pid int) bool {
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	if i := strings.LastIndexByte(string(stat), ')'); i >= 0 && strings.HasPrefix(string(stat[i+1:]), " Z") {
		return false
	}
	return true
}

func waitGone(pids []int, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for {
		gone := true
		for _, p := range pids {
			if alive(p) {
				gone = false
			}
		}
		if gone {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
