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
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/testcluster"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
)

type config struct {
	sizes   []int
	runs    int
	workers int
	out     string
	plugin  string
	timeout time.Duration
	keep    bool
	// baselineLimit caps kubectl's address space, in bytes.
	baselineLimit int64
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
	flag.DurationVar(&cfg.timeout, "timeout", 3*time.Hour, "Upper bound of the whole benchmark.")
	limitGiB := flag.Float64("baseline-limit", 12, "Address-space cap of the kubectl baseline in GiB (0: none); above it kubectl fails and is reported as such.")
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
	slices.Sort(cfg.sizes)
	cfg.sizes = slices.Compact(cfg.sizes)
	if cfg.runs < 1 || cfg.workers < 1 {
		fmt.Fprintln(os.Stderr, "bench: -runs and -workers must be positive")
		os.Exit(1)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	ctx, stopWatch := watchMemory(ctx, 1<<30)
	defer stopWatch()
	if err := run(ctx, cfg); err != nil {
		if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) && !errors.Is(cause, context.DeadlineExceeded) {
			err = fmt.Errorf("%w (%v)", err, cause)
		}
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(1)
	}
}

// watchMemory cancels ctx when the machine's available memory drops below min: the control plane,
// kubectl and the scan share it with whatever else runs there, and the benchmark would rather stop
// than push the machine into the OOM killer.
func watchMemory(ctx context.Context, min int64) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if avail := memAvailable(); avail > 0 && avail < min {
					cancel(fmt.Errorf("stopped: only %s of memory left available on the machine", mib(avail)))
					return
				}
			}
		}
	}()
	return ctx, func() { close(done); cancel(nil) }
}

// memAvailable is MemAvailable from /proc/meminfo in bytes, 0 if unknown.
func memAvailable() int64 {
	raw, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemAvailable:" {
			kib, _ := strconv.ParseInt(f[1], 10, 64)
			return kib << 10
		}
	}
	return 0
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s  %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// result is everything measured at one size.
type result struct {
	pods      int
	seed      time.Duration
	seedWrite int64
	floor     []sample
	floorGzip []sample
	baseline  []sample
	scan      []sample
	summary   scanSummary
	// perCheck is one run of the scan with each check alone, by check ID.
	perCheck map[string]sample
	// scanRaw are scans without compression, next to the uncompressed floor; baselineRaw is the
	// pods' size in JSON without it.
	scanRaw     []sample
	baselineRaw int64
}

