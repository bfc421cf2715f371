package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/scenario"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// ---- helpers ----

// boundClaim creates a claim bound to a hostPath PV made for it, and waits until it is Bound.
func (e *teEnv) boundClaim(t *testing.T, ns, name string) *corev1.PersistentVolume {
	t.Helper()
	pv, pvc := scenario.BoundClaim(ns, name, "ch-pv-"+name, "1Gi")
	if _, err := e.cs.CoreV1().PersistentVolumes().Create(e.ctx, pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.cs.CoreV1().PersistentVolumeClaims(ns).Create(e.ctx, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "claim "+name+" bound", func(ctx context.Context) (bool, error) {
		got, err := e.cs.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && got.Status.Phase == corev1.ClaimBound, err
	})
	return pv
}

func chPodSpec(node string, grace int64) corev1.PodSpec {
	s := kwokPodSpec(grace)
	s.NodeSelector = map[string]string{"kubernetes.io/hostname": node}
	return s
}

// podOn creates a pod on node with the volumes and waits until kwok runs it.
func (e *teEnv) podOn(t *testing.T, ns, name, node string, vols ...corev1.Volume) {
	t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: chPodSpec(node, 3)}
	p.Spec.Volumes = vols
	if _, err := e.cs.CoreV1().Pods(ns).Create(e.ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "pod "+ns+"/"+name+" running on "+node, func(ctx context.Context) (bool, error) {
		got, err := e.cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && got.Status.Phase == corev1.PodRunning, err
	})
}

// scanAll runs `scan -A --checks stuck-terminating -o json --min-age 0s`, exit 0 or 2; why must
// agree with it on every object it finds stuck.
func (e *teEnv) scanAll(t *testing.T) *report.Report {
	t.Helper()
	return e.pollAll(t).agreed()
}

// pollAll is scanAll for a loop that waits for a state, as poll is scan.
func (e *teEnv) pollAll(t *testing.T) *pluginRun {
	t.Helper()
	return pluginOn(e.c.Kubeconfig).scan(t, "-A", "--checks", teCheck, "-o", "json", "--min-age", "0s").wantFindingsOrNone()
}

// assertBlockedBy checks the chain, nearest first, written Kind/name, and the root's finding ID.
func assertBlockedBy(t *testing.T, f report.Finding, rootID string, chain ...string) {
	t.Helper()
	var got []string
	for _, b := range f.BlockedBy {
		got = append(got, b.Kind+"/"+b.Name)
	}
	if strings.Join(got, ",") != strings.Join(chain, ",") {
		t.Errorf("%s blockedBy %v, want %v", f.Object, got, chain)
		return
	}
	if f.BlockedBy[len(f.BlockedBy)-1].FindingID != rootID {
		t.Errorf("%s: root finding %s, want %s", f.Object, f.BlockedBy[len(f.BlockedBy)-1].FindingID, rootID)
	}
	if len(f.Fixes) != 0 {
		t.Errorf("%s above the root offers fixes %v", f.Object, f.Fixes)
	}
}

// assertNoProtectionRemoval: no finding offers to remove a protection finalizer.
func assertNoProtectionRemoval(t *testing.T, rep *report.Report) {
	t.Helper()
	for _, f := range rep.Findings {
		for _, fx := range f.Fixes {
			switch fx.Params["finalizer"] {
			case "kubernetes.io/pvc-protection", "kubernetes.io/pv-protection", "foregroundDeletion", "customresourcecleanup.apiextensions.k8s.io":
				t.Errorf("%s offers %s of %s", f.Object, fx.Action, fx.Params["finalizer"])
			}
		}
	}
}
