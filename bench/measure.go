package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// runner runs the measured commands against one cluster.
type runner struct {
	kube       kubernetes.Interface
	restConfig *rest.Config
	kubeconfig string
	kubectl    string
	plugin     string
	// compare is the second plugin binary of -compare-plugin; "" when none.
	compare string
	home    string
	// rawKubeconfig is kubeconfig with compression disabled, to count uncompressed bytes.
	rawKubeconfig string
	// baselineLimit caps the baseline's address space (bytes, 0: none), so a kubectl that needs
	// more memory than the machine has fails by itself instead of pushing it into the OOM killer.
	baselineLimit int64
}

// command runs bin once with stdout to the given file (nil: the null device) and returns its wall time, CPU time, peak
// RSS and the API reads it caused.
func (r *runner) command(ctx context.Context, stdout *os.File, kubeconfig, bin string, args ...string) (sample, error) {
	before, err := scrape(ctx, r.kube)
	if err != nil {
		return sample{}, err
	}
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = r.env(kubeconfig)
	cmd.Stderr = &stderr
	if stdout != nil {
		cmd.Stdout = stdout
	}
	began := time.Now()
	err = cmd.Run()
	wall := time.Since(began)
	s := sample{wall: wall}
	if cmd.ProcessState != nil {
		s.exit = cmd.ProcessState.ExitCode()
		s.maxRSS = maxRSS(cmd.ProcessState)
		s.cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	if err != nil && cmd.ProcessState == nil {
		return s, fmt.Errorf("run %s: %w", bin, err)
	}
	after, err := scrape(ctx, r.kube)
	if err != nil {
		return s, err
	}
	s.reads = after.since(before)
	if stderr.Len() > 0 && s.exit != 0 && s.exit != 2 {
		return s, fmt.Errorf("%s %s: exit %d: %s", bin, strings.Join(args, " "), s.exit, lastLines(stderr.String(), 10))
	}
	return s, nil
}

// env is a measured command's environment: this process's, with the cluster's kubeconfig, a
// private HOME, and without the control plane's runtime tuning.
func (r *runner) env(kubeconfig string) []string {
	env := []string{"KUBECONFIG=" + kubeconfig, "HOME=" + r.home, "NO_COLOR=1"}
	for _, kv := range os.Environ() {
		switch k, _, _ := strings.Cut(kv, "="); k {
		case "KUBECONFIG", "HOME", "NO_COLOR", "GOGC", "GOMEMLIMIT", "GODEBUG":
			// Set above, or tuning meant for the control plane only.
		default:
			env = append(env, kv)
		}
	}
	return env
}

// baseline is the command a user would type instead of the scan.
func (r *runner) baseline(ctx context.Context) (sample, error) {
	bin, args := r.kubectl, []string{"get", "pods", "-A", "-o", "json"}
	if r.baselineLimit > 0 {
		prlimit, err := exec.LookPath("prlimit")
		if err != nil {
			return sample{}, fmt.Errorf("-baseline-limit needs prlimit (util-linux): %w", err)
		}
		bin, args = prlimit, append([]string{"--as=" + strconv.FormatInt(r.baselineLimit, 10), "--", r.kubectl}, args...)
	}
	s, err := r.command(ctx, nil, r.kubeconfig, bin, args...)
	if err == nil && s.exit != 0 {
		if r.baselineLimit > 0 {
			s.failed = true // out of address space under the cap; reported as such
			return s, nil
		}
		err = fmt.Errorf("kubectl get pods exited %d", s.exit)
	}
	return s, err
}

// scan runs the plugin, its report to out (nil: discarded).
func (r *runner) scan(ctx context.Context, out *os.File, extra ...string) (sample, error) {
	return r.scanWith(ctx, r.plugin, out, r.kubeconfig, extra...)
}

// again runs a measured command once more when it failed: on a loaded machine the apiserver
// sometimes resets the stream of a 100k-pod list (INTERNAL_ERROR), and an hour of seeding should
// not be lost to one such run. Both attempts are logged; the second's figures are kept.
func again(what string, run func() (sample, error)) (sample, error) {
	s, err := run()
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return s, err
	}
	logf("%s failed, running it again: %v", what, err)
	return run()
}

// scanCompared runs the -compare-plugin binary the same way.
func (r *runner) scanCompared(ctx context.Context, out *os.File) (sample, error) {
	return r.scanWith(ctx, r.compare, out, r.kubeconfig)
}