func run(ctx context.Context, cfg config) error {
	tools, err := testcluster.ToolsDir()
	if err != nil {
		return err
	}
	kubectl := filepath.Join(tools, "kubectl")
	plugin, err := filepath.Abs(cfg.plugin)
	if err != nil {
		return err
	}
	for _, bin := range []string{kubectl, plugin} {
		if fi, err := os.Stat(bin); err != nil || fi.IsDir() {
			return fmt.Errorf("%s is missing: run `make build tools` first", bin)
		}
	}

	// The control plane's Go runtimes collect garbage earlier than by default: at 100k pods the
	// apiserver's heap is several GiB, and the machine also has to hold kubectl's. The measured
	// commands run with the default settings (see runner.command).
	for k, v := range map[string]string{"GOGC": "50"} {
		if err := os.Setenv(k, v); err != nil {
			return err
		}
	}
	began := time.Now()
	cluster, err := testcluster.New(ctx, testcluster.Options{
		// Room for 100k pods and their history until the apiserver compacts it.
		ExtraEtcdArgs: []string{"--quota-backend-bytes=8589934592"},
	}, logf)
	if err != nil {
		return err
	}
	defer cluster.Stop()
	logf("control plane up in %s (%s)", time.Since(began).Round(time.Millisecond), cluster.Dir)

	// The seeder's own client: protobuf and no client-side rate limit; the workers bound it.
	seedCfg := cluster.RESTConfig()
	seedCfg.QPS, seedCfg.Burst = -1, 0
	seedCfg.ContentType = "application/vnd.kubernetes.protobuf"
	seedCfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	kube, err := kubernetes.NewForConfig(seedCfg)
	if err != nil {
		return fmt.Errorf("seed client: %w", err)
	}
	jsonCfg := cluster.RESTConfig()
	jsonCfg.QPS, jsonCfg.Burst = -1, 0
	dyn, err := dynamic.NewForConfig(jsonCfg)
	if err != nil {
		return fmt.Errorf("seed dynamic client: %w", err)
	}
	if err := installKruiseCRDs(ctx, dyn, kube); err != nil {
		return err
	}
	sv, err := kube.Discovery().ServerVersion()
	if err != nil {
		return fmt.Errorf("server version: %w", err)
	}

	s := &seeder{kube: kube, dyn: dyn, workers: cfg.workers, base: time.Now()}
	t0 := time.Now()
	if err := s.seedBase(ctx); err != nil {
		return err
	}
	logf("seeded %d namespaces and %d nodes in %s", namespaces, nodes, time.Since(t0).Round(time.Millisecond))

	home, err := os.MkdirTemp("", "wd-bench-home-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(home)
	r := &runner{kube: kube, restConfig: cluster.RESTConfig(), kubeconfig: cluster.Kubeconfig, kubectl: kubectl, plugin: plugin, home: home,
		baselineLimit: cfg.baselineLimit, rawKubeconfig: filepath.Join(home, "raw.kubeconfig")}
	if err := writeRawKubeconfig(cluster.Kubeconfig, r.rawKubeconfig); err != nil {
		return fmt.Errorf("write kubeconfig without compression: %w", err)
	}

	var results []result
	have := 0
	for _, size := range cfg.sizes {
		res := result{pods: size}
		writes := s.created.Load()
		t := time.Now()
		if err := s.seedGroups(ctx, have/groupSize, size/groupSize); err != nil {
			return fmt.Errorf("seed %d pods: %w", size, err)
		}
		res.seed, res.seedWrite = time.Since(t), s.created.Load()-writes
		logf("seeded pods %d..%d in %s (%d writes, %.0f/s)", have, size, res.seed.Round(time.Second), res.seedWrite,
			float64(res.seedWrite)/res.seed.Seconds())
		have = size
		if err := measure(ctx, cfg, r, &res); err != nil {
			return fmt.Errorf("measure %d pods: %w", size, err)
		}
		results = append(results, res)
		// Write after every size, so a long run that fails later keeps what it measured.
		if err := writeResults(cfg, sv.GitVersion, results); err != nil {
			return err
		}
	}
	if cfg.keep {
		logf("cluster kept running until interrupted: KUBECONFIG=%s", cluster.Kubeconfig)
		<-ctx.Done()
	}
	return nil
}

// measure runs a warm-up scan (whose report gives the findings) and then the floor, the baseline
// and the scan cfg.runs times each, alternating which of baseline and scan goes first.
func measure(ctx context.Context, cfg config, r *runner, res *result) error {
	out, err := os.CreateTemp("", "wd-bench-report-*.json")
	if err != nil {
		return err
	}
	defer os.Remove(out.Name())
	defer out.Close()
	if _, err := r.scan(ctx, out); err != nil {
		return fmt.Errorf("warm-up scan: %w", err)
	}
	if res.summary, err = summarize(out.Name()); err != nil {
		return err
	}
	logf("%d pods: warm-up scan: %d findings (%s), coverage complete: %v", res.pods, res.summary.findings, res.summary, res.summary.complete)
	for i := range cfg.runs {
		steps := []func() error{
			func() error {
				if n := len(res.baseline); n > 0 && res.baseline[n-1].failed {
					return nil // it will not fit the next time either
				}
				b, err := r.baseline(ctx)
				res.baseline = append(res.baseline, b)
				status := ""
				if b.failed {
					status = fmt.Sprintf(" FAILED (exit %d) under the %s address-space cap", b.exit, mib(r.baselineLimit))
				}
				logf("%d pods, run %d: kubectl get pods -A -o json: %s, %s peak RSS%s", res.pods, i+1, b.wall.Round(time.Millisecond), mib(b.maxRSS), status)
				return err
			},
			func() error {
				// The floor right before the scan, so both meet the apiserver in the same state
				// (not, say, collecting the garbage of kubectl's JSON).
				f, err := r.floor(ctx, false)
				if err != nil {
					return err
				}
				res.floor = append(res.floor, f)
				if f, err = r.floor(ctx, true); err != nil {
					return err
				}
				res.floorGzip = append(res.floorGzip, f)
				logf("%d pods, run %d: floor %s, with gzip %s", res.pods, i+1, res.floor[len(res.floor)-1].wall.Round(time.Millisecond), f.wall.Round(time.Millisecond))
				s, err := r.scan(ctx, nil)
				res.scan = append(res.scan, s)
				logf("%d pods, run %d: workloaddoctor scan -A -o json: %s, %s peak RSS, %d requests", res.pods, i+1, s.wall.Round(time.Millisecond), mib(s.maxRSS), s.reads.requests)
				if err != nil {
					return err
				}
				// The same without compression, to compare with the floor as curl reads it.
				s, err = r.scanRaw(ctx)
				res.scanRaw = append(res.scanRaw, s)
				logf("%d pods, run %d: the same with --disable-compression: %s, %s peak RSS", res.pods, i+1, s.wall.Round(time.Millisecond), mib(s.maxRSS))
				return err
			},
		}
		if i%2 == 1 {
			steps[0], steps[1] = steps[1], steps[0]
		}
		for _, step := range steps {
			if err := step(); err != nil {
				return err
			}
		}
	}
	// Uncompressed sizes: kubectl and the scan ask for gzip, so the wire bytes above depend on how
	// well each payload compresses; these compare the payloads themselves.
	if res.baselineRaw, err = r.baselineRawBytes(ctx); err != nil {
		return err
	}
	// What each check costs alone: its inputs and the candidates it reads in full.
	ids, err := r.checkIDs(ctx)
	if err != nil {
		return err
	}
	res.perCheck = map[string]sample{}
	for _, id := range ids {
		s, err := r.scan(ctx, nil, "--checks", id)
		if err != nil {
			return fmt.Errorf("scan --checks %s: %w", id, err)
		}
		res.perCheck[id] = s
		logf("%d pods: scan --checks %s: %s, %s peak RSS", res.pods, id, s.wall.Round(time.Millisecond), mib(s.maxRSS))
	}
	return nil
}

// installKruiseCRDs creates the project's OpenKruise CRDs (test/testdata/crds) and waits until
// discovery serves CloneSets.
func installKruiseCRDs(ctx context.Context, dyn dynamic.Interface, kube kubernetes.Interface) error {
	dir, err := testcluster.CRDDir()
	if err != nil {
		return err
	}
	paths, err := filepath.Glob(filepath.Join(dir, kruise.Group+"_*.yaml"))
	if err != nil || len(paths) == 0 {
		return fmt.Errorf("no OpenKruise CRDs in %s", dir)
	}
	crds := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	for _, path := range paths {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
		for {
			u := &unstructured.Unstructured{}
			if err := dec.Decode(&u.Object); err != nil {
				f.Close()
				if errors.Is(err, io.EOF) {
					break
				}
				return fmt.Errorf("decode %s: %w", path, err)
			}
			if len(u.Object) == 0 {
				continue
			}
			if err := retry(ctx, func() error {
				_, err := dyn.Resource(crds).Create(ctx, u, metav1.CreateOptions{})
				return err
			}); err != nil {
				f.Close()
				return fmt.Errorf("create CRD %s: %w", u.GetName(), err)
			}
		}
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return wait.PollUntilContextCancel(wctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		l, err := kube.Discovery().ServerResourcesForGroupVersion(kruise.CloneSets.GroupVersion().String())
		if err != nil {
			return false, nil
		}
		for _, r := range l.APIResources {
			if r.Name == kruise.CloneSets.Resource {
				return true, nil
			}
		}
		return false, nil
	})
}
