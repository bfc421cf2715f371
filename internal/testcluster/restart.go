package testcluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// apiserverRun is the running kube-apiserver and how it was started, so that it can be started
// again the same way.
type apiserverRun struct {
	proc *process
	bin  string
	args []string
}

// StopAPIServer stops kube-apiserver (SIGTERM, SIGKILL after a grace period) and leaves etcd and
// every other component running: clients see connections refused, as during an apiserver restart
// or a control-plane upgrade. StartAPIServer brings it back.
func (c *Cluster) StopAPIServer(t testing.TB) {
	t.Helper()
	if err := c.stopAPIServer(); err != nil {
		t.Fatal(err)
	}
}

// StartAPIServer starts kube-apiserver again after StopAPIServer, on the same address with the
// same etcd, certificates and flags, and waits until it answers /readyz: objects, the admin
// clients and every kubeconfig the cluster wrote keep working.
func (c *Cluster) StartAPIServer(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), startTimeout)
	defer cancel()
	if err := c.startAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
}

// RestartAPIServer is StopAPIServer followed by StartAPIServer.
func (c *Cluster) RestartAPIServer(t testing.TB) {
	t.Helper()
	c.StopAPIServer(t)
	c.StartAPIServer(t)
}

func (c *Cluster) stopAPIServer() error {
	c.mu.Lock()
	run := c.apiserver
	c.mu.Unlock()
	if run == nil {
		return errors.New("stop kube-apiserver: the cluster has none")
	}
	if run.proc.stopping.Load() {
		return errors.New("stop kube-apiserver: already stopped")
	}
	if run.proc.stop() {
		return fmt.Errorf("stop kube-apiserver: it had already exited: %w", run.proc.exitError())
	}
	return nil
}

// startAPIServer runs the stopped apiserver again. The port was free while it was down, so
// another process may have bound it for a moment (a free-port probe of a parallel test): that is
// retried until ctx ends.
func (c *Cluster) startAPIServer(ctx context.Context) error {
	c.mu.Lock()
	run, etcd := c.apiserver, c.etcd
	c.mu.Unlock()
	if run == nil {
		return errors.New("start kube-apiserver: the cluster has none")
	}
	if !run.proc.stopping.Load() {
		return errors.New("start kube-apiserver: already running (StopAPIServer first)")
	}
	for {
		p, err := c.start("kube-apiserver", run.bin, run.args...)
		if err != nil {
			return err
		}
		c.mu.Lock()
		c.apiserver = &apiserverRun{proc: p, bin: run.bin, args: run.args}
		c.mu.Unlock()
		err = c.waitReady(ctx, p, etcd)
		if err == nil {
			return nil
		}
		if !strings.Contains(err.Error(), "address already in use") || ctx.Err() != nil {
			return fmt.Errorf("start kube-apiserver again: %w", err)
		}
		c.logf("test cluster: %s still taken, retrying: %v", c.APIServerURL, err)
		// Counted as asked to stop: it exited, but not unexpectedly.
		p.stopping.Store(true)
		select {
		case <-ctx.Done():
			return fmt.Errorf("start kube-apiserver again: %w", ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}
