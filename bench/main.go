// Command bench measures `kubectl workloaddoctor scan -A` against `kubectl get pods -A -o json` on a
// real control plane seeded with a realistic population, at several sizes, in one run.
//
//	go run ./bench                       # 10k and 30k pods (make bench)
//	go run ./bench -large                # also 100k pods (make bench BENCH_FLAGS=-large)
//
// It starts etcd and kube-apiserver from bin/tools (make tools), seeds the cluster concurrently,
// and for each size measures, alternating, several times each: the kubectl baseline, the scan
// (bin/kubectl-workloaddoctor, make build), and the floor (one metadata-only protobuf LIST of all
// pods). Wall time and peak RSS come from the OS; requests and bytes from the apiserver's metrics.
// The results go to a markdown file (bench/RESULTS.md) and to stdout.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

type config struct {
	sizes   []int
	runs    int
	workers int
	out     string
	plugin  string
	// compare, when set, is a second plugin binary measured the same way at each size, its scans
	// alternating with the plugin's.
	compare string
	timeout time.Duration
	keep    bool
	// baseline measures kubectl's read of every pod, the figure the scan is compared with.
	baseline bool
	// eachCheck also runs the scan with each check alone at each size.
	eachCheck bool
	// baselineLimit caps kubectl's address space, in bytes.
	baselineLimit int64
	// auditCycles, when positive, also runs the auditor for that many cycles at each size, one
	// every auditInterval.
	auditCycles   int
	auditInterval time.Duration
	// why also measures `why` on a stuck pod, a stuck namespace and a frozen CloneSet.
	why bool
	// bundle also measures `capture -A` and the offline `scan -A --from-bundle` of its archive.
	bundle bool
	// reuse is the kubeconfig of a cluster a -keep run left seeded at the one size measured.
	reuse string
}

func main() {
	var (
		cfg   config
		sizes string
		large bool
	)
	flag.StringVar(&sizes, "sizes", "10000,30000", "Pod counts to measure, ascending; the cluster grows from one to the next.")
	flag.BoolVar(&large, "large", false, "Also measure 100000 pods (seeding takes several minutes on two cores).")
	flag.IntVar(&cfg.runs, "runs", 3, "Runs of each command per size; the median is reported.")
	flag.IntVar(&cfg.workers, "workers", 32, "Concurrent writes while seeding.")
	flag.StringVar(&cfg.out, "out", "bench/RESULTS.md", "Markdown file the results are written to (empty: stdout only).")
	flag.StringVar(&cfg.plugin, "plugin", "bin/kubectl-workloaddoctor", "The plugin binary to measure (make build).")
	flag.StringVar(&cfg.compare, "compare-plugin", "", "A second plugin binary (say, an earlier build) whose scan is measured in the same runs, alternating with the plugin's, and compared with it.")
	flag.DurationVar(&cfg.timeout, "timeout", 3*time.Hour, "Upper bound of the whole benchmark.")
	limitGiB := flag.Float64("baseline-limit", 12, "Address-space cap of the kubectl baseline in GiB (0: none); above it kubectl fails and is reported as such.")
	flag.IntVar(&cfg.auditCycles, "audit-cycles", 0, "Also run `audit -A --reports none` for this many cycles at each size and report its memory and requests per cycle (0: not).")
	flag.DurationVar(&cfg.auditInterval, "audit-interval", time.Second, "The auditor's --interval with -audit-cycles.")
	flag.BoolVar(&cfg.baseline, "baseline", true, "Measure `kubectl get pods -A -o json` as the baseline (at 100k pods about 5 minutes a run); without it the ratios to kubectl are not reported.")
	flag.BoolVar(&cfg.eachCheck, "each-check", true, "Also run the scan with each check alone at each size (one run each).")
	flag.BoolVar(&cfg.why, "why", false, "Also measure `why TYPE/NAME` on a stuck pod, a stuck namespace and a frozen CloneSet the warm-up scan found, in the scan's runs.")
	flag.BoolVar(&cfg.bundle, "bundle", false, "Also measure `capture -A -o FILE.tgz` (time, requests, archive size) and `scan -A --from-bundle FILE.tgz` against the live scan, in the scan's runs.")
	flag.StringVar(&cfg.reuse, "reuse", "", "Measure the cluster of this kubeconfig, which a -keep run left seeded at the one size in -sizes, instead of starting and seeding one (a new build re-measured without an hour of seeding).")
	flag.BoolVar(&cfg.keep, "keep", false, "Keep the cluster running after measuring, until interrupted or -timeout, to inspect it.")
	flag.Parse()
	cfg.baselineLimit = int64(*limitGiB * (1 << 30))
	for _, f := range strings.Split(sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < groupSize {
			fmt.Fprintf(os.Stderr, "bench: invalid -sizes entry %q\n", f)
			os.Exit(1)
		}
		cfg.sizes = append(cfg.sizes, n/groupSize*groupSize)
	}
	if large {
		cfg.sizes = append(cfg.sizes, 100000)
	}
	if cfg.reuse != "" && len(cfg.sizes) != 1 {
		fmt.Fprintln(os.Stderr, "bench: -reuse measures the one size its cluster was seeded at: give one -sizes")
		os.Exit(1)
	}
	slices.Sort(cfg.sizes)
	cfg.sizes = slices.Compact(cfg.sizes)
	if cfg.runs < 1 || cfg.workers < 1 || cfg.auditCycles < 0 || cfg.auditInterval <= 0 {
		fmt.Fprintln(os.Stderr, "bench: -runs, -workers and -audit-interval must be positive, -audit-cycles not negative")
		os.Exit(1)
	}

	ctx, stop := notifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeoutCause(ctx, cfg.timeout, fmt.Errorf("stopped: -timeout %s passed", cfg.timeout))
	defer cancel()
	ctx, stopWatch := watchMemory(ctx, 1<<30)
	defer stopWatch()
	if err := run(ctx, cfg); err != nil {
		// What stopped a long run (a signal, the timeout, the memory guard) is said, not only
		// "context canceled".
		if cause := context.Cause(ctx); cause != nil && !errors.Is(err, cause) {
			err = fmt.Errorf("%w (%v)", err, cause)
		}
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(1)
	}
}

// logf writes a timestamped progress line to stderr.
func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s  %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// notifyContext is signal.NotifyContext whose cause names the signal received.
func notifyContext(parent context.Context, signals ...os.Signal) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, signals...)
	go func() {
		select {
		case sig := <-ch:
			cancel(fmt.Errorf("stopped: received %v", sig))
		case <-ctx.Done():
		}
	}()
	return ctx, func() { signal.Stop(ch); cancel(nil) }
}
