// Package testcluster runs a real Kubernetes control plane (etcd, kube-apiserver and optionally
// kube-controller-manager, kube-scheduler and kwok) for tests, from the binaries `make tools` builds.
//
// Every cluster lives in its own temporary directory on free loopback ports, so tests may run
// clusters in parallel; t.Cleanup stops every process, and a killed test binary takes them with it.
package testcluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

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

	mu    sync.Mutex
	procs []*process // every process started, in start order
	kwok  *process
	// apiserver and etcd are the running control plane, for StopAPIServer and StartAPIServer.
	apiserver *apiserverRun
	etcd      *process
	// kubeletAPI are the serving flags of kwok's kubelet API, kept so a restarted kwok serves on
	// the port its nodes advertise.
	kubeletAPI []string
	stopOnce   sync.Once
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

// RESTConfig returns a copy of the admin client configuration.
func (c *Cluster) RESTConfig() *rest.Config { return rest.CopyConfig(c.restConfig) }

// Clientset returns the admin clientset.
func (c *Cluster) Clientset() kubernetes.Interface { return c.clientset }

// Dynamic returns the admin dynamic client.
func (c *Cluster) Dynamic() dynamic.Interface { return c.dynamic }

func (c *Cluster) path(name string) string { return filepath.Join(c.Dir, name) }
