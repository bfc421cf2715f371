package scenario

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/testcluster"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/scenario/kruisemanager"
)

// KwokLabel is the node label kwok selects the nodes it plays the kubelet of by. The apiserver
// evaluates it, so a node whose label is taken off leaves kwok's watch and its Lease is no longer
// renewed: the node's kubelet is dead as far as the cluster can tell.
const (
	KwokLabel      = "type"
	KwokLabelValue = "kwok"
)

// NodeMonitorGracePeriod is kube-controller-manager's --node-monitor-grace-period in the scenario
// cluster: a node whose Lease is not renewed for this long turns Ready=Unknown (40s upstream).
const NodeMonitorGracePeriod = 20 * time.Second

// KwokClusterLogs is a kwok config document that has kwok serve, as the log of the named container
// of every pod in namespace (pods/log through the apiserver and kwok's kubelet API), the file
// logFile, which the kruise-manager's stand-in writes.
func KwokClusterLogs(namespace, container, logFile string) string {
	return fmt.Sprintf(`---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterLogs
metadata:
  name: kruise-manager
spec:
  selector:
    matchNamespaces: [%s]
  logs:
  - containers: [%s]
    logsFile: %s
`, namespace, container, logFile)
}

// Files are the files ClusterOptions writes next to the cluster.
type Files struct {
	// ManagerLog is the kruise-manager container's log, which kwok serves; Build's manager writes it.
	ManagerLog string
}

// ClusterOptions returns the cluster the scenario needs: kube-controller-manager (node
// lifecycle, PodGC, namespace and garbage collector, Deployments), kube-scheduler, and kwok
// playing the kubelet of every node labelled KwokLabel=KwokLabelValue, serving pods/log. It
// writes kwok's configuration into dir.
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
	if err := os.WriteFile(config, []byte(KwokStages+KwokResizeDeferred+KwokContainerRestarts+KwokClusterLogs(kruisemanager.Namespace, kruisemanager.Container, files.ManagerLog)), 0o600); err != nil {
		return testcluster.Options{}, files, fmt.Errorf("scenario files: %w", err)
	}
	return testcluster.Options{
		ControllerManager:      true,
		Scheduler:              true,
		NodeMonitorGracePeriod: NodeMonitorGracePeriod,
		Kwok: &testcluster.KwokOptions{
			NodeLabelSelector: KwokLabel + "=" + KwokLabelValue,
			// kwok's kubelet API serves the manager's log through pods/log.
			ServeKubeletAPI: true,
			ExtraArgs:       []string{"--config=" + config},
		},
	}, files, nil
}
