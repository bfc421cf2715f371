package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/testcluster"
)

// TestHarnessLivingCluster checks that a full cluster (kcm, scheduler, kwok) runs a Deployment onto
// a fake node, that stopping kwok makes the node go NotReady like a dead kubelet, and that
// teardown leaves no process behind.
func TestHarnessLivingCluster(t *testing.T) {
	t.Parallel()
	c := testcluster.Start(t, testcluster.Options{
		ControllerManager:      true,
		Scheduler:              true,
		Kwok:                   &testcluster.KwokOptions{ManageAllNodes: true},
		NodeMonitorGracePeriod: 10 * time.Second,
	})
	cs := c.Clientset()
	ctx := t.Context()

	const nodeName = "kwok-node-0"
	if _, err := cs.CoreV1().Nodes().Create(ctx, kwokNode(nodeName), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create node: %v", err)
	}
	if _, err := cs.AppsV1().Deployments("default").Create(ctx, kwokDeployment("web", 2), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create deployment: %v", err)
	}
	eventually(t, 60*time.Second, "2 pods of deployment web running on "+nodeName, func(ctx context.Context) (bool, error) {
		pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			return false, err
		}
		running := 0
		for _, p := range pods.Items {
			if p.Spec.NodeName == nodeName && p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		return running == 2, nil
	})
	waitNodeReady(t, cs, nodeName, corev1.ConditionTrue)

	// A stopped kwok is a dead kubelet: the node-lifecycle controller marks the node Unknown
	// after the grace period, and a restarted kwok brings it back.
	c.StopKwok(t)
	waitNodeReady(t, cs, nodeName, corev1.ConditionUnknown)
	c.StartKwok(t)
	waitNodeReady(t, cs, nodeName, corev1.ConditionTrue)

	pids := c.Processes()
	if len(pids) != 6 { // etcd, apiserver, kcm, scheduler, kwok twice
		t.Errorf("Processes() = %v, want 6 PIDs", pids)
	}
	c.Stop()
	c.Stop() // idempotent
	testcluster.AssertNoLeakedProcesses(t, pids)
}

// orphanDirEnv switches TestHarnessKilledTestBinaryLeaksNothing into its child role.
const orphanDirEnv = "WORKLOADDOCTOR_E2E_ORPHAN_DIR"

// TestHarnessKilledTestBinaryLeaksNothing re-runs itself as a child test binary that starts a full
// cluster, SIGKILLs that child (no cleanup runs), and checks the kernel took every component down
// with it: the parent-death signal the harness sets must outlive the goroutine that forked.
func TestHarnessKilledTestBinaryLeaksNothing(t *testing.T) {
	if dir := os.Getenv(orphanDirEnv); dir != "" {
		c := testcluster.Start(t, testcluster.Options{
			ControllerManager: true, Scheduler: true, Kwok: &testcluster.KwokOptions{ManageAllNodes: true},
		})
		var pids []string
		for _, pid := range c.Processes() {
			pids = append(pids, strconv.Itoa(pid))
		}
		tmp := filepath.Join(dir, "pids.tmp")
		if err := os.WriteFile(tmp, []byte(strings.Join(pids, " ")), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, "pids")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(commandTimeout) // until the parent kills us
		t.Fatal("child was not killed")
	}
	t.Parallel()

	dir := t.TempDir()
	var out bytes.Buffer
	child := exec.Command(os.Args[0], "-test.run=^TestHarnessKilledTestBinaryLeaksNothing$", "-test.v")
	// The child's TMPDIR is inside ours, so the state it never cleans up is removed with our TempDir.
	child.Env = append(os.Environ(), orphanDirEnv+"="+dir, "TMPDIR="+dir)
	child.Stdout, child.Stderr = &out, &out
	if err := child.Start(); err != nil {
		t.Fatalf("start child test binary: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- child.Wait() }()

	var pids []int
	eventually(t, 90*time.Second, "child cluster PIDs", func(ctx context.Context) (bool, error) {
		select {
		case err := <-exited:
			return false, fmt.Errorf("child exited early (%v):\n%s", err, out.String())
		default:
		}
		data, err := os.ReadFile(filepath.Join(dir, "pids"))
		if err != nil {
			return false, nil
		}
		for _, f := range strings.Fields(string(data)) {
			pid, err := strconv.Atoi(f)
			if err != nil {
				return false, fmt.Errorf("pids file: %w", err)
			}
			pids = append(pids, pid)
		}
		return true, nil
	})
	if len(testcluster.LeakedProcesses(pids)) != len(pids) {
		t.Fatalf("child cluster processes %v are not all running before the kill", pids)
	}

	if err := child.Process.Kill(); err != nil {
		t.Fatalf("kill child: %v", err)
	}
	<-exited
	eventually(t, 10*time.Second, "cluster processes of the killed child to die", func(context.Context) (bool, error) {
		return len(testcluster.LeakedProcesses(pids)) == 0, nil
	})
	t.Logf("child test binary killed; the %d processes of its cluster %v are gone", len(pids), pids)
}

// waitNodeReady waits until the node's Ready condition has the given status.
func waitNodeReady(t *testing.T, cs kubernetes.Interface, name string, want corev1.ConditionStatus) {
	t.Helper()
	eventually(t, 60*time.Second, fmt.Sprintf("node %s Ready=%s", name, want), func(ctx context.Context) (bool, error) {
		node, err := cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, cond := range node.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				return cond.Status == want, nil
			}
		}
		return false, nil
	})
}

// kwokNode is a fake node as kwok's documentation creates it: annotated and tainted so that only
// pods meant for kwok land there.
func kwokNode(name string) *corev1.Node {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("32"),
		corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{"node.alpha.kubernetes.io/ttl": "0", "kwok.x-k8s.io/node": "fake"},
			Labels: map[string]string{
				"beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux",
				"kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux",
				"kubernetes.io/hostname": name, "kubernetes.io/role": "agent",
				"node-role.kubernetes.io/agent": "", "type": "kwok",
			},
		},
		Spec: corev1.NodeSpec{
			Taints: []corev1.Taint{{Key: "kwok.x-k8s.io/node", Value: "fake", Effect: corev1.TaintEffectNoSchedule}},
		},
		Status: corev1.NodeStatus{Allocatable: capacity, Capacity: capacity},
	}
}

// kwokDeployment runs replicas pods that tolerate the kwok taint and select kwok nodes.
func kwokDeployment(name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeSelector: map[string]string{"type": "kwok"},
					Tolerations: []corev1.Toleration{{
						Key: "kwok.x-k8s.io/node", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule,
					}},
					Containers: []corev1.Container{{Name: "app", Image: "fake-image"}},
				},
			},
		},
	}
}
