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
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

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

// fail reports err and exits 1.
func fail(err error) {
	fmt.Fprintln(os.Stderr, "demo:", err)
	os.Exit(1)
}

// exists reports whether path exists.
func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
