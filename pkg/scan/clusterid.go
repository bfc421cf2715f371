package scan

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// ClusterIDNamespace is the namespace whose UID names a cluster. Every cluster has it from its
// first start, and its UID never changes while the cluster lives, whatever the server's address
// or the kubeconfig's context is called; a cluster rebuilt from scratch gets a new one.
const ClusterIDNamespace = "kube-system"

// ClusterID reads the cluster's identity: the UID of the kube-system namespace.
func ClusterID(ctx context.Context, kube kubernetes.Interface) (string, error) {
	ns, err := kube.CoreV1().Namespaces().Get(ctx, ClusterIDNamespace, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("read namespace %s for the cluster's identity: %w", ClusterIDNamespace, err)
	}
	return string(ns.UID), nil
}
