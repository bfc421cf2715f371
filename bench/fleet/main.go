// Command fleet measures what `scan --contexts` costs against scanning its slowest context alone:
// two small real control planes (etcd and kube-apiserver from bin/tools), one larger than the
// other, and a kubeconfig of 20 contexts pointing at them (a fleet of 20 distinct clusters would
// need 20 control planes, more than the machine has; contexts that share an apiserver contend on
// it and on the same cores, so the fleet's numbers are an upper bound).
//
//	go run ./bench/fleet -out bench/RESULTS-fleet.md
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/testcluster"
)

type config struct {
	small, large   int // pods in the small and the large cluster
	contexts       int // contexts in the fleet
	largeContexts  int // of which point at the large cluster
	runs           int
	parallel       []int
	plugin, out    string
	seedingWorkers int
}

func main() {
	var cfg config
	var parallel string
	flag.IntVar(&cfg.small, "small-pods", 300, "Pods in the small cluster.")
	flag.IntVar(&cfg.large, "large-pods", 3000, "Pods in the large cluster (the slowest context).")
	flag.IntVar(&cfg.contexts, "contexts", 20, "Contexts in the fleet kubeconfig.")
	flag.IntVar(&cfg.largeContexts, "large-contexts", 4, "How many of the contexts point at the large cluster; the rest at the small one.")
	flag.IntVar(&cfg.runs, "runs", 3, "Runs of each command; the median is reported.")
	flag.StringVar(&parallel, "parallel", "1,4,8", "The --parallel values measured.")
	flag.StringVar(&cfg.plugin, "plugin", "bin/kubectl-workloaddoctor", "The plugin binary (make build).")
	flag.StringVar(&cfg.out, "out", "bench/RESULTS-fleet.md", "Markdown file for the results (empty: stdout only).")
	flag.IntVar(&cfg.seedingWorkers, "workers", 16, "Concurrent writes while seeding.")
	flag.Parse()
	for _, p := range strings.Split(parallel, ",") {
		var n int
		if _, err := fmt.Sscan(p, &n); err != nil || n < 1 {
			log.Fatalf("invalid -parallel %q", parallel)
		}
		cfg.parallel = append(cfg.parallel, n)
	}
	if err := run(context.Background(), cfg); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, cfg config) error {
	plugin, err := filepath.Abs(cfg.plugin)
	if err != nil {
		return err
	}
	began := time.Now()
	small, err := testcluster.New(ctx, testcluster.Options{}, nil)
	if err != nil {
		return err
	}
	defer small.Stop()
	large, err := testcluster.New(ctx, testcluster.Options{}, nil)
	if err != nil {
		return err
	}
	defer large.Stop()
	for _, c := range []struct {
		cl   *testcluster.Cluster
		pods int
	}{{small, cfg.small}, {large, cfg.large}} {
		if err := seed(ctx, c.cl.Clientset(), c.pods, cfg.seedingWorkers); err != nil {
			return err
		}
	}
	log.Printf("clusters up and seeded in %s", time.Since(began).Round(time.Second))

	dir, err := os.MkdirTemp("", "fleet-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	kc := filepath.Join(dir, "fleet.kubeconfig")
	if err := writeKubeconfig(kc, small, large, cfg); err != nil {
		return err
	}

	var rows []row
	measure := func(name string, args ...string) error {
		r, err := measureRuns(ctx, plugin, kc, cfg.runs, args)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		r.name = name
		rows = append(rows, r)
		log.Printf("%s: median %s, peak RSS %d MiB, exit %d", name, r.median.Round(time.Millisecond), r.rss>>20, r.exit)
		return nil
	}
	if err := measure("slowest context alone (large cluster)", "scan", "-A", "-o", "json", "--min-age", "0s", "--context", "large-0"); err != nil {
		return err
	}
	if err := measure("one small context alone", "scan", "-A", "-o", "json", "--min-age", "0s", "--context", "small-0"); err != nil {
		return err
	}
	for _, p := range cfg.parallel {
		if err := measure(fmt.Sprintf("%d contexts, --parallel %d", cfg.contexts, p),
			"scan", "-A", "-o", "json", "--min-age", "0s", "--all-contexts", "--parallel", fmt.Sprint(p)); err != nil {
			return err
		}
	}
	return write(cfg, rows)
}

// seed creates n pods in namespaces of 50, one in 50 held Terminating by a finalizer nobody
// handles, so the scan has findings to report in every context.
func seed(ctx context.Context, cs kubernetes.Interface, n, workers int) error {
	jobs := make(chan int)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				if err := seedPod(ctx, cs, i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for i := 0; i < n; i += 50 {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("team-%d", i/50)}}
		if _, err := cs.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create namespace: %w", err)
		}
	}
	for i := range n {
		select {
		case jobs <- i:
		case err := <-errs:
			close(jobs)
			return err
		}
	}
	close(jobs)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

