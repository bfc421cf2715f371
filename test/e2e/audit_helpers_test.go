package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/testcluster"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/audit"
)

// auditProc is `kubectl workloaddoctor audit` running as a process, its stderr log collected.
type auditProc struct {
	cmd     *exec.Cmd
	mu      sync.Mutex
	lines   []string
	metrics string // http://host:port
	probes  string
	exited  chan error
	killed  bool
}

// startAudit runs audit with kubeconfig, its servers on free loopback ports, and stops it with
// the test (SIGTERM, then it must exit 0).
func startAudit(t *testing.T, kubeconfig string, args ...string) *auditProc {
	t.Helper()
	args = append([]string{"audit", "--metrics-bind-address", "127.0.0.1:0", "--health-probe-bind-address", "127.0.0.1:0"}, args...)
	p := &auditProc{cmd: exec.Command(pluginBinary(t), args...), exited: make(chan error, 1)}
	p.cmd.Env = commandEnv(t, kubeconfig)
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start audit: %v", err)
	}
	logged := make(chan struct{})
	go func() {
		defer close(logged)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.mu.Lock()
			p.lines = append(p.lines, sc.Text())
			p.mu.Unlock()
		}
	}()
	go func() { <-logged; p.exited <- p.cmd.Wait() }()
	t.Cleanup(func() { p.stop(t) })

	eventually(t, 30*time.Second, "audit to log its addresses", func(context.Context) (bool, error) {
		for _, l := range p.log() {
			var m map[string]any
			if json.Unmarshal([]byte(l), &m) == nil && m["msg"] == "serving" {
				p.metrics, p.probes = "http://"+m["metrics"].(string), "http://"+m["probes"].(string)
				return true, nil
			}
		}
		select {
		case err := <-p.exited:
			p.exited <- err
			return false, fmt.Errorf("audit exited (%v):\n%s", err, strings.Join(p.log(), "\n"))
		default:
		}
		return false, nil
	})
	return p
}

func (p *auditProc) log() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.lines...)
}

// stop sends SIGTERM and requires a clean exit; a process already stopped is left alone.
func (p *auditProc) stop(t *testing.T) {
	t.Helper()
	if p.killed {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.exited:
		if err != nil {
			t.Errorf("audit did not exit cleanly on SIGTERM: %v\n%s", err, strings.Join(p.log(), "\n"))
		}
	case <-time.After(commandTimeout):
		_ = p.cmd.Process.Kill()
		t.Errorf("audit ignored SIGTERM")
	}
}

// kill SIGKILLs the process, as a node dying would: nothing is released.
func (p *auditProc) kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatalf("kill audit: %v", err)
	}
	<-p.exited
	p.killed = true
}

// leader reads workloaddoctor_leader.
func (s scrape) leader() bool { return strings.Contains(string(s), "\nworkloaddoctor_leader 1\n") }

