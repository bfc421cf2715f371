package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/testcluster"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/fix"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/scan"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// bgDeployment runs the engine on the pods of a Deployment, which kube-controller-manager
// replaces through its ReplicaSet. No shipped check proposes evict-pod for a Deployment's pods,
// so the engine test's annotated check (fixengine_test.go) proposes it for every pod the template
// marks, and the engine runs in process.
func bgDeployment(t *testing.T, c *testcluster.Cluster) {
	cs := c.Clientset()
	clients, err := fix.NewClients(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	reg := checks.NewRegistry(engineCheck{})
	plan := func(t *testing.T, ns string) []*fix.Step {
		t.Helper()
		rep, _, err := scan.Run(t.Context(), clients.Clients, scan.Options{Scope: snapshot.Scope{Namespace: ns}, Checks: reg.All(), MinAge: 0})
		if err != nil {
			t.Fatalf("scan: %v", err)
		}
		steps, refused := fix.Select(fix.NewCatalog(), rep.Findings, fix.Selection{})
		if len(refused) > 0 {
			t.Fatalf("plan refused %+v", refused)
		}
		return steps
	}

	t.Run("a Deployment's pods are evicted one at a time and it keeps 3 of 4 Ready", func(t *testing.T) {
		orig := bgCreateDeployment(t, cs, "bg-deploy", 4, 0)
		steps := plan(t, "bg-deploy")
		if len(steps) != 4 {
			t.Fatalf("%d steps, want 4", len(steps))
		}
		prepared := fix.Prepare(t.Context(), clients, nil, steps, "")
		groups := prepared.Groups
		// kubernetes ResolveFenceposts: maxUnavailable 25% of 4 rounded down is 1 (maxSurge 25% rounded up is 1).
		if len(groups) != 1 || groups[0].Budget.Workload.Kind != "Deployment" || groups[0].Budget.MaxUnavailable != 1 ||
			groups[0].Budget.Replicas != 4 || !strings.Contains(groups[0].Budget.Source, "25% of 4, rounded down") || groups[0].Refusal != "" {
			t.Fatalf("groups %+v, want the Deployment with maxUnavailable 1 of 4", groups)
		}
		ready := watchReady(t, cs, "bg-deploy", "app=api")
		var waves []fix.WaveStarted
		e := fix.NewEngine(clients, fix.Options{Registry: reg, WaitTimeout: 2 * time.Minute, PollInterval: 500 * time.Millisecond,
			OnWaveStarted: func(w fix.WaveStarted) { waves = append(waves, w) }})
		rs := e.Run(t.Context(), prepared)
		min, max := ready.stop()
		for _, r := range rs {
			if r.Status != fix.StatusApplied {
				t.Errorf("result %+v, want applied", r)
			}
		}
		if len(waves) != 4 {
			t.Errorf("waves %+v, want 4 of one pod", waves)
		}
		if min != 3 || max != 4 {
			t.Errorf("Ready pods during the fix: min %d max %d, want min 3 (replicas 4 - maxUnavailable 1)", min, max)
		}
		eventually(t, time.Minute, "4 new Ready pods", func(ctx context.Context) (bool, error) {
			pods, err := cs.CoreV1().Pods("bg-deploy").List(ctx, metav1.ListOptions{LabelSelector: "app=api"})
			if err != nil {
				return false, err
			}
			n := 0
			for _, p := range pods.Items {
				if orig[p.UID] {
					return false, nil
				}
				if bgServing(&p) {
					n++
				}
			}
			return n == 4, nil
		})
	})

	// With minReadySeconds, the Deployment controller counts a replacement available only once it
	// has been Ready that long (kubernetes pkg/controller/deployment/sync.go calculateStatus,
	// podutil.IsPodAvailable): the next wave waits for that, so the Deployment's own count of
	// available pods never drops below replicas - maxUnavailable.
	t.Run("a Deployment with minReadySeconds keeps 3 of 4 available as its controller counts them", func(t *testing.T) {
		const ns = "bg-deploy-minready"
		bgCreateDeployment(t, cs, ns, 4, 5)
		steps := plan(t, ns)
		prepared := fix.Prepare(t.Context(), clients, nil, steps, "")
		groups := prepared.Groups
		if len(groups) != 1 || groups[0].Budget.MaxUnavailable != 1 || groups[0].Budget.MinReadySeconds != 5 {
			t.Fatalf("groups %+v, want the Deployment with maxUnavailable 1 and minReadySeconds 5", groups)
		}
		ctx, stop := context.WithCancel(t.Context())
		least := make(chan int32, 1)
		go func() {
			lowest := int32(4)
			defer func() { least <- lowest }()
			w, err := cs.AppsV1().Deployments(ns).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=api"})
			if err != nil {
				t.Errorf("watch the Deployment: %v", err)
				return
			}
			defer w.Stop()
			for ev := range w.ResultChan() {
				if d, ok := ev.Object.(*appsv1.Deployment); ok {
					lowest = min(lowest, d.Status.AvailableReplicas)
				}
			}
		}()
		rs := fix.NewEngine(clients, fix.Options{Registry: reg, WaitTimeout: 3 * time.Minute, PollInterval: 500 * time.Millisecond}).Run(t.Context(), prepared)
		stop()
		for _, r := range rs {
			if r.Status != fix.StatusApplied {
				t.Errorf("result %+v, want applied", r)
			}
		}
		if got := <-least; got != 3 {
			t.Errorf("the Deployment reported %d available pods at its lowest during the fix, want 3 (replicas 4 - maxUnavailable 1)", got)
		}
	})

	t.Run("a Deployment of one replica is refused unless the action is named", func(t *testing.T) {
		orig := bgCreateDeployment(t, cs, "bg-deploy-one", 1, 0)
		rs := fix.NewEngine(clients, fix.Options{Registry: reg}).Run(t.Context(), fix.Prepare(t.Context(), clients, nil, plan(t, "bg-deploy-one"), ""))
		// maxUnavailable 25% of 1 rounded down is 0 (maxSurge rounds up to 1).
		if len(rs) != 1 || rs[0].Status != fix.StatusRefused || !strings.Contains(rs[0].Reason, "has 1 replica") {
			t.Fatalf("results %+v, want one refusal for the single replica", rs)
		}
		pods, err := cs.CoreV1().Pods("bg-deploy-one").List(t.Context(), metav1.ListOptions{LabelSelector: "app=api"})
		if err != nil || len(pods.Items) != 1 || !orig[pods.Items[0].UID] || pods.Items[0].DeletionTimestamp != nil {
			t.Errorf("the single pod should be untouched: %v %d pods", err, len(pods.Items))
		}
	})
}

// bgCreateDeployment creates a Deployment whose pods the annotated check proposes to evict, waits
// until its replicas are Ready, and returns their UIDs.
func bgCreateDeployment(t *testing.T, cs kubernetes.Interface, ns string, replicas, minReadySeconds int32) map[types.UID]bool {
	t.Helper()
	ctx := t.Context()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app": "api"}
	_, err := cs.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: ns},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, MinReadySeconds: minReadySeconds, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels,
					Annotations: map[string]string{engineAnnotFixes: engineFixes(t, report.Fix{Action: "evict-pod", Risk: report.RiskMedium})}},
				Spec: rzPodSpec(rzImage(1), nil)}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create Deployment: %v", err)
	}
	orig := map[types.UID]bool{}
	eventually(t, time.Minute, "the Deployment's pods Ready", func(ctx context.Context) (bool, error) {
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=api"})
		if err != nil {
			return false, err
		}
		clear(orig)
		for _, p := range pods.Items {
			if !bgServing(&p) {
				return false, nil
			}
			orig[p.UID] = true
		}
		return len(orig) == int(replicas), nil
	})
	eventually(t, time.Minute, "the Deployment's replicas available", func(ctx context.Context) (bool, error) {
		d, err := cs.AppsV1().Deployments(ns).Get(ctx, "api", metav1.GetOptions{})
		return err == nil && d.Status.AvailableReplicas == replicas, err
	})
	return orig
}