func seedPod(ctx context.Context, cs kubernetes.Interface, i int) error {
	ns, name := fmt.Sprintf("team-%d", i/50), fmt.Sprintf("web-%d", i)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/web:1.0"}}},
	}
	stuck := i%50 == 7
	if stuck {
		pod.Finalizers = []string{"resources-finalizer.argocd.argoproj.io/background"}
	}
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create pod: %w", err)
	}
	if stuck {
		if err := cs.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			return fmt.Errorf("delete pod: %w", err)
		}
	}
	return nil
}

// writeKubeconfig writes the fleet: large-0..large-(k-1) and small-0..small-(n-k-1).
func writeKubeconfig(path string, small, large *testcluster.Cluster, cfg config) error {
	out := clientcmdapi.NewConfig()
	for i := range cfg.contexts {
		src, name := small, fmt.Sprintf("small-%d", i-cfg.largeContexts)
		if i < cfg.largeContexts {
			src, name = large, fmt.Sprintf("large-%d", i)
		}
		in, err := clientcmd.LoadFromFile(src.Kubeconfig)
		if err != nil {
			return err
		}
		cur := in.Contexts[in.CurrentContext]
		out.Clusters[name] = in.Clusters[cur.Cluster]
		out.AuthInfos[name] = in.AuthInfos[cur.AuthInfo]
		out.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	}
	out.CurrentContext = "small-0"
	return clientcmd.WriteToFile(*out, path)
}

type row struct {
	name   string
	median time.Duration
	all    []time.Duration
	rss    int64 // the largest peak RSS of the runs
	exit   int
}

func measureRuns(ctx context.Context, plugin, kubeconfig string, runs int, args []string) (row, error) {
	var r row
	for range runs {
		cmd := exec.CommandContext(ctx, plugin, args...)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "NO_COLOR=1")
		cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
		start := time.Now()
		err := cmd.Run()
		took := time.Since(start)
		if cmd.ProcessState == nil {
			return r, err
		}
		r.exit = cmd.ProcessState.ExitCode()
		if r.exit != 0 && r.exit != 2 {
			return r, fmt.Errorf("%s exited %d", strings.Join(args, " "), r.exit)
		}
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			r.rss = max(r.rss, ru.Maxrss*1024)
		}
		r.all = append(r.all, took)
	}
	sorted := slices.Clone(r.all)
	slices.Sort(sorted)
	r.median = sorted[len(sorted)/2]
	return r, nil
}

func write(cfg config, rows []row) error {
	var b strings.Builder
	host, _ := os.Hostname()
	fmt.Fprintf(&b, "# Fleet scan: %d contexts against the slowest one alone\n\n", cfg.contexts)
	fmt.Fprintf(&b, "`go run ./bench/fleet` on %s (%s/%s, %d CPUs, shared with other work), %s.\n\n",
		host, runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(&b, "Two real control planes (etcd and kube-apiserver): a large cluster of %d pods and a small one of %d\n"+
		"(namespaces of 50 pods, one pod in 50 held Terminating by a finalizer nobody handles). The fleet\n"+
		"kubeconfig has %d contexts: %d point at the large cluster, %d at the small one. Contexts sharing an\n"+
		"apiserver contend for it and for the same cores, so the fleet rows are an upper bound on a fleet of\n"+
		"distinct clusters. Every command is `scan -A -o json --min-age 0s` (so the stuck pods are findings at\n"+
		"once); median of %d runs, peak RSS the largest.\n\n",
		cfg.large, cfg.small, cfg.contexts, cfg.largeContexts, cfg.contexts-cfg.largeContexts, cfg.runs)
	b.WriteString("| command | median | runs | peak RSS | x slowest alone | exit |\n|---|---|---|---|---|---|\n")
	base := rows[0].median
	for _, r := range rows {
		var all []string
		for _, d := range r.all {
			all = append(all, d.Round(10*time.Millisecond).String())
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %d MiB | %.1f | %d |\n", r.name, r.median.Round(10*time.Millisecond), strings.Join(all, ", "),
			r.rss>>20, float64(r.median)/float64(base), r.exit)
	}
	fmt.Print(b.String())
	if cfg.out == "" {
		return nil
	}
	return os.WriteFile(cfg.out, []byte(b.String()), 0o644)
}
