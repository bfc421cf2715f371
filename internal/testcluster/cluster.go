// Package testcluster runs a real Kubernetes control plane (etcd, kube-apiserver and optionally
// kube-controller-manager, kube-scheduler and kwok) for tests, from the binaries `make tools` builds.
//
// Every cluster lives in its own temporary directory on free loopback ports, so tests may run
// clusters in parallel; t.Cleanup stops every process, and a killed test binary takes them with it.
package testcluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// startTimeout bounds how long Start waits for etcd and the apiserver to become ready.
const startTimeout = 60 * time.Second

// Options selects the components of a cluster. The zero value is etcd plus kube-apiserver only.
type Options struct {
	// ControllerManager runs kube-controller-manager with all default controllers.
	ControllerManager bool
	// NodeMonitorGracePeriod sets kcm's --node-monitor-grace-period (default 40s upstream), the time
	// a node may stop heartbeating before it turns NotReady. Tests stopping kwok want it short.
	NodeMonitorGracePeriod time.Duration
	// Scheduler runs kube-scheduler.
	Scheduler bool
	// Kwok runs a kwok controller that plays kubelet for fake nodes.
	Kwok *KwokOptions
	// FeatureGates is passed to the apiserver as --feature-gates.
	FeatureGates string
	// APIServerBinary overrides the apiserver, e.g. filepath.Join(ToolsDir(), "v1.32.2", "kube-apiserver").
	APIServerBinary string
	// ExtraAPIServerArgs are appended to the apiserver's flags (a later flag wins).
	ExtraAPIServerArgs []string
	// ExtraEtcdArgs are appended to etcd's flags, e.g. a larger --quota-backend-bytes for a benchmark.
	ExtraEtcdArgs []string
	// Dir is where New keeps the cluster's state (created if missing) instead of a temporary
	// directory; Stop leaves it. Start ignores it (tests use t.TempDir).
	Dir string
}

// KwokOptions selects which nodes kwok manages: all of them, or those matching an annotation or a
// label selector.
type KwokOptions struct {
	ManageAllNodes         bool
	NodeAnnotationSelector string // e.g. "kwok.x-k8s.io/node=fake"
	// NodeLabelSelector is evaluated by the apiserver: a node whose label stops matching leaves
	// kwok's watch, and kwok stops renewing its Lease (a kubelet that died). Taking an annotation
	// off does not do that: kwok filters annotations itself and keeps the Lease.
	NodeLabelSelector string
	// Binary overrides the kwok binary, e.g. to run another kwok version.
	Binary    string
	ExtraArgs []string
}

// Cluster is a running control plane.
type Cluster struct {
	// Dir holds the certificates, kubeconfigs, etcd data and one <component>.log per component.
	Dir string
	// Kubeconfig is the admin (system:masters) kubeconfig.
	Kubeconfig string
	// APIServerURL is https://127.0.0.1:<port>.
	APIServerURL string

	t          testing.TB // nil for a cluster from New
	logf       func(format string, args ...any)
	removeDir  bool // Stop removes Dir (New made it)
	opts       Options
	ca         *ca
	caFile     string
	restConfig *rest.Config
	clientset  kubernetes.Interface
	dynamic    dynamic.Interface
	spawner    *spawner
	env        []string

	mu       sync.Mutex
	procs    []*process // every process started, in start order
	kwok     *process
	stopOnce sync.Once
}

// Start runs a cluster for the test and registers its teardown with t.Cleanup. It fails the test
// if a binary is missing or the control plane does not become ready within a minute.
func Start(t testing.TB, opts Options) *Cluster {
	t.Helper()
	apiserver := opts.APIServerBinary
	if apiserver == "" {
		apiserver = Binary(t, "kube-apiserver")
	}
	requireExecutable(t, apiserver)
	etcd := Binary(t, "etcd")
	c := newCluster(t.TempDir(), opts, t.Logf)
	c.t = t
	t.Cleanup(c.Stop) // before anything starts, so a failing Start still cleans up

	began := time.Now()
	if err := c.boot(t.Context(), etcd, apiserver); err != nil {
		t.Fatalf("start test cluster: %v", err)
	}
	if opts.Kwok != nil {
		c.StartKwok(t)
	}
	t.Logf("test cluster %s up in %s (dir %s)", c.APIServerURL, time.Since(began).Round(time.Millisecond), c.Dir)
	return c
}

