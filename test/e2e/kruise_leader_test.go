package e2e

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/collect"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/scan"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// The kruise-manager's leader judged on a real apiserver, with the leader Lease renewed every 2s
// as kruise v1.9.0 main.go configures controller-runtime's leader election (defaultRetryPeriod
// 2s, defaultLeaseDuration 15s) and client-go's LeaderElector.tryAcquireOrRenew writes it.
//
// A scan longer than the Lease, or a workstation clock ahead of the cluster, is played with the
// test-only WORKLOADDOCTOR_TEST_CLOCK_SKEW, which shifts the binary's local clock: nothing sleeps.
// Liveness must come from the Lease's reads (the apiserver's Date, a record that moved), like
// client-go's LeaderElector.isLeaseValid judges from observed record changes, never from the
// local clock.

func TestKruiseLeaderLiveness(t *testing.T) {
	t.Parallel()
	pluginBinary(t)
	k := startKruiseCluster(t)
	k.node(t, krDeadNode, false)
	k.manager(t, "kruise-live", "v1.7.0", nil, krDeadNode, true)
	k.manager(t, "kruise-unready", "v1.7.0", nil, krDeadNode, true)
	k.unready(t, "kruise-unready")
	k.manager(t, "kruise-down", "v1.7.0", nil, krDeadNode, false)

	for _, tc := range []struct{ name, ns, kruiseNS, skew string }{
		{"local clock 2m ahead, or a scan 2m long", "lv-ahead", "kruise-live", "2m"},
		{"local clock 1h ahead", "lv-hour", "kruise-live", "1h"},
		{"renewed Lease, Deployment with no available replica", "lv-unready", "kruise-unready", "2m"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k.namespace(t, tc.ns)
			k.leakedCloneSet(t, tc.ns, "demo", "5l6cv")
			rep := krClockSkewed(t, pluginOn(k.c.Kubeconfig).withClockSkew(tc.skew).scan(t, krArgs(tc.ns, tc.kruiseNS)...).wantExit(2), tc.skew)
			f := krFind(t, rep, "expectations-unsatisfied", "demo")
			assertFinding(t, f, "scale-expectations-leaked", report.SeverityError,
				[]string{"holds Lease " + tc.kruiseNS + "/kruise-manager, renewed"},
				[]string{"restart-controller-leader", "requeue-workload"})
			for _, line := range f.RootCause.Evidence {
				if strings.Contains(line, "longer than its leaseDurationSeconds") || strings.Contains(line, "no available replica") {
					t.Errorf("evidence contradicts the live leader: %q", line)
				}
			}
			pn := krFind(t, rep, "stuck-preparing-normal", "demo-a1b2c")
			if pn.RootCause.ID == "controller-unavailable" {
				t.Errorf("the pod's finding calls the live manager unavailable:\n%s", strings.Join(pn.RootCause.Evidence, "\n"))
			}
		})
	}

	t.Run("the collector reads the Lease twice with the apiserver's Date", func(t *testing.T) {
		clients, err := scan.Clients(k.c.RESTConfig())
		if err != nil {
			t.Fatal(err)
		}
		before := time.Now().Add(-time.Second) // Date is whole seconds
		s, err := collect.Collect(k.ctx, clients, collect.Options{Settings: snapshot.Settings{
			KruiseNamespace: "kruise-live", KruiseDeployment: "kruise-controller-manager"}}, []snapshot.Input{snapshot.InputControllers})
		if err != nil {
			t.Fatal(err)
		}
		reads := s.LeaseReads["kruise-live/kruise-manager"]
		if len(reads) != 2 {
			t.Fatalf("%d reads of the leader Lease, want 2", len(reads))
		}
		for i, r := range reads {
			if r.ServerTime.Before(before.Truncate(time.Second)) || r.ServerTime.After(time.Now()) {
				t.Errorf("read %d: server time %s, want the apiserver's Date during the scan (from %s)", i, r.ServerTime, before)
			}
		}
	})

	t.Run("expired Lease at the apiserver's time", func(t *testing.T) {
		// The Lease was last renewed 10m ago and not since: expired at the apiserver's time, and
		// the evidence dates it by that time, not by the shifted local clock.
		const ns = "lv-down"
		k.namespace(t, ns)
		k.leakedCloneSet(t, ns, "demo", "5l6cv")
		rep := krClockSkewed(t, pluginOn(k.c.Kubeconfig).withClockSkew("2m").scan(t, krArgs(ns, "kruise-down")...).wantExit(2), "2m")
		assertFinding(t, krFind(t, rep, "expectations-unsatisfied", "demo"), "controller-unavailable", report.SeverityError,
			[]string{"leader Lease kruise-down/kruise-manager (holder kruise-controller-manager-6f7d8c9b5-",
				"was last renewed 10m before the apiserver's time when the scan read it", "longer than its leaseDurationSeconds 15"}, nil)
	})
}

