package testcluster

import (
	"errors"
	"fmt"
	"strconv"
	"testing"
)

// KwokOptions selects which nodes kwok manages: all of them, or those matching an annotation or a
// label selector.
type KwokOptions struct {
	ManageAllNodes         bool
	NodeAnnotationSelector string // e.g. "kwok.x-k8s.io/node=fake"
	// NodeLabelSelector is evaluated by the apiserver: a node whose label stops matching leaves
	// kwok's watch, and kwok stops renewing its Lease (a kubelet that died). Taking an annotation
	// off does not do that: kwok filters annotations itself and keeps the Lease.
	NodeLabelSelector string
	// ServeKubeletAPI has kwok serve the kubelet API (pods/log, for a ClusterLogs document passed
	// with --config in ExtraArgs) on a free loopback port that every node it manages advertises.
	ServeKubeletAPI bool
	// Binary overrides the kwok binary, e.g. to run another kwok version.
	Binary    string
	ExtraArgs []string
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
	args, err := c.kwokArgs(o)
	if err != nil {
		return fmt.Errorf("start kwok: %w", err)
	}
	p, err := c.start("kwok", bin, args...)
	if err != nil {
		return fmt.Errorf("start kwok: %w", err)
	}
	c.mu.Lock()
	c.kwok = p
	c.mu.Unlock()
	return nil
}

// kwokArgs are kwok's flags for o. kwok opens no port unless asked to serve the kubelet API.
func (c *Cluster) kwokArgs(o *KwokOptions) ([]string, error) {
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
	if o.ServeKubeletAPI {
		serving, err := c.kubeletAPIArgs()
		if err != nil {
			return nil, err
		}
		args = append(args, serving...)
	}
	return append(args, o.ExtraArgs...), nil
}

// kubeletAPIArgs are the flags that serve kwok's kubelet API on a loopback port, the same one for
// every kwok this cluster starts. The apiserver reaches it at the nodes' --node-ip and
// --node-port, and does not verify kubelet certificates without --kubelet-certificate-authority.
func (c *Cluster) kubeletAPIArgs() ([]string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.kubeletAPI != nil {
		return c.kubeletAPI, nil
	}
	cert, key, err := c.writeServingCert("kwok")
	if err != nil {
		return nil, err
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	p := strconv.Itoa(port)
	c.kubeletAPI = []string{"--server-address=127.0.0.1:" + p, "--node-ip=127.0.0.1", "--node-port=" + p,
		"--tls-cert-file=" + cert, "--tls-private-key-file=" + key}
	return c.kubeletAPI, nil
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
