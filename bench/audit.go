package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/testcluster"
)

// auditCycle is one cycle of the auditor, as its log line and the samples taken right after it
// tell.
type auditCycle struct {
	duration time.Duration
	// requests is the auditor's own count of the requests the cycle's scan sent.
	requests int64
	failed   bool
	// rss is the child's VmRSS, heap its go_memstats_heap_inuse_bytes and goroutines its
	// go_goroutines, read right after the cycle's log line.
	rss        int64
	heap       float64
	goroutines float64
	// alloc is go_memstats_heap_alloc_bytes: the bytes of the objects in the heap, without the
	// free space of the spans they are in.
	alloc float64
}

// auditResult is one run of the auditor for a number of cycles.
type auditResult struct {
	interval time.Duration
	cycles   []auditCycle
	// peakRSS is the child's peak RSS over its whole life, from the OS (wait4 rusage); cpu its
	// CPU time (user and system), startup included.
	peakRSS int64
	cpu     time.Duration
	// reads is what the apiserver served from the child's start to its end, startup included;
	// steady what it served between the ends of the first and the last cycle, in steadyTime.
	reads, steady apiReads
	steadyTime    time.Duration
	// background is the rate of the control plane's own reads (its loopback client's Lease and
	// endpoint reconcilers), per second, measured with nothing else running before the child.
	background float64
}

// quietWindow is how long the control plane's own reads are counted before the auditor starts:
// its loops run every 10 s.
const quietWindow = 30 * time.Second

// backgroundReads is the rate of the reads (GET, LIST, WATCH) the apiserver serves per second
// while no client of the benchmark sends any, less the benchmark's own scrape of its metrics.
func (r *runner) backgroundReads(ctx context.Context) (float64, error) {
	m0, err := scrape(ctx, r.kube)
	if err != nil {
		return 0, err
	}
	t := time.Now()
	select {
	case <-ctx.Done():
		return 0, ctx.Err()
	case <-time.After(quietWindow):
	}
	m1, err := scrape(ctx, r.kube)
	if err != nil {
		return 0, err
	}
	d := m1.since(m0)
	return max(0, float64(d.requests-d.writes-1)) / time.Since(t).Seconds(), nil
}

// audit runs `audit -A --reports none` as a child process until it has logged n cycles, sampling
// its memory after each, then stops it with SIGTERM.
func (r *runner) audit(ctx context.Context, n int, interval time.Duration) (auditResult, error) {
	res := auditResult{interval: interval}
	metricsPort, err := testcluster.FreePort()
	if err != nil {
		return res, err
	}
	healthPort, err := testcluster.FreePort()
	if err != nil {
		return res, err
	}
	metricsURL := fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort)
	if res.background, err = r.backgroundReads(ctx); err != nil {
		return res, err
	}
	before, err := scrape(ctx, r.kube)
	if err != nil {
		return res, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd := exec.CommandContext(ctx, r.plugin, "audit", "-A", "--interval", interval.String(), "--reports", "none",
		"--metrics-bind-address", fmt.Sprintf("127.0.0.1:%d", metricsPort),
		"--health-probe-bind-address", fmt.Sprintf("127.0.0.1:%d", healthPort))
	cmd.Env = r.env(r.kubeconfig)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return res, err
	}
	if err := cmd.Start(); err != nil {
		return res, fmt.Errorf("start audit: %w", err)
	}
	var (
		tail      []string
		first     metrics
		firstTime time.Time
	)
	sc := bufio.NewScanner(stderr)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for len(res.cycles) < n && sc.Scan() {
		line := sc.Text()
		tail = append(tail, line)
		if len(tail) > 10 {
			tail = tail[1:]
		}
		c, ok := parseCycleLine(line)
		if !ok {
			continue
		}
		c.rss = vmRSS(cmd.Process.Pid)
		c.heap, c.alloc, c.goroutines, err = scrapeGoRuntime(ctx, metricsURL)
		if err != nil {
			logf("audit: %v", err)
		}
		res.cycles = append(res.cycles, c)
		// The apiserver's count at the ends of the first and the last cycle: the cycles between
		// them, without the startup.
		if len(res.cycles) == 1 || len(res.cycles) == n {
			m, err := scrape(ctx, r.kube)
			if err != nil {
				return res, err
			}
			if len(res.cycles) == 1 {
				first, firstTime = m, time.Now()
			}
			if len(res.cycles) == n && n > 1 {
				res.steady, res.steadyTime = m.since(first), time.Since(firstTime)
			}
		}
		logf("audit cycle %d: %s, %d requests, RSS %s, heap in use %s, allocated %s, %.0f goroutines", len(res.cycles), c.duration.Round(time.Millisecond),
			c.requests, mib(c.rss), mib(int64(c.heap)), mib(int64(c.alloc)), c.goroutines)
	}
	if cmd.Process != nil {
		_ = cmd.Process.Signal(syscall.SIGTERM)
	}
	_, _ = io.Copy(io.Discard, stderr)
	waitErr := cmd.Wait()
	if cmd.ProcessState != nil {
		res.peakRSS = maxRSS(cmd.ProcessState)
		res.cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	if len(res.cycles) < n {
		return res, fmt.Errorf("audit stopped after %d of %d cycles (%v): %s", len(res.cycles), n, waitErr, strings.Join(tail, "\n"))
	}
	after, err := scrape(ctx, r.kube)
	if err != nil {
		return res, err
	}
	res.reads = after.since(before)
	return res, nil
}

// parseCycleLine reads the auditor's one JSON line per cycle ("scan", or "scan failed", "scan
// incomplete", "scan; reports not all written"); other lines are not cycles.
func parseCycleLine(line string) (auditCycle, bool) {
	var rec struct {
		Level    string          `json:"level"`
		Msg      string          `json:"msg"`
		Duration json.RawMessage `json:"duration"`
		Requests int64           `json:"requests"`
	}
	if err := json.Unmarshal([]byte(line), &rec); err != nil || !strings.HasPrefix(rec.Msg, "scan") {
		return auditCycle{}, false
	}
	c := auditCycle{requests: rec.Requests, failed: rec.Level == "ERROR"}
	// slog's JSON handler writes a Duration as nanoseconds; a string is read as Go's notation.
	if ns, err := strconv.ParseInt(string(rec.Duration), 10, 64); err == nil {
		c.duration = time.Duration(ns)
	} else if s, err := strconv.Unquote(string(rec.Duration)); err == nil {
		c.duration, _ = time.ParseDuration(s)
	}
	return c, true
}

// vmRSS is a process's current resident set size from /proc (0 where there is none).
func vmRSS(pid int) int64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return 0
}

// scrapeGoRuntime reads the heap in use and allocated and the goroutines from the auditor's
// /metrics.
func scrapeGoRuntime(ctx context.Context, url string) (heap, alloc, goroutines float64, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, 0, 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("scrape auditor metrics: %w", err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		switch name {
		case "go_memstats_heap_inuse_bytes":
			heap, _ = strconv.ParseFloat(value, 64)
		case "go_memstats_heap_alloc_bytes":
			alloc, _ = strconv.ParseFloat(value, 64)
		case "go_goroutines":
			goroutines, _ = strconv.ParseFloat(value, 64)
		}
	}
	return heap, alloc, goroutines, sc.Err()
}