// With one manager replica, OpenKruise's pod webhook mpod.kb.io (failurePolicy Fail: kruise
// v1.9.0 pkg/webhook/pod/mutating/webhooks.go, config/webhook/manifests.yaml), which every
// replica serves, rejects every pod creation until the restarted leader is Ready. The restart is
// high risk then, refused unless --action names it, and the plan says why.
func TestKruiseRestartLeaderNeedsAnotherReadyReplica(t *testing.T) {
	t.Parallel()
	pluginBinary(t)
	k := startKruiseCluster(t)
	k.node(t, krDeadNode, false)
	single := k.manager(t, "kruise-single", "v1.7.0", nil, krDeadNode, true)
	pair := k.manager(t, "kruise-pair", "v1.7.0", nil, krDeadNode, true)
	k.standby(t, "kruise-pair", pair)

	t.Run("single replica: refused unless named", func(t *testing.T) {
		const ns = "rl-single"
		f := k.leakedFinding(t, ns, "kruise-single")
		if fx := f.Fixes[0]; fx.Action != "restart-controller-leader" || fx.Risk != report.RiskHigh || !strings.Contains(fx.Description, "has no other Ready replica") {
			t.Fatalf("restart fix = %+v, want high risk for want of another Ready replica", fx)
		}

		fixed := pluginOn(k.c.Kubeconfig).fix(t, krFixArgs(ns, "kruise-single", f.ID)...)
		stdout, stderr, code := fixed.stdout, fixed.stderr, fixed.code
		const why = "high risk, applied only when named with --action restart-controller-leader: the scan saw no other Ready replica"
		res := krFixResults(t, stdout)
		if code != 3 || len(res) != 1 || res[0].Status != "refused" || !strings.Contains(res[0].Reason, why) || !strings.Contains(res[0].Reason, "mpod.kb.io") {
			t.Fatalf("fix without --action: exit %d, want 3 and the refusal\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		if !strings.Contains(stderr, "Not planned") || !strings.Contains(stderr, why) {
			t.Errorf("the plan does not say why:\n%s", stderr)
		}
		if p, err := k.cs.CoreV1().Pods(single.Namespace).Get(k.ctx, single.Name, metav1.GetOptions{}); err != nil || p.DeletionTimestamp != nil {
			t.Fatalf("the only replica was touched by a refused fix: %v", err)
		}

		// Named, the restart goes ahead and the plan says what the user accepted.
		fixed = pluginOn(k.c.Kubeconfig).fix(t, "-n", ns, "--kruise-namespace", "kruise-single",
			"--checks", krChecks, "--min-age", "0s", f.ID, "--action", "restart-controller-leader", "--yes", "-o", "json")
		stdout, stderr, code = fixed.stdout, fixed.stderr, fixed.code
		if res := krFixResults(t, stdout); code != 0 || len(res) != 1 || res[0].Status != "applied" {
			t.Fatalf("fix --action restart-controller-leader: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		if !strings.Contains(stderr, "high risk, taken because --action names it: the scan saw no other Ready replica") {
			t.Errorf("the plan does not say the named step is high risk:\n%s", stderr)
		}
		krLeaderDeleted(t, k, single)
	})

	t.Run("a second Ready replica: medium risk, applied by default", func(t *testing.T) {
		const ns = "rl-pair"
		f := k.leakedFinding(t, ns, "kruise-pair")
		if fx := f.Fixes[0]; fx.Action != "restart-controller-leader" || fx.Risk != report.RiskMedium || !strings.Contains(fx.Description, "keeps serving the pod webhook") {
			t.Fatalf("restart fix = %+v, want medium risk with the standby named", fx)
		}
		krFix(t, k, ns, "kruise-pair", f.ID)
		krLeaderDeleted(t, k, pair)
	})
}

// leakedFinding is the expectations finding of a CloneSet with a leaked scale expectation in a
// new namespace ns, scanned against the manager in kruiseNS.
func (k *krEnv) leakedFinding(t *testing.T, ns, kruiseNS string) report.Finding {
	t.Helper()
	k.namespace(t, ns)
	k.leakedCloneSet(t, ns, "demo", "5l6cv")
	return krFind(t, pluginOn(k.c.Kubeconfig).scan(t, krArgs(ns, kruiseNS)...).wantExit(2).agreed(), "expectations-unsatisfied", "demo")
}

// krClockSkewed is the report of a scan run with the binary's local clock shifted by skew, after
// checking the shift took.
func krClockSkewed(t *testing.T, scanned *pluginRun, skew string) *report.Report {
	t.Helper()
	d, err := time.ParseDuration(skew)
	if err != nil {
		t.Fatal(err)
	}
	rep := scanned.agreed() // scanned is now the scan that agreed
	stderr, before := scanned.stderr, scanned.began
	// The shift took (the binary saw its clock off), and the report's time is the apiserver's,
	// which runs on this machine's clock: ages are not measured on the shifted one.
	m := regexp.MustCompile(`this machine's clock is (\S+) ahead of the apiserver's`).FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("stderr does not say the clock is ahead:\n%s", stderr)
	}
	if said, err := time.ParseDuration(m[1]); err != nil || (said-d).Abs() > 3*time.Second {
		t.Fatalf("stderr says the clock is %s ahead, want about %s", m[1], skew)
	}
	if got := rep.Metadata.GeneratedAt.Sub(before); got < -5*time.Second || got > time.Minute {
		t.Fatalf("generatedAt %s is %s from the test's clock, want the apiserver's time", rep.Metadata.GeneratedAt, got)
	}
	return rep
}

// unready writes what kube-controller-manager writes when the manager's readiness probe fails:
// no available replica, while the leader keeps renewing its Lease.
func (k *krEnv) unready(t *testing.T, ns string) {
	t.Helper()
	d, err := k.cs.AppsV1().Deployments(ns).Get(k.ctx, "kruise-controller-manager", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d.Status.ReadyReplicas, d.Status.AvailableReplicas, d.Status.UnavailableReplicas = 0, 0, 1
	for i := range d.Status.Conditions {
		if d.Status.Conditions[i].Type == "Available" {
			d.Status.Conditions[i].Status, d.Status.Conditions[i].Reason = corev1.ConditionFalse, "MinimumReplicasUnavailable"
			d.Status.Conditions[i].Message = "Deployment does not have minimum availability."
		}
	}
	if _, err := k.cs.AppsV1().Deployments(ns).UpdateStatus(k.ctx, d, metav1.UpdateOptions{FieldManager: "kube-controller-manager"}); err != nil {
		t.Fatal(err)
	}
}

// standby adds a second Ready replica of the manager, a sibling of leader in its ReplicaSet.
func (k *krEnv) standby(t *testing.T, ns string, leader *corev1.Pod) {
	t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: leader.OwnerReferences[0].Name + "-9zv4r", Labels: leader.Labels,
		OwnerReferences: leader.OwnerReferences}, Spec: *leader.Spec.DeepCopy()}
	p, err := k.cs.CoreV1().Pods(ns).Create(k.ctx, p, metav1.CreateOptions{FieldManager: "kube-controller-manager"})
	if err != nil {
		t.Fatal(err)
	}
	p.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}, {Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	if _, err := k.cs.CoreV1().Pods(ns).UpdateStatus(k.ctx, p, metav1.UpdateOptions{FieldManager: "kubelet"}); err != nil {
		t.Fatal(err)
	}
}

// krLeaderDeleted waits until the leader pod is deleted or being deleted: its node's kubelet does
// not answer, so a graceful delete leaves it Terminating.
func krLeaderDeleted(t *testing.T, k *krEnv, leader *corev1.Pod) {
	t.Helper()
	eventually(t, 30*time.Second, "leader pod "+leader.Name+" deleted", func(ctx context.Context) (bool, error) {
		p, err := k.cs.CoreV1().Pods(leader.Namespace).Get(ctx, leader.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return err == nil && (p.UID != leader.UID || p.DeletionTimestamp != nil), err
	})
}
