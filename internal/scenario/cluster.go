package scenario

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/scenario/kruisemanager"
	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/scenario/kubelet"
	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/testcluster"
)

// NodeMonitorGracePeriod is kube-controller-manager's --node-monitor-grace-period in the scenario
// cluster: a node whose Lease is not renewed for this long turns Ready=Unknown (40s upstream).
const NodeMonitorGracePeriod = 20 * time.Second

// Files are the files ClusterOptions writes next to the cluster.
type Files struct {
	// ManagerLog is the kruise-manager container's log, which kwok serves; Build's manager writes it.
	ManagerLog string
}

// ClusterOptions returns the cluster the scenario needs: kube-controller-manager (node
// lifecycle, PodGC, namespace and garbage collector, Deployments), kube-scheduler, and kwok
// playing the kubelet of every node labelled kubelet.NodeLabel=kubelet.NodeLabelValue, serving
// pods/log. It writes kwok's configuration into dir.
func ClusterOptions(dir string) (testcluster.Options, Files, error) {
	var files Files
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return testcluster.Options{}, files, fmt.Errorf("scenario files: %w", err)
	}
	files.ManagerLog = filepath.Join(dir, "kruise-manager.log")
	if err := os.WriteFile(files.ManagerLog, nil, 0o600); err != nil {
		return testcluster.Options{}, files, fmt.Errorf("scenario files: %w", err)
	}
	config := filepath.Join(dir, "kwok.yaml")
	stages := kubelet.Stages + kubelet.ResizeDeferred + kubelet.ContainerRestarts +
		kubelet.ClusterLogs(kruisemanager.Container, files.ManagerLog, kruisemanager.Namespace)
	if err := os.WriteFile(config, []byte(stages), 0o600); err != nil {
		return testcluster.Options{}, files, fmt.Errorf("scenario files: %w", err)
	}
	return testcluster.Options{
		ControllerManager:      true,
		Scheduler:              true,
		NodeMonitorGracePeriod: NodeMonitorGracePeriod,
		Kwok: &testcluster.KwokOptions{
			NodeLabelSelector: kubelet.NodeLabel + "=" + kubelet.NodeLabelValue,
			// kwok's kubelet API serves the manager's log through pods/log.
			ServeKubeletAPI: true,
			ExtraArgs:       []string{"--config=" + config},
		},
	}, files, nil
}