// scanRaw runs the scan without gzip (disable-compression in its kubeconfig, as --disable-compression), so the
// apiserver's byte counts are the uncompressed payload.
func (r *runner) scanRaw(ctx context.Context) (sample, error) {
	return r.scanWith(ctx, r.plugin, nil, r.rawKubeconfig)
}

// scanWith runs bin's `scan -A -o json` with kubeconfig; exit 2 (findings at or above --fail-on) is a
// successful scan.
func (r *runner) scanWith(ctx context.Context, bin string, out *os.File, kubeconfig string, extra ...string) (sample, error) {
	s, err := r.command(ctx, out, kubeconfig, bin, append([]string{"scan", "-A", "-o", "json"}, extra...)...)
	if err == nil && s.exit != 0 && s.exit != 2 {
		err = fmt.Errorf("scan exited %d", s.exit)
	}
	return s, err
}

// baselineRawBytes is the size of every pod in JSON without gzip: what kubectl's pages add up to
// when compression is off, read in one LIST and thrown away.
func (r *runner) baselineRawBytes(ctx context.Context) (int64, error) {
	cfg := rest.CopyConfig(r.restConfig)
	cfg.DisableCompression = true
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(cfg.Host, "/")+"/api/v1/pods", nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return 0, fmt.Errorf("list pods in JSON: %w", err)
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("list pods in JSON: %s", resp.Status)
	}
	return n, err
}

// writeRawKubeconfig writes a copy of kubeconfig with compression disabled for every cluster.
func writeRawKubeconfig(kubeconfig, path string) error {
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		return err
	}
	for _, c := range cfg.Clusters {
		c.DisableCompression = true
	}
	return clientcmd.WriteToFile(*cfg, path)
}

// checkIDs returns the IDs of the plugin's checks.
func (r *runner) checkIDs(ctx context.Context) ([]string, error) {
	out, err := exec.CommandContext(ctx, r.plugin, "checks", "-o", "json").Output()
	if err != nil {
		return nil, fmt.Errorf("list checks: %w", err)
	}
	var doc struct {
		Checks []struct {
			ID string `json:"id"`
		} `json:"checks"`
	}
	if err := json.Unmarshal(out, &doc); err != nil {
		return nil, fmt.Errorf("decode checks: %w", err)
	}
	var ids []string
	for _, c := range doc.Checks {
		ids = append(ids, c.ID)
	}
	return ids, nil
}

// floor is one LIST of every pod, metadata-only, in protobuf, unpaginated and uncompressed, its
// body read and thrown away: the server's share of any pod scan, as
// `curl -H 'Accept: application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1' $APISERVER/api/v1/pods`
// would measure it.
//
// With gzip, the same LIST with `Accept-Encoding: gzip`, its compressed body read and thrown
// away: the server's share including the compression kubectl and the plugin ask for.
func (r *runner) floor(ctx context.Context, gzip bool) (sample, error) {
	cfg := rest.CopyConfig(r.restConfig)
	cfg.DisableCompression = true
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		return sample{}, fmt.Errorf("floor transport: %w", err)
	}
	before, err := scrape(ctx, r.kube)
	if err != nil {
		return sample{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(cfg.Host, "/")+"/api/v1/pods", nil)
	if err != nil {
		return sample{}, err
	}
	req.Header.Set("Accept", "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1")
	if gzip {
		// Set by hand, so the transport leaves the body compressed.
		req.Header.Set("Accept-Encoding", "gzip")
	}
	began := time.Now()
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return sample{}, fmt.Errorf("floor list: %w", err)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	wall := time.Since(began)
	if err != nil {
		return sample{}, fmt.Errorf("floor list: read body: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return sample{}, fmt.Errorf("floor list: %s", resp.Status)
	}
	after, err := scrape(ctx, r.kube)
	if err != nil {
		return sample{}, err
	}
	s := sample{wall: wall, reads: after.since(before)}
	// The client's count is exact; the server's should agree.
	s.reads.bytes, s.reads.podBytes = n, n
	return s, nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// median returns the median of xs by key (the lower middle for an even count).
func median[T any](xs []T, key func(T) float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	vs := make([]float64, len(xs))
	for i, x := range xs {
		vs[i] = key(x)
	}
	sort.Float64s(vs)
	return vs[(len(vs)-1)/2]
}
