//go:build linux

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/scenario"
	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/testcluster"
)

// logf writes a progress line for up to show.
func logf(format string, args ...any) {
	fmt.Printf("%s %s%s\n", time.Now().Format("15:04:05"), progressPrefix, fmt.Sprintf(format, args...))
}

// serve runs the demo cluster and the scenario until SIGTERM; up reads its progress from the log.
func serve(dir string) (err error) {
	if err := os.WriteFile(filepath.Join(dir, pidFile), []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	var c *testcluster.Cluster
	defer func() {
		// up waits for this file; the cluster stops after it is written.
		if err != nil {
			_ = os.WriteFile(filepath.Join(dir, failedFile), []byte(err.Error()+"\n"), 0o600)
		}
		if c != nil {
			c.Stop()
		}
	}()

	opts, files, err := scenario.ClusterOptions(filepath.Join(dir, "scenario"))
	if err != nil {
		return err
	}
	opts.Dir = filepath.Join(dir, "cluster")
	detail := func(format string, args ...any) { fmt.Printf(time.Now().Format("15:04:05 ")+format+"\n", args...) }
	logf("starting etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok")
	if c, err = testcluster.New(ctx, opts, detail); err != nil {
		return err
	}
	var pids []string
	for _, p := range c.Processes() {
		pids = append(pids, strconv.Itoa(p))
	}
	if err := os.WriteFile(filepath.Join(dir, pidsFile), []byte(strings.Join(pids, " ")+"\n"), 0o600); err != nil {
		return err
	}
	raw, err := os.ReadFile(c.Kubeconfig)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, kubeconfig), raw, 0o600); err != nil {
		return err
	}
	logf("cluster up at %s; installing the OpenKruise CRDs", c.APIServerURL)
	crds, err := testcluster.KruiseCRDFiles()
	if err != nil {
		return err
	}
	if err := c.InstallCRDFiles(ctx, crds...); err != nil {
		return err
	}
	shop, err := scenario.Build(ctx, scenario.Env{Kube: c.Clientset(), Dynamic: c.Dynamic(), Files: files,
		Logf: func(format string, args ...any) {
			msg := fmt.Sprintf(format, args...)
			if strings.HasPrefix(msg, "[") {
				logf("%s", msg)
			} else {
				detail("%s", msg)
			}
		}})
	if err != nil {
		return err
	}
	raw, err = json.MarshalIndent(shop, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, scenarioFile), raw, 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, readyFile), []byte(time.Now().Format(time.RFC3339)+"\n"), 0o600); err != nil {
		return err
	}
	logf("the shop is up, and broken")
	<-ctx.Done()
	detail("stopping the demo cluster")
	return nil
}