// New runs a cluster outside a test (the benchmark in bench/, the demo in hack/demo): etcd,
// kube-apiserver, and the controller manager, scheduler and kwok if opts asks for them. Progress
// goes to logf (nil discards it). The caller must call Stop, which also removes the cluster's
// directory unless opts.Dir named it. Its processes die with the calling process, even on SIGKILL.
func New(ctx context.Context, opts Options, logf func(format string, args ...any)) (*Cluster, error) {
	apiserver := opts.APIServerBinary
	if apiserver == "" {
		var err error
		if apiserver, err = LookupBinary("kube-apiserver"); err != nil {
			return nil, err
		}
	}
	if err := checkExecutable(apiserver); err != nil {
		return nil, err
	}
	etcd, err := LookupBinary("etcd")
	if err != nil {
		return nil, err
	}
	dir, removeDir := opts.Dir, false
	if dir == "" {
		if dir, err = os.MkdirTemp("", "testcluster-"); err != nil {
			return nil, fmt.Errorf("start cluster: %w", err)
		}
		removeDir = true
	} else {
		if dir, err = filepath.Abs(dir); err != nil {
			return nil, fmt.Errorf("start cluster: %w", err)
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("start cluster: %w", err)
		}
	}
	if logf == nil {
		logf = func(string, ...any) {}
	}
	c := newCluster(dir, opts, logf)
	c.removeDir = removeDir
	if err := c.boot(ctx, etcd, apiserver); err != nil {
		c.Stop()
		return nil, fmt.Errorf("start cluster: %w", err)
	}
	if opts.Kwok != nil {
		if err := c.startKwok(); err != nil {
			c.Stop()
			return nil, fmt.Errorf("start cluster: %w", err)
		}
	}
	return c, nil
}

func newCluster(dir string, opts Options, logf func(format string, args ...any)) *Cluster {
	c := &Cluster{Dir: dir, opts: opts, logf: logf, spawner: newSpawner()}
	// HOME points into the cluster dir so no component reads or writes the user's dotfiles
	// (kwok would load ~/.kwok/kwok.yaml).
	c.env = append(os.Environ(), "HOME="+c.Dir)
	return c
}

// boot starts etcd, the apiserver and the optional controller manager and scheduler, waiting at
// most startTimeout for the control plane to become ready.
func (c *Cluster) boot(ctx context.Context, etcd, apiserver string) error {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	for attempt := 1; ; attempt++ {
		err := c.startControlPlane(ctx, etcd, apiserver)
		if err == nil {
			break
		}
		// Free ports are released before the components bind them, so a parallel test can take
		// one in between: start over on fresh ports.
		if attempt < 3 && strings.Contains(err.Error(), "address already in use") {
			c.logf("test cluster: port taken, retrying: %v", err)
			c.mu.Lock()
			procs := c.procs
			c.mu.Unlock()
			stopProcesses(procs)
			continue
		}
		return err
	}
	if c.opts.ControllerManager {
		if _, err := c.startControllerManager(); err != nil {
			return err
		}
	}
	if c.opts.Scheduler {
		if _, err := c.startScheduler(); err != nil {
			return err
		}
	}
	return nil
}