func httpGet(ctx context.Context, url string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// scrape is one read of /metrics.
type scrape string

func (p *auditProc) scrape(t *testing.T) scrape {
	t.Helper()
	code, body, err := httpGet(t.Context(), p.metrics+"/metrics")
	if err != nil || code != http.StatusOK {
		t.Fatalf("GET /metrics: %d %v", code, err)
	}
	return scrape(body)
}

var scansRe = regexp.MustCompile(`(?m)^workloaddoctor_scans_total\{result="(\w+)"\} (\d+)$`)

// scans returns the cycles counted with result (success or error).
func (s scrape) scans(result string) int {
	for _, m := range scansRe.FindAllStringSubmatch(string(s), -1) {
		if m[1] == result {
			n, _ := strconv.Atoi(m[2])
			return n
		}
	}
	return 0
}

// series returns the lines of metric whose labels include every label="value" given.
func (s scrape) series(metric string, labels ...string) []string {
	var out []string
	for _, l := range strings.Split(string(s), "\n") {
		if !strings.HasPrefix(l, metric+"{") {
			continue
		}
		all := true
		for _, lv := range labels {
			all = all && strings.Contains(l, lv)
		}
		if all {
			out = append(out, l)
		}
	}
	return out
}

// withinCycles scrapes until cond holds, failing when n more cycles of result completed first:
// "within one interval" counted in cycles, not in seconds. The cycle running when the change was
// made may have read before it, so n is one more than the cycles the change may take.
func (p *auditProc) withinCycles(t *testing.T, n int, result, what string, cond func(scrape) bool) scrape {
	t.Helper()
	start := p.scrape(t).scans(result)
	var last scrape
	eventually(t, 3*time.Minute, what, func(context.Context) (bool, error) {
		last = p.scrape(t)
		if cond(last) {
			return true, nil
		}
		if last.scans(result) >= start+n {
			return false, fmt.Errorf("not so after %d more %s cycles; metrics:\n%s\nlog:\n%s", n, result,
				strings.Join(last.series("workloaddoctor_findings"), "\n"), strings.Join(p.log(), "\n"))
		}
		return false, nil
	})
	return last
}

// installReportCRDs installs the project's report CRDs of both APIs (deploy/crds).
func installReportCRDs(t *testing.T, c *testcluster.Cluster) {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(repoRoot(t), "deploy", "crds", "*.yaml"))
	if err != nil || len(paths) != 4 {
		t.Fatalf("deploy/crds: %v %v", paths, err)
	}
	c.InstallCRDs(t, paths...)
}

// auditReport returns the auditor's report in ns ("" the cluster-scoped one) of api, or nil.
func auditReport(t *testing.T, c *testcluster.Cluster, api audit.ReportAPI, ns string) *unstructured.Unstructured {
	t.Helper()
	var res dynamic.ResourceInterface = c.Dynamic().Resource(api.GVR(ns == ""))
	if ns != "" {
		res = c.Dynamic().Resource(api.GVR(false)).Namespace(ns)
	}
	got, err := res.Get(t.Context(), audit.ReportName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatalf("get report %s/%s: %v", ns, audit.ReportName, err)
	}
	return got
}

// reportResults returns the (policy, rule, result, resource name) of each result of a report.
func reportResults(u *unstructured.Unstructured) []string {
	var out []string
	items, _, _ := unstructured.NestedSlice(u.Object, "results")
	for _, it := range items {
		m, _ := it.(map[string]any)
		res, _ := m["resources"].([]any)
		name := ""
		if len(res) > 0 {
			name, _, _ = unstructured.NestedString(res[0].(map[string]any), "name")
		}
		out = append(out, fmt.Sprintf("%v %v %v %s", m["policy"], m["rule"], m["result"], name))
	}
	return out
}

// heldConfigMap leaves ConfigMap ns/held Terminating, held by a finalizer whose owner (field
// manager widget-operator) is nowhere: a stuck-terminating finding with --min-age 0s.
func heldConfigMap(t *testing.T, cs kubernetes.Interface, ns string) {
	t.Helper()
	heldAnnotatedConfigMap(t, cs, ns, nil)
}

// heldAnnotatedConfigMap is heldConfigMap with annotations on the ConfigMap. The apiserver keeps
// an object whose finalizer nobody removes, deletionTimestamp set (k8s.io/apiserver pkg/registry/rest/delete.go,
// BeforeDelete; generic/registry/store.go, updateForGracefulDeletionAndFinalizers): a
// stuck-terminating finding.
func heldAnnotatedConfigMap(t *testing.T, cs kubernetes.Interface, ns string, annotations map[string]string) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "held", Namespace: ns, Finalizers: []string{"example.com/protect"}, Annotations: annotations}}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(t.Context(), cm, metav1.CreateOptions{FieldManager: "widget-operator"}); err != nil {
		t.Fatal(err)
	}
	if err := cs.CoreV1().ConfigMaps(ns).Delete(t.Context(), "held", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// releaseConfigMap removes the finalizer, as its owner would: the ConfigMap goes away.
func releaseConfigMap(t *testing.T, cs kubernetes.Interface, ns string) {
	t.Helper()
	patch := []byte(`{"metadata":{"finalizers":null}}`)
	if _, err := cs.CoreV1().ConfigMaps(ns).Patch(t.Context(), "held", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}
