package kubelet

import (
	"fmt"
	"strings"
)

// ClusterLogs is a kwok config document that has kwok serve, as the log of the named container
// of every pod in the namespaces (pods/log through the apiserver and kwok's kubelet API), the file
// logFile, which the kruise-manager's stand-in writes.
func ClusterLogs(container, logFile string, namespaces ...string) string {
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
`, strings.Join(namespaces, ", "), container, logFile)
}