func (c *Cluster) startControlPlane(ctx context.Context, etcdBin, apiserverBin string) error {
	ports, err := freePorts(3)
	if err != nil {
		return err
	}
	etcdClient, etcdPeer, apiPort := ports[0], ports[1], ports[2]
	c.APIServerURL = "https://127.0.0.1:" + strconv.Itoa(apiPort)

	if err := c.writePKI(); err != nil {
		return err
	}

	dataDir := filepath.Join(c.Dir, "etcd")
	if err := os.RemoveAll(dataDir); err != nil { // left by an attempt on other ports
		return fmt.Errorf("clean etcd data dir: %w", err)
	}
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(etcdClient)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(etcdPeer)
	etcd, err := c.start("etcd", etcdBin, append([]string{
		"--name=testcluster",
		"--data-dir=" + dataDir,
		"--listen-client-urls=" + etcdURL,
		"--advertise-client-urls=" + etcdURL,
		"--listen-peer-urls=" + peerURL,
		"--initial-advertise-peer-urls=" + peerURL,
		"--initial-cluster=testcluster=" + peerURL,
		"--unsafe-no-fsync", // test data is thrown away; fsync dominates write latency
		"--log-level=warn",
	}, c.opts.ExtraEtcdArgs...)...,
	)
	if err != nil {
		return err
	}
	if err := waitHTTPOK(ctx, etcd, etcdURL+"/health"); err != nil {
		return fmt.Errorf("wait for etcd: %w", err)
	}

	args := []string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(apiPort),
		"--cert-dir=" + c.Dir,
		"--tls-cert-file=" + c.path("apiserver.crt"),
		"--tls-private-key-file=" + c.path("apiserver.key"),
		"--client-ca-file=" + c.caFile,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + c.path("sa.pub"),
		"--service-account-signing-key-file=" + c.path("sa.key"),
		"--service-cluster-ip-range=10.96.0.0/16",
		"--authorization-mode=RBAC",
		// Without the ServiceAccount plugin pods are admitted before kcm created the namespace's
		// default ServiceAccount, so tests do not race the serviceaccount controller.
		"--disable-admission-plugins=ServiceAccount",
		"--allow-privileged=true",
		// The endpoint reconciler would publish 127.0.0.1 as the kubernetes Service endpoint, which
		// validation rejects; nothing in the tests talks to the apiserver through that Service.
		"--endpoint-reconciler-type=none",
		"--profiling=false",
	}
	if c.opts.FeatureGates != "" {
		args = append(args, "--feature-gates="+c.opts.FeatureGates)
	}
	args = append(args, c.opts.ExtraAPIServerArgs...)
	apiserver, err := c.start("kube-apiserver", apiserverBin, args...)
	if err != nil {
		return err
	}
	if err := c.newClients(); err != nil {
		return err
	}
	return c.waitReady(ctx, apiserver, etcd)
}

func (c *Cluster) writePKI() error {
	var err error
	if c.ca, err = newCA(); err != nil {
		return err
	}
	c.caFile = c.path("ca.crt")
	servingCert, servingKey, err := c.ca.issue("kube-apiserver", nil, true)
	if err != nil {
		return err
	}
	saKey, saPub, err := newServiceAccountKeys()
	if err != nil {
		return err
	}
	if err := writeFiles(map[string][]byte{
		c.caFile:                c.ca.certPEM,
		c.path("apiserver.crt"): servingCert,
		c.path("apiserver.key"): servingKey,
		c.path("sa.key"):        saKey,
		c.path("sa.pub"):        saPub,
	}); err != nil {
		return err
	}
	c.Kubeconfig = c.path("admin.kubeconfig")
	return c.writeKubeconfig(c.Kubeconfig, "", "admin", "system:masters")
}

func (c *Cluster) newClients() error {
	certPEM, keyPEM, err := c.ca.issue("testcluster-admin", []string{"system:masters"}, false)
	if err != nil {
		return err
	}
	c.restConfig = &rest.Config{
		Host: c.APIServerURL,
		TLSClientConfig: rest.TLSClientConfig{
			CAData:   c.ca.certPEM,
			CertData: certPEM,
			KeyData:  keyPEM,
		},
		// Tests create and poll many objects; the client-side default (5 QPS) only slows them down.
		QPS:   200,
		Burst: 400,
	}
	if c.clientset, err = kubernetes.NewForConfig(c.restConfig); err != nil {
		return fmt.Errorf("admin clientset: %w", err)
	}
	if c.dynamic, err = dynamic.NewForConfig(c.restConfig); err != nil {
		return fmt.Errorf("admin dynamic client: %w", err)
	}
	return nil
}

// waitReady polls /readyz and then waits for the default namespace, which the apiserver's
// bootstrap controller creates shortly after it reports ready.
func (c *Cluster) waitReady(ctx context.Context, procs ...*process) error {
	var last error
	err := wait.PollUntilContextCancel(ctx, 200*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		for _, p := range procs {
			if p.hasExited() {
				return false, p.exitError()
			}
		}
		if _, err := c.clientset.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx); err != nil {
			last = fmt.Errorf("readyz: %w", err)
			return false, nil
		}
		if _, err := c.clientset.CoreV1().Namespaces().Get(ctx, metav1.NamespaceDefault, metav1.GetOptions{}); err != nil {
			last = fmt.Errorf("get namespace default: %w", err)
			return false, nil
		}
		return true, nil
	})
	if err != nil && last != nil && errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("wait for kube-apiserver: %w (last: %v)", err, last)
	}
	if err != nil {
		return fmt.Errorf("wait for kube-apiserver: %w", err)
	}
	return nil
}

