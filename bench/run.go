package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/testcluster"
)

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
	// perCheckErr is why the per-check runs stopped early ("" when they all ran).
	perCheckErr string
	// scanRaw are scans without compression, next to the uncompressed floor; baselineRaw is the
	// pods' size in JSON without it.
	scanRaw     []sample
	baselineRaw int64
	// audit is the auditor's run, when -audit-cycles asked for one.
	audit auditResult
	// compared are the -compare-plugin's scans, run alternately with scan, and
	// comparedSummary what its warm-up scan found.
	compared        []sample
	comparedSummary scanSummary
	// why are why's runs on objects the warm-up scan found stuck, with -why.
	why []whyResult
	// bundle is the capture and offline scan, with -bundle.
	bundle bundleResult
}

// run starts the control plane, seeds it size by size, and measures and writes the results at
// each size.
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
	bins := []string{kubectl, plugin}
	compare := ""
	if cfg.compare != "" {
		if compare, err = filepath.Abs(cfg.compare); err != nil {
			return err
		}
		bins = append(bins, compare)
	}
	for _, bin := range bins {
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
	cluster, restCfg, kubeconfig, stop, err := controlPlane(ctx, cfg.reuse)
	if err != nil {
		return err
	}
	defer stop()
	// The seeder's own client: protobuf and no client-side rate limit; the workers bound it.
	seedCfg := rest.CopyConfig(restCfg)
	seedCfg.QPS, seedCfg.Burst = -1, 0
	seedCfg.ContentType = "application/vnd.kubernetes.protobuf"
	seedCfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	kube, err := kubernetes.NewForConfig(seedCfg)
	if err != nil {
		return fmt.Errorf("seed client: %w", err)
	}
	jsonCfg := rest.CopyConfig(restCfg)
	jsonCfg.QPS, jsonCfg.Burst = -1, 0
	dyn, err := dynamic.NewForConfig(jsonCfg)
	if err != nil {
		return fmt.Errorf("seed dynamic client: %w", err)
	}
	sv, err := kube.Discovery().ServerVersion()
	if err != nil {
		return fmt.Errorf("server version: %w", err)
	}

	s := &seeder{kube: kube, dyn: dyn, workers: cfg.workers, base: time.Now()}
	if cfg.reuse == "" {
		crds, err := testcluster.KruiseCRDFiles()
		if err != nil {
			return err
		}
		if err := cluster.InstallCRDFiles(ctx, crds...); err != nil {
			return err
		}
		t0 := time.Now()
		if err := s.seedBase(ctx); err != nil {
			return err
		}
		logf("seeded %d namespaces and %d nodes in %s", namespaces, nodes, time.Since(t0).Round(time.Millisecond))
	}

	home, err := os.MkdirTemp("", "wd-bench-home-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(home)
	r := &runner{kube: kube, restConfig: restCfg, kubeconfig: kubeconfig, kubectl: kubectl, plugin: plugin, compare: compare, home: home,
		baselineLimit: cfg.baselineLimit, rawKubeconfig: filepath.Join(home, "raw.kubeconfig")}
	if err := writeRawKubeconfig(kubeconfig, r.rawKubeconfig); err != nil {
		return fmt.Errorf("write kubeconfig without compression: %w", err)
	}

	var results []result
	have := 0
	for _, size := range cfg.sizes {
		res := result{pods: size}
		writes := s.created.Load()
		t := time.Now()
		if cfg.reuse != "" {
			have = size // seeded by an earlier run that kept its cluster
		}
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
		if cfg.auditCycles > 0 {
			if res.audit, err = r.audit(ctx, cfg.auditCycles, cfg.auditInterval); err != nil {
				return fmt.Errorf("audit at %d pods: %w", size, err)
			}
		}
		results = append(results, res)
		// Write after every size, so a long run that fails later keeps what it measured.
		if err := writeResults(cfg, sv.GitVersion, results); err != nil {
			return err
		}
	}
	if cfg.keep {
		logf("cluster kept running until interrupted: KUBECONFIG=%s", kubeconfig)
		<-ctx.Done()
		logf("cluster stopped: %v", context.Cause(ctx))
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
	if _, err := again("warm-up scan", func() (sample, error) {
		if err := out.Truncate(0); err != nil {
			return sample{}, err
		}
		if _, err := out.Seek(0, 0); err != nil {
			return sample{}, err
		}
		return r.scan(ctx, out)
	}); err != nil {
		return fmt.Errorf("warm-up scan: %w", err)
	}
	if res.summary, err = summarize(out.Name()); err != nil {
		return err
	}
	logf("%d pods: warm-up scan: %d findings (%s), coverage complete: %v", res.pods, res.summary.findings, res.summary, res.summary.complete)
	var targets []whyTarget
	if cfg.why {
		if targets, err = whyTargets(out.Name()); err != nil {
			logf("%d pods: %v; why is measured on the others", res.pods, err)
		}
		for _, t := range targets {
			res.why = append(res.why, whyResult{target: t})
		}
	}
	if r.compare != "" {
		if err := out.Truncate(0); err != nil {
			return err
		}
		if _, err := out.Seek(0, 0); err != nil {
			return err
		}
		if _, err := again("warm-up scan of "+r.compare, func() (sample, error) { return r.scanCompared(ctx, out) }); err != nil {
			return fmt.Errorf("warm-up scan of %s: %w", r.compare, err)
		}
		if res.comparedSummary, err = summarize(out.Name()); err != nil {
			return err
		}
		logf("%d pods: warm-up scan of %s: %d findings (%s), coverage complete: %v", res.pods, r.compare, res.comparedSummary.findings,
			res.comparedSummary, res.comparedSummary.complete)
	}
	for i := range cfg.runs {
		steps := []func() error{
			func() error {
				if n := len(res.baseline); !cfg.baseline || n > 0 && res.baseline[n-1].failed {
					return nil // not asked for, or it will not fit the next time either
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
				s, err := again("scan", func() (sample, error) { return r.scan(ctx, nil) })
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
		for k := range res.why {
			steps = append(steps, func() error {
				wr := &res.why[k]
				s, err := r.why(ctx, wr.target)
				if err != nil {
					// A secondary table: its failure is reported there and the scan's runs go on.
					wr.err = err.Error()
					logf("%d pods, run %d: %v", res.pods, i+1, err)
					return nil
				}
				wr.runs = append(wr.runs, s)
				logf("%d pods, run %d: why %s: %s, %d requests, %d bytes", res.pods, i+1, strings.Join(wr.target.args, " "), s.wall.Round(time.Millisecond),
					s.reads.requests, s.reads.bytes)
				return nil
			})
		}
		if r.compare != "" {
			steps = append(steps, func() error {
				s, err := r.scanCompared(ctx, nil)
				res.compared = append(res.compared, s)
				logf("%d pods, run %d: %s scan -A -o json: %s, %s peak RSS, %d requests", res.pods, i+1, r.compare, s.wall.Round(time.Millisecond), mib(s.maxRSS), s.reads.requests)
				return err
			})
		}
		// Alternate which goes first; the plugin's scan stays next to its floor, and the
		// compared scan runs right after it in one run and right before it in the next.
		if i%2 == 1 {
			slices.Reverse(steps)
		}
		for _, step := range steps {
			if err := step(); err != nil {
				return err
			}
		}
	}
	if cfg.bundle {
		r.measureBundle(ctx, cfg.runs, res)
	}
	// Uncompressed sizes: kubectl and the scan ask for gzip, so the wire bytes above depend on how
	// well each payload compresses; these compare the payloads themselves.
	if cfg.baseline {
		if res.baselineRaw, err = r.baselineRawBytes(ctx); err != nil {
			return err
		}
	}
	if !cfg.eachCheck {
		return nil
	}
	// What each check costs alone: its inputs and the candidates it reads in full. A secondary
	// table: a failure here ends it and keeps what the runs above measured.
	ids, err := r.checkIDs(ctx)
	if err != nil {
		return err
	}
	res.perCheck = map[string]sample{}
	for _, id := range ids {
		s, err := r.scan(ctx, nil, "--checks", id)
		if err != nil {
			res.perCheckErr = fmt.Sprintf("scan --checks %s: %v", id, err)
			logf("%d pods: %s; the per-check table stops there", res.pods, res.perCheckErr)
			return nil
		}
		res.perCheck[id] = s
		logf("%d pods: scan --checks %s: %s, %s peak RSS", res.pods, id, s.wall.Round(time.Millisecond), mib(s.maxRSS))
	}
	return nil
}

// controlPlane starts etcd and kube-apiserver, or with reuse (a kubeconfig) connects to the
// cluster an earlier run kept (-keep): then cluster is nil and nothing is seeded again. stop
// stops what it started.
func controlPlane(ctx context.Context, reuse string) (cluster *testcluster.Cluster, cfg *rest.Config, kubeconfig string, stop func(), err error) {
	if reuse != "" {
		if cfg, err = clientcmd.BuildConfigFromFlags("", reuse); err != nil {
			return nil, nil, "", nil, fmt.Errorf("-reuse %s: %w", reuse, err)
		}
		logf("measuring the cluster of %s, seeded by an earlier run", reuse)
		return nil, cfg, reuse, func() {}, nil
	}
	began := time.Now()
	cluster, err = testcluster.New(ctx, testcluster.Options{
		// Room for 100k pods and their history until the apiserver compacts it.
		ExtraEtcdArgs: []string{"--quota-backend-bytes=8589934592"},
	}, logf)
	if err != nil {
		return nil, nil, "", nil, err
	}
	logf("control plane up in %s (%s)", time.Since(began).Round(time.Millisecond), cluster.Dir)
	return cluster, cluster.RESTConfig(), cluster.Kubeconfig, cluster.Stop, nil
}
