package testcluster

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

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
	c.mu.Lock()
	// Kept so that StartAPIServer runs the same apiserver again (restart.go).
	c.apiserver, c.etcd = &apiserverRun{proc: apiserver, bin: apiserverBin, args: args}, etcd
	c.mu.Unlock()
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