func (c *Cluster) startControllerManager() (*process, error) {
	args := []string{
		"--kubeconfig=" + c.Kubeconfig,
		"--leader-elect=false",
		"--secure-port=0", // no serving: nothing scrapes it, and parallel clusters would collide on 10257
		"--service-account-private-key-file=" + c.path("sa.key"),
		"--root-ca-file=" + c.caFile,
		"--use-service-account-credentials=false",
		"--controllers=*",
	}
	if g := c.opts.NodeMonitorGracePeriod; g > 0 {
		// Check nodes often enough that a short grace period is noticed promptly.
		args = append(args, "--node-monitor-grace-period="+g.String(), "--node-monitor-period=1s")
	}
	bin, err := LookupBinary("kube-controller-manager")
	if err != nil {
		return nil, err
	}
	return c.start("kube-controller-manager", bin, args...)
}

func (c *Cluster) startScheduler() (*process, error) {
	bin, err := LookupBinary("kube-scheduler")
	if err != nil {
		return nil, err
	}
	return c.start("kube-scheduler", bin,
		"--kubeconfig="+c.Kubeconfig,
		"--leader-elect=false",
		"--secure-port=0",
	)
}

// StartKwok starts kwok with the cluster's KwokOptions (all nodes if Options.Kwok was nil).
// Together with StopKwok it simulates a kubelet that dies and comes back.
func (c *Cluster) StartKwok(t testing.TB) {
	t.Helper()
	if err := c.startKwok(); err != nil {
		t.Fatal(err)
	}
}

// startKwok is StartKwok for callers with or without a test.
func (c *Cluster) startKwok() error {
	c.mu.Lock()
	running := c.kwok != nil && !c.kwok.hasExited()
	c.mu.Unlock()
	if running {
		return errors.New("start kwok: already running")
	}
	o := c.opts.Kwok
	if o == nil {
		o = &KwokOptions{ManageAllNodes: true}
	}
	bin := o.Binary
	if bin == "" {
		var err error
		if bin, err = LookupBinary("kwok"); err != nil {
			return err
		}
	}
	if err := checkExecutable(bin); err != nil {
		return err
	}
	// kwok opens no port unless --server-address or --node-port is set, so none is given here.
	args := []string{"--kubeconfig=" + c.Kubeconfig}
	switch {
	case o.NodeAnnotationSelector != "" || o.NodeLabelSelector != "":
		args = append(args, "--manage-all-nodes=false")
		if o.NodeAnnotationSelector != "" {
			args = append(args, "--manage-nodes-with-annotation-selector="+o.NodeAnnotationSelector)
		}
		if o.NodeLabelSelector != "" {
			args = append(args, "--manage-nodes-with-label-selector="+o.NodeLabelSelector)
		}
	default:
		args = append(args, "--manage-all-nodes=true")
	}
	if g := c.opts.NodeMonitorGracePeriod; g > 0 {
		// kwok renews node leases every quarter of their duration (40s by default, so every 10s);
		// a short grace period needs faster renewals or a live node flaps NotReady.
		args = append(args, "--node-lease-duration-seconds="+strconv.Itoa(max(1, int(g.Seconds())/2)))
	}
	args = append(args, o.ExtraArgs...)
	p, err := c.start("kwok", bin, args...)
	if err != nil {
		return fmt.Errorf("start kwok: %w", err)
	}
	c.mu.Lock()
	c.kwok = p
	c.mu.Unlock()
	return nil
}

// StopKwok stops kwok; the nodes it managed stop heartbeating, like nodes whose kubelet died.
func (c *Cluster) StopKwok(t testing.TB) {
	t.Helper()
	c.mu.Lock()
	p := c.kwok
	c.mu.Unlock()
	if p == nil {
		t.Fatalf("stop kwok: not running")
	}
	if p.stop() {
		t.Errorf("stop kwok: it had already exited: %v", p.exitError())
	}
}

// start launches one component and records it for teardown.
func (c *Cluster) start(name, bin string, args ...string) (*process, error) {
	p, err := startProcess(c.spawner, c.Dir, name, bin, args, c.env)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.procs = append(c.procs, p)
	c.mu.Unlock()
	return p, nil
}

