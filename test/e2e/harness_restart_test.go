package e2e

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/testcluster"
)

// TestHarnessRestartAPIServer runs a control plane from bin/tools, stops its apiserver and starts it
// again: while it is down requests fail and etcd keeps running; afterwards it serves on the same
// address, from the same etcd, to clients built before the restart and from the kubeconfig file.
func TestHarnessRestartAPIServer(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, testcluster.Options{})
	ctx := t.Context()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "before", Namespace: metav1.NamespaceDefault}, Data: map[string]string{"k": "v"}}
	created, err := c.Clientset().CoreV1().ConfigMaps(metav1.NamespaceDefault).Create(ctx, cm, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	fromFile, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	url, pids := c.APIServerURL, c.Processes()

	c.StopAPIServer(t)
	short, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := fromFile.CoreV1().ConfigMaps(metav1.NamespaceDefault).Get(short, "before", metav1.GetOptions{}); err == nil {
		t.Fatal("a GET succeeded while the apiserver was stopped")
	}
	if !testcluster.ProcessAlive(pids[0]) || testcluster.ProcessAlive(pids[1]) { // etcd, kube-apiserver in start order
		t.Fatalf("after StopAPIServer: etcd alive %v (want true), apiserver alive %v (want false)", testcluster.ProcessAlive(pids[0]), testcluster.ProcessAlive(pids[1]))
	}

	c.StartAPIServer(t)
	if c.APIServerURL != url {
		t.Errorf("APIServerURL after the restart = %s, want %s", c.APIServerURL, url)
	}
	for name, cs := range map[string]kubernetes.Interface{"admin clientset": c.Clientset(), "kubeconfig": fromFile} {
		got, err := cs.CoreV1().ConfigMaps(metav1.NamespaceDefault).Get(ctx, "before", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("%s after the restart: %v", name, err)
		}
		if got.UID != created.UID || got.Data["k"] != "v" {
			t.Errorf("%s: ConfigMap after the restart = %v, want the one created before (same etcd)", name, got)
		}
	}
	if _, err := fromFile.CoreV1().ConfigMaps(metav1.NamespaceDefault).Create(ctx,
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after"}}, metav1.CreateOptions{}); err != nil {
		t.Errorf("write after the restart: %v", err)
	}

	// Twice more, back to back: the port is taken again every time.
	c.RestartAPIServer(t)
	c.RestartAPIServer(t)
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := fromFile.CoreV1().ConfigMaps(metav1.NamespaceDefault).Get(ctx, "after", metav1.GetOptions{})
		return err == nil, nil
	}); err != nil {
		t.Errorf("after two more restarts: %v", err)
	}

	all := c.Processes()
	if len(all) != 5 { // etcd and four apiservers
		t.Errorf("Processes() = %v, want etcd and 4 apiservers", all)
	}
	c.Stop() // an apiserver stopped on purpose is no early exit: the test stays green
	testcluster.AssertNoLeakedProcesses(t, all)
}
