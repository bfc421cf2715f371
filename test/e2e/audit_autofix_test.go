package e2e

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/testcluster"
)

// orphanMachine leaves a Machine Terminating on Cluster API's finalizer with no Cluster API
// controller installed: finalizer-owner-missing, whose default fix removes the finalizer. It
// returns the Machine as created.
func orphanMachine(t *testing.T, c *testcluster.Cluster, ns, name string) *unstructured.Unstructured {
	t.Helper()
	dyn := c.Dynamic().Resource(teMachines).Namespace(ns)
	m := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Machine",
		"metadata": map[string]any{"name": name, "namespace": ns, "labels": map[string]any{"cluster.x-k8s.io/cluster-name": "gone"}},
		"spec":     map[string]any{"clusterName": "gone", "bootstrap": map[string]any{"dataSecretName": name + "-bootstrap"}},
	}}
	if _, err := dyn.Create(t.Context(), m, metav1.CreateOptions{FieldManager: "clusterctl"}); err != nil {
		t.Fatal(err)
	}
	// The machine controller adds its finalizer as the binary "manager".
	if _, err := dyn.Patch(t.Context(), name, types.MergePatchType, []byte(`{"metadata":{"finalizers":["machine.cluster.x-k8s.io"]}}`),
		metav1.PatchOptions{FieldManager: "manager"}); err != nil {
		t.Fatal(err)
	}
	if err := dyn.Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestAuditAutoFix: --auto-fix applies the default fix of the named root cause only, at most
// --max-fixes-per-cycle per cycle, through fix's engine (its Events).
func TestAuditAutoFix(t *testing.T) {
	t.Parallel()
	const ns = "af"
	c := testcluster.Start(t, testcluster.Options{})
	crds, err := testcluster.CRDDir()
	if err != nil {
		t.Fatal(err)
	}
	c.InstallCRDs(t, filepath.Join(crds, "cluster.x-k8s.io_clusters.yaml"), filepath.Join(crds, "cluster.x-k8s.io_machines.yaml"))
	createNamespace(t, c, ns)
	machines := []string{"m-0", "m-1", "m-2"}
	for _, m := range machines {
		orphanMachine(t, c, ns, m)
	}
	cs := c.Clientset()
	heldConfigMap(t, cs, ns) // finalizer-owner-not-acting: no fix
	args := []string{"-n", ns, "--checks", teCheck, "--min-age", "0s", "--reports", "none"}
	remaining := func() int {
		n := 0
		for _, m := range machines {
			_, err := c.Dynamic().Resource(teMachines).Namespace(ns).Get(t.Context(), m, metav1.GetOptions{})
			if err == nil {
				n++
			} else if !apierrors.IsNotFound(err) {
				t.Fatal(err)
			}
		}
		return n
	}

	// Another root cause named: the Machines' fix is not applied.
	_, stderr, code := runPlugin(t, c.Kubeconfig, append([]string{"audit", "--once", "--auto-fix", "finalizer-owner-not-acting"}, args...)...)
	if code != 2 || remaining() != 3 || !strings.Contains(stderr, `"fixesApplied":0`) {
		t.Fatalf("--auto-fix finalizer-owner-not-acting: exit %d, %d Machines left, want 2 and 3\n%s", code, remaining(), stderr)
	}
	if _, stderr, code := runPlugin(t, c.Kubeconfig, append([]string{"audit", "--once", "--auto-fix", "no-such-cause"}, args...)...); code != 1 || !strings.Contains(stderr, "not a root cause") {
		t.Fatalf("unknown root cause: exit %d\n%s", code, stderr)
	}

	// Named, one per cycle: the three Machines go over three cycles at least.
	p := startAudit(t, c.Kubeconfig, append([]string{"--interval", "2s", "--auto-fix", "finalizer-owner-missing", "--max-fixes-per-cycle", "1"}, args...)...)
	applied := func(s scrape) []string {
		return s.series("workloaddoctor_fixes_total", `action="remove-finalizer"`, `result="applied"`)
	}
	// logged sums the cycles' log lines: the cycles, and the fixes they applied.
	logged := func() (cycles, fixed int) {
		for _, l := range p.log() {
			var m map[string]any
			if json.Unmarshal([]byte(l), &m) != nil || m["msg"] != "scan" {
				continue
			}
			cycles++
			n, _ := m["fixesApplied"].(float64)
			if n > 1 {
				t.Errorf("a cycle applied %v fixes, over the cap of 1: %s", n, l)
			}
			fixed += int(n)
		}
		return cycles, fixed
	}
	// The last Machine is gone as soon as its fix is written, before the engine counts the fix
	// and the cycle logs it: wait for the cycle to end too.
	p.withinCycles(t, 1000, "success", "every Machine fixed", func(s scrape) bool {
		got := applied(s)
		_, fixed := logged()
		return remaining() == 0 && len(got) == 1 && strings.HasSuffix(got[0], " 3") && fixed == 3
	})
	if got := applied(p.scrape(t)); len(got) != 1 || !strings.HasSuffix(got[0], " 3") {
		t.Errorf("fixes_total = %v, want 3 applied", got)
	}
	if cycles, fixed := logged(); fixed != 3 || cycles < 3 {
		t.Errorf("%d fixes over %d cycles, want 3 over at least 3", fixed, cycles)
	}
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(t.Context(), "held", metav1.GetOptions{})
	if err != nil || len(cm.Finalizers) != 1 {
		t.Errorf("the ConfigMap whose root cause was not named changed: %v %v", cm, err)
	}
	events, err := cs.CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{FieldSelector: "reason=WorkloadDoctorFix"})
	if err != nil || len(events.Items) != 3 {
		t.Errorf("%d WorkloadDoctorFix Events (%v), want one per Machine", len(events.Items), err)
	}
}