// Stop tears the cluster down: components first, then the apiserver, then etcd, each with SIGTERM
// and SIGKILL after a grace period. It is idempotent and registered with t.Cleanup by Start; a
// component that died by itself fails the test, and a failed test gets the tail of every log.
func (c *Cluster) Stop() {
	c.stopOnce.Do(func() {
		c.mu.Lock()
		procs := append([]*process(nil), c.procs...)
		c.mu.Unlock()

		early := stopProcesses(procs)
		c.spawner.close()

		for _, p := range early {
			if c.t != nil {
				c.t.Errorf("test cluster: %s (pid %d) exited before teardown: %v", p.name, p.pid(), p.waitErr)
			} else {
				c.logf("test cluster: %s (pid %d) exited before teardown: %v; logs kept in %s", p.name, p.pid(), p.waitErr, c.Dir)
			}
		}
		if c.removeDir && len(early) == 0 {
			if err := os.RemoveAll(c.Dir); err != nil {
				c.logf("test cluster: remove %s: %v", c.Dir, err)
			}
		}
		if c.t != nil && c.t.Failed() {
			seen := map[string]bool{}
			for _, p := range procs {
				if !seen[p.logPath] {
					seen[p.logPath] = true
					c.t.Logf("--- last %d lines of %s ---\n%s", logTailLines, p.logPath, tail(p.logPath, logTailLines))
				}
			}
		}
	})
}

// stopProcesses stops controllers first so they do not log errors about a vanished apiserver,
// then apiservers, then etcd; each tier in parallel. It returns the processes that had exited
// before they were asked to.
func stopProcesses(procs []*process) (early []*process) {
	tier := func(p *process) int {
		switch p.name {
		case "kube-apiserver":
			return 1
		case "etcd":
			return 2
		default:
			return 0
		}
	}
	var mu sync.Mutex
	for t := range 3 {
		var wg sync.WaitGroup
		for _, p := range procs {
			if tier(p) != t {
				continue
			}
			wg.Go(func() {
				if p.stop() {
					mu.Lock()
					early = append(early, p)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
	}
	return early
}

// Processes returns the PIDs of every process the cluster started, including stopped ones.
func (c *Cluster) Processes() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	pids := make([]int, 0, len(c.procs))
	for _, p := range c.procs {
		pids = append(pids, p.pid())
	}
	return pids
}

// RESTConfig returns a copy of the admin client configuration.
func (c *Cluster) RESTConfig() *rest.Config { return rest.CopyConfig(c.restConfig) }

// Clientset returns the admin clientset.
func (c *Cluster) Clientset() kubernetes.Interface { return c.clientset }

// Dynamic returns the admin dynamic client.
func (c *Cluster) Dynamic() dynamic.Interface { return c.dynamic }

// UserKubeconfig writes a kubeconfig authenticating as user (with groups) by a client certificate
// the cluster CA signs, and returns its path. The user has no rights until the test grants some.
func (c *Cluster) UserKubeconfig(t testing.TB, user string, groups ...string) string {
	t.Helper()
	return c.UserKubeconfigInNamespace(t, "", user, groups...)
}

// UserKubeconfigInNamespace is UserKubeconfig with the context's default namespace set, as kubectl
// and the plugin read it when -n is not given. UserKubeconfigInNamespace(t, ns, "admin",
// "system:masters") gives an admin kubeconfig in ns.
func (c *Cluster) UserKubeconfigInNamespace(t testing.TB, namespace, user string, groups ...string) string {
	t.Helper()
	name := sanitize(user)
	if namespace != "" {
		name += "-" + sanitize(namespace)
	}
	path := c.path(name + ".kubeconfig")
	for i := 1; fileExists(path); i++ {
		path = c.path(fmt.Sprintf("%s-%d.kubeconfig", name, i))
	}
	if err := c.writeKubeconfig(path, namespace, user, groups...); err != nil {
		t.Fatalf("write kubeconfig for %s: %v", user, err)
	}
	return path
}

func (c *Cluster) path(name string) string { return filepath.Join(c.Dir, name) }

// freePorts reserves n distinct loopback ports. They are released before use, so another process
// could grab one in between; on a test machine that is rare enough to accept.
func freePorts(n int) ([]int, error) {
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("reserve a loopback port: %w", err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// waitHTTPOK polls url until it answers 200, failing early if p exits.
func waitHTTPOK(ctx context.Context, p *process, url string) error {
	client := &http.Client{Timeout: 2 * time.Second}
	return wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		if p.hasExited() {
			return false, p.exitError()
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
			return r
		}
		return '_'
	}, s)
}
