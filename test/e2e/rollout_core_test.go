package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/scenario/kubelet"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// The node pools of the core scenarios: applications, daemons on healthy nodes, daemons on edge
// nodes some of which die, and one small node an autoscaled Deployment outgrows.
const (
	corePoolApps    = "core-apps"
	corePoolDaemons = "core-daemons"
	corePoolEdge    = "core-edge"
	corePoolSmall   = "core-small"
)

// coreScenario is one namespace's workload, the state kube-controller-manager leaves it in, and what
// the scan says of it.
type coreScenario struct {
	ns string
	// build creates the state, checks that the controllers produced it, and fills in evidence and
	// others, which name what the controllers named.
	build func(t *testing.T)
	// The stalled workload rollout-stalled reports (kind "" for a healthy state), its root cause,
	// and what its evidence and message must say.
	kind, name, rootCause string
	evidence              []string
	// others are the other findings on objects in ns, as coreKey writes them.
	others []string
	// judge asserts more of the workload's finding.
	judge func(t *testing.T, rep *report.Report, f report.Finding)
	// byDeadline: the Deployment controller's own deadline stalls it, so the scan without --min-age
	// reports it as well.
	byDeadline bool
}

// want are the keys of the findings the scan with --min-age 0s reports in the namespace.
func (s *coreScenario) want() []string {
	want := slices.Clone(s.others)
	if s.kind != "" {
		want = append(want, fmt.Sprintf("rollout-stalled %s %s/%s", s.rootCause, s.kind, s.name))
	}
	slices.Sort(want)
	return want
}

// assert checks the scenario's findings in the scan with --min-age 0s.
func (s *coreScenario) assert(t *testing.T, rep *report.Report) {
	t.Helper()
	if got, want := coreFindings(rep, s.ns), s.want(); !slices.Equal(got, want) {
		t.Fatalf("findings in %s:\n  %s\nwant:\n  %s\nall findings:\n%s", s.ns, strings.Join(got, "\n  "), strings.Join(want, "\n  "), summaries(rep))
	}
	if s.kind == "" {
		return
	}
	f := coreFinding(t, rep, "rollout-stalled", s.kind, s.ns, s.name)
	t.Logf("%s: %s\n  %s\n  %s\n  blockedBy %+v", f.RootCause.ID, f.Summary, f.RootCause.Message, strings.Join(f.RootCause.Evidence, "\n  "), f.BlockedBy)
	// Every root cause of a core workload needs a person: none offers a fix.
	assertFinding(t, f, s.rootCause, report.SeverityError, s.evidence, nil)
	if f.Object.APIVersion != "apps/v1" || f.Object.UID == "" {
		t.Errorf("finding object %+v, want the apps/v1 workload with its UID", f.Object)
	}
	if s.judge != nil {
		s.judge(t, rep, f)
	}
}

// imagePullEvidence is what a finding on a pod that cannot pull coreImageBroken quotes: the pod,
// the image and the kubelet's message.
func imagePullEvidence(pod string) []string {
	return []string{pod, coreImageBroken, fmt.Sprintf("Back-off pulling image %q", coreImageBroken)}
}

// TestRolloutStalledCoreWorkloads (issue 26) rolls Deployments and DaemonSets on the real
// kube-controller-manager, scheduler and kwok into the states a platform engineer meets every
// week, and their healthy neighbours, each in its own namespace on one cluster. One scan with
// --min-age 0s must name each stuck rollout's root cause and say nothing of the healthy ones; a
// scan with the default threshold (10m) reports only what the Deployment controller itself
// declared failed past its progressDeadlineSeconds.
func TestRolloutStalledCoreWorkloads(t *testing.T) {
	t.Parallel()
	pluginBinary(t)
	c, _ := scenarioCluster(t)
	e := &coreEnv{cs: c.Clientset()}

	for pool, n := range map[string]int{corePoolApps: 2, corePoolDaemons: 2, corePoolEdge: 4} {
		for i := range n {
			e.node(t, fmt.Sprintf("%s-%d", pool, i), pool, "16")
		}
	}
	e.node(t, corePoolSmall+"-0", corePoolSmall, "2")

	scenarios := []*coreScenario{
		e.deploymentImagePull(), e.deploymentUnschedulable(), e.deploymentQuota(),
		e.daemonSetImagePull(), e.daemonSetNodesDown(),
		e.deploymentPaused(), e.deploymentWithinDeadline(), e.deploymentMinReady(), e.deploymentComplete(),
		e.deploymentZero(), e.deploymentAutoscaled(), e.deploymentDraining(),
		e.daemonSetOnDelete(), e.daemonSetComplete(), e.daemonSetMinReady(), e.daemonSetDraining(),
	}
	t.Run("states", func(t *testing.T) {
		for _, s := range scenarios {
			t.Run(s.ns, func(t *testing.T) {
				t.Parallel()
				createNamespace(t, c, s.ns)
				s.build(t)
			})
		}
	})
	if t.Failed() {
		t.FailNow()
	}

	rep := pluginOn(c.Kubeconfig).scan(t, "-A", "-o", "json", "--min-age", "0s").wantExit(2).agreed()
	total := 0
	for _, s := range scenarios {
		t.Run(s.ns, func(t *testing.T) { s.assert(t, rep) })
		total += len(s.want())
	}
	if len(rep.Findings) != total {
		t.Errorf("%d findings, want %d in the scenarios' namespaces:\n%s", len(rep.Findings), total, summaries(rep))
	}

	// The default threshold (10m) has not passed for anything the check times itself; the
	// Deployment controller's ProgressDeadlineExceeded is its own verdict and needs none.
	t.Run("without --min-age only the Deployments past their own deadline", func(t *testing.T) {
		def := pluginOn(c.Kubeconfig).scan(t, "-A", "-o", "json").wantExit(2).report()
		var got, want []string
		for _, f := range def.Findings {
			got = append(got, f.Object.Namespace+" "+coreKey(f))
		}
		for _, s := range scenarios {
			if s.byDeadline {
				for _, k := range s.want() {
					want = append(want, s.ns+" "+k)
				}
			}
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("findings:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
		}
	})
}

// A Deployment rolled to an image nobody can pull. The old pods keep serving (maxUnavailable 25%
// of 2 rounds down to 0, the surge pod is the only new one), no new pod becomes ready, and once
// progressDeadlineSeconds pass without progress syncRolloutStatus sets Progressing=False reason
// ProgressDeadlineExceeded (pkg/controller/deployment/progress.go, DeploymentTimedOut in
// util/deployment_util.go, kubernetes v1.37.1).
func (e *coreEnv) deploymentImagePull() *coreScenario {
	s := &coreScenario{ns: "core-deploy-image-pull", kind: "Deployment", name: "web", rootCause: "image-pull-failing", byDeadline: true}
	s.build = func(t *testing.T) {
		d := coreDeployment("web", 2, coreTemplate("web", corePoolApps))
		d.Spec.ProgressDeadlineSeconds = ptr.To[int32](10)
		e.createDeployment(t, s.ns, d)
		e.patch(t, s.ns, "deployments", "web", coreRollTo(coreImageBroken, kubelet.ErrImagePull))
		got := e.waitDeployment(t, s.ns, "web", "Progressing=False ProgressDeadlineExceeded", func(d *appsv1.Deployment) bool {
			return coreCondition(d, appsv1.DeploymentProgressing, corev1.ConditionFalse, "ProgressDeadlineExceeded")
		})
		if !coreCondition(got, appsv1.DeploymentAvailable, corev1.ConditionTrue, "MinimumReplicasAvailable") || got.Status.AvailableReplicas != 2 {
			t.Fatalf("the old pods should keep the Deployment available: %s", coreDeploymentState(got))
		}
		pods := e.newPods(t, got, "the new pod waiting in ImagePullBackOff", func(pods []corev1.Pod) bool {
			return len(pods) == 1 && imagePullBackOff(&pods[0], coreImageBroken)
		})
		s.evidence = imagePullEvidence(pods[0].Name)
		t.Logf("%s\n%s", coreDeploymentState(got), corePodsState(pods))
	}
	return s
}

// A Deployment whose new pods fit no node: the new template selects a node pool that does not
// exist. The scheduler leaves the surge pod PodScheduled=False reason Unschedulable with its
// FailedScheduling message (how many nodes, why each was filtered), and the Deployment passes its
// deadline as above.
func (e *coreEnv) deploymentUnschedulable() *coreScenario {
	s := &coreScenario{ns: "core-deploy-unschedulable", kind: "Deployment", name: "web", rootCause: "pods-unschedulable", byDeadline: true}
	s.build = func(t *testing.T) {
		d := coreDeployment("web", 2, coreTemplate("web", corePoolApps))
		d.Spec.ProgressDeadlineSeconds = ptr.To[int32](10)
		e.createDeployment(t, s.ns, d)
		e.patch(t, s.ns, "deployments", "web", `{"spec":{"template":{"spec":{"nodeSelector":{"pool":"core-gpu"}}}}}`)
		got := e.waitDeployment(t, s.ns, "web", "Progressing=False ProgressDeadlineExceeded", func(d *appsv1.Deployment) bool {
			return coreCondition(d, appsv1.DeploymentProgressing, corev1.ConditionFalse, "ProgressDeadlineExceeded")
		})
		pods := e.newPods(t, got, "the new pod unschedulable", func(pods []corev1.Pod) bool {
			if len(pods) != 1 {
				return false
			}
			c := podCondition(&pods[0], corev1.PodScheduled)
			return c != nil && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable &&
				strings.Contains(c.Message, "didn't match Pod's node affinity/selector")
		})
		nodes, err := e.cs.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s.evidence = []string{pods[0].Name, fmt.Sprintf("0/%d nodes are available", len(nodes.Items)), "didn't match Pod's node affinity/selector"}
		t.Logf("%s\n%s", coreDeploymentState(got), corePodsState(pods))
	}
	return s
}

// A Deployment with maxUnavailable 0 whose surge pod a ResourceQuota refuses: the quota's
// requests.cpu is exactly what the old pods use. The ReplicaSet controller's create fails, and
// calculateStatus records ReplicaFailure=True reason FailedCreate with the apiserver's message on
// the new ReplicaSet (manageReplicas in pkg/controller/replicaset/replica_set.go,
// replica_set_utils.go); the Deployment copies it (getReplicaFailures, deployment/progress.go).
// No pod is taken away, so the Deployment stays Available=True, and the rollout never starts.
func (e *coreEnv) deploymentQuota() *coreScenario {
	s := &coreScenario{ns: "core-deploy-quota", kind: "Deployment", name: "web", rootCause: "pod-creation-refused",
		evidence: []string{"exceeded quota: compute", "ResourceQuota compute", "requests.cpu: requested 500m, used 1, hard 1"}}
	s.build = func(t *testing.T) {
		tmpl := coreTemplate("web", corePoolApps)
		tmpl.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("500m")
		d := coreDeployment("web", 2, tmpl)
		d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
			MaxUnavailable: ptr.To(intstr.FromInt32(0)), MaxSurge: ptr.To(intstr.FromInt32(1))}}
		e.createDeployment(t, s.ns, d)

		q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "compute"},
			Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourceRequestsCPU: resource.MustParse("1")}}}
		if _, err := e.cs.CoreV1().ResourceQuotas(s.ns).Create(t.Context(), q, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// The quota admits or refuses by the usage kube-controller-manager's quota controller wrote.
		coreWait(t, time.Minute, "quota compute to count the old pods", func(ctx context.Context) (*corev1.ResourceQuota, error) {
			return e.cs.CoreV1().ResourceQuotas(s.ns).Get(ctx, "compute", metav1.GetOptions{})
		}, func(q *corev1.ResourceQuota) bool {
			used := q.Status.Used[corev1.ResourceRequestsCPU]
			return used.Cmp(resource.MustParse("1")) == 0
		}, func(q *corev1.ResourceQuota) string {
			return fmt.Sprintf("hard %v used %v", q.Status.Hard, q.Status.Used)
		})

		e.patch(t, s.ns, "deployments", "web", coreRollTo(coreImageNext, ""))
		got := e.waitDeployment(t, s.ns, "web", "ReplicaFailure=True FailedCreate quoting the quota", func(d *appsv1.Deployment) bool {
			return coreCondition(d, appsv1.DeploymentReplicaFailure, corev1.ConditionTrue, "FailedCreate") &&
				strings.Contains(coreConditionOf(d, appsv1.DeploymentReplicaFailure).Message, "exceeded quota: compute")
		})
		if !coreCondition(got, appsv1.DeploymentAvailable, corev1.ConditionTrue, "MinimumReplicasAvailable") || got.Status.AvailableReplicas != 2 || got.Status.UpdatedReplicas != 0 {
			t.Fatalf("want the Deployment Available=True on its 2 old pods and no new pod: %s", coreDeploymentState(got))
		}
		if c := coreConditionOf(got, appsv1.DeploymentProgressing); c.Reason == "ProgressDeadlineExceeded" {
			t.Fatalf("the default 10m deadline cannot have passed: %s", coreDeploymentState(got))
		}
		rs := e.newReplicaSet(t, got)
		if *rs.Spec.Replicas != 1 || rs.Status.Replicas != 0 {
			t.Fatalf("the new ReplicaSet %s wants %d pods and has %d, want 1 and 0", rs.Name, *rs.Spec.Replicas, rs.Status.Replicas)
		}
		t.Logf("%s", coreDeploymentState(got))
	}
	return s
}

// A DaemonSet rolled to an image nobody can pull. rollingUpdate (pkg/controller/daemon/update.go)
// deletes one available old pod (maxUnavailable 1), manage creates its replacement, which never
// becomes available; with one pod unavailable no other old pod is replaced.
func (e *coreEnv) daemonSetImagePull() *coreScenario {
	s := &coreScenario{ns: "core-daemon-image-pull", kind: "DaemonSet", name: "agent", rootCause: "image-pull-failing"}
	s.build = func(t *testing.T) {
		e.createDaemonSet(t, s.ns, coreDaemonSet("agent", coreTemplate("agent", corePoolDaemons)), 2)
		e.patch(t, s.ns, "daemonsets", "agent", coreRollTo(coreImageBroken, kubelet.ErrImagePull))
		pods := e.waitPods(t, s.ns, "app=agent", "one new pod in ImagePullBackOff beside one old pod", func(pods []corev1.Pod) bool {
			var broken, old int
			for i := range pods {
				switch {
				case imagePullBackOff(&pods[i], coreImageBroken):
					broken++
				case pods[i].Spec.Containers[0].Image == coreImage && podReady(&pods[i]) == corev1.ConditionTrue:
					old++
				}
			}
			return len(pods) == 2 && broken == 1 && old == 1
		})
		for _, p := range pods {
			if p.Spec.Containers[0].Image == coreImageBroken {
				s.evidence = imagePullEvidence(p.Name)
			}
		}
		ds := e.waitDaemonSet(t, s.ns, "agent", "1 of 2 updated, 1 unavailable", func(ds *appsv1.DaemonSet) bool {
			return coreDaemonSetObserved(ds) && ds.Status.UpdatedNumberScheduled == 1 && ds.Status.NumberUnavailable == 1
		})
		t.Logf("%s\n%s", coreDaemonSetState(ds), corePodsState(pods))
	}
	return s
}

// A DaemonSet whose rolling update is frozen by dead nodes. Two of the pool's four kubelets stop
// heartbeating; the node-lifecycle controller turns the nodes Ready=Unknown, taints them
// unreachable and marks their pods not Ready (monitorNodeHealth, MarkPodsNotReady,
// pkg/controller/nodelifecycle). DaemonSet pods tolerate the unreachable NoExecute taint
// (AddOrUpdateDaemonPodTolerations, daemon/util), so the pods stay. Then the DaemonSet is rolled:
// rollingUpdate deletes the unavailable old pods on the dead nodes at once, which no kubelet
// finishes, and counts each of those nodes unavailable (findUpdatedPodsOnNode skips a pod being
// deleted; manage creates no pod on a node that still has one): two unavailable nodes use up
// maxUnavailable 2 and no healthy node's pod is ever replaced. The DaemonSet's status looks
// healthy: the tainted nodes are not desired any more (nodeShouldRunDaemonPod), so every desired
// pod is available, and only updatedNumberScheduled 0 shows the rollout stands still.
func (e *coreEnv) daemonSetNodesDown() *coreScenario {
	dead := []string{corePoolEdge + "-2", corePoolEdge + "-3"}
	s := &coreScenario{ns: "core-daemon-nodes-down", kind: "DaemonSet", name: "node-agent", rootCause: "daemonset-nodes-unavailable", evidence: dead}
	stuck := map[string]string{} // node: its Terminating pod
	s.build = func(t *testing.T) {
		tmpl := coreTemplate("node-agent", corePoolEdge)
		tmpl.Spec.TerminationGracePeriodSeconds = ptr.To[int64](1)
		ds := coreDaemonSet("node-agent", tmpl)
		ds.Spec.UpdateStrategy = appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType,
			RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: ptr.To(intstr.FromInt32(2))}}
		e.createDaemonSet(t, s.ns, ds, 4)
		for _, n := range dead {
			e.stopKubelet(t, n)
		}
		for _, n := range dead {
			waitNodeReady(t, e.cs, n, corev1.ConditionUnknown)
		}
		onDead := func(p *corev1.Pod) bool { return slices.Contains(dead, p.Spec.NodeName) }
		e.waitPods(t, s.ns, "app=node-agent", "the pods on the dead nodes marked not Ready", func(pods []corev1.Pod) bool {
			n := 0
			for i := range pods {
				if onDead(&pods[i]) && podReady(&pods[i]) == corev1.ConditionFalse {
					n++
				}
			}
			return n == len(dead)
		})

		e.patch(t, s.ns, "daemonsets", "node-agent", coreRollTo(coreImageNext, ""))
		// The dead nodes' pods are deleted and, past their 1s grace period, still there.
		pods := e.waitPods(t, s.ns, "app=node-agent", "the dead nodes' pods Terminating past their grace period", func(pods []corev1.Pod) bool {
			n := 0
			for i := range pods {
				if p := &pods[i]; onDead(p) && p.DeletionTimestamp != nil && time.Now().After(p.DeletionTimestamp.Add(time.Second)) {
					n++
				}
			}
			return n == len(dead)
		})
		for _, p := range pods {
			switch {
			case onDead(&p):
				stuck[p.Spec.NodeName] = p.Name
			case p.Spec.Containers[0].Image != coreImage || p.DeletionTimestamp != nil || podReady(&p) != corev1.ConditionTrue:
				t.Fatalf("a healthy node's pod was replaced: the rollout is not frozen\n%s", corePodsState(pods))
			}
		}
		got := e.waitDaemonSet(t, s.ns, "node-agent", "the rollout observed, nothing updated", func(ds *appsv1.DaemonSet) bool {
			return coreDaemonSetObserved(ds) && ds.Status.UpdatedNumberScheduled == 0 && ds.Status.DesiredNumberScheduled == 2
		})
		for _, p := range stuck {
			s.others = append(s.others, "stuck-terminating node-not-ready Pod/"+p)
		}
		t.Logf("%s\n%s", coreDaemonSetState(got), corePodsState(pods))
	}
	// The dead nodes' pods stuck Terminating are what the DaemonSet waits on.
	s.judge = func(t *testing.T, rep *report.Report, f report.Finding) {
		var blocked []string
		for _, b := range f.BlockedBy {
			pod := coreFinding(t, rep, "stuck-terminating", "Pod", s.ns, b.Name)
			if b.Kind != "Pod" || b.Namespace != s.ns || b.FindingID != pod.ID {
				t.Errorf("blockedBy %+v, want the pod's stuck-terminating finding %s", b, pod.ID)
			}
			blocked = append(blocked, b.Name)
		}
		slices.Sort(blocked)
		want := slices.Sorted(maps.Values(stuck))
		if !slices.Equal(blocked, want) {
			t.Errorf("blockedBy %v, want the dead nodes' Terminating pods %v", blocked, want)
		}
	}
	return s
}

// A paused Deployment whose template changed: the controller only syncs it (syncDeployment,
// deployment_controller.go), creates no ReplicaSet for the new template and sets Progressing
// reason DeploymentPaused, which is never judged against the deadline (checkPausedConditions,
// sync.go). The state is kept past the 10s deadline before the scan.
func (e *coreEnv) deploymentPaused() *coreScenario {
	s := &coreScenario{ns: "core-deploy-paused"}
	s.build = func(t *testing.T) {
		d := coreDeployment("web", 2, coreTemplate("web", corePoolApps))
		d.Spec.ProgressDeadlineSeconds = ptr.To[int32](10)
		e.createDeployment(t, s.ns, d)
		e.patch(t, s.ns, "deployments", "web", `{"spec":{"paused":true}}`)
		e.patch(t, s.ns, "deployments", "web", coreRollTo(coreImageBroken, kubelet.ErrImagePull))
		got := e.waitDeployment(t, s.ns, "web", "Progressing reason DeploymentPaused past the deadline", func(d *appsv1.Deployment) bool {
			c := coreConditionOf(d, appsv1.DeploymentProgressing)
			return coreDeploymentObserved(d) && c.Reason == "DeploymentPaused" &&
				time.Since(c.LastUpdateTime.Time) > 11*time.Second
		})
		rss, err := e.cs.AppsV1().ReplicaSets(s.ns).List(t.Context(), metav1.ListOptions{})
		// No pod has the new template (calculateStatus counts updatedReplicas by it), none was replaced.
		if err != nil || len(rss.Items) != 1 || got.Status.UpdatedReplicas != 0 || got.Status.AvailableReplicas != 2 {
			t.Fatalf("a paused Deployment should not roll (%v): %d ReplicaSets, %s", err, len(rss.Items), coreDeploymentState(got))
		}
		t.Logf("%s", coreDeploymentState(got))
	}
	return s
}

// A rollout to an image nobody can pull, within its progressDeadlineSeconds (600): the controller
// has not given up (Progressing=True), and neither does the check.
func (e *coreEnv) deploymentWithinDeadline() *coreScenario {
	s := &coreScenario{ns: "core-deploy-within-deadline"}
	s.build = func(t *testing.T) {
		e.createDeployment(t, s.ns, coreDeployment("web", 2, coreTemplate("web", corePoolApps)))
		e.patch(t, s.ns, "deployments", "web", coreRollTo(coreImageBroken, kubelet.ErrImagePull))
		got := e.waitDeployment(t, s.ns, "web", "the rollout under way", func(d *appsv1.Deployment) bool {
			// NewReplicaSetCreated, or ReplicaSetUpdated once a later sync saw progress (progress.go).
			c := coreConditionOf(d, appsv1.DeploymentProgressing)
			return coreDeploymentObserved(d) && d.Status.UpdatedReplicas == 1 && c.Status == corev1.ConditionTrue &&
				(c.Reason == "NewReplicaSetCreated" || c.Reason == "ReplicaSetUpdated")
		})
		pods := e.newPods(t, got, "the new pod waiting in ImagePullBackOff", func(pods []corev1.Pod) bool {
			return len(pods) == 1 && imagePullBackOff(&pods[0], coreImageBroken)
		})
		t.Logf("%s\n%s", coreDeploymentState(got), corePodsState(pods))
	}
	return s
}

// A rollout waiting out minReadySeconds: the template and minReadySeconds 600 change together. The
// new ReplicaSet gets the new minReadySeconds, the old one keeps its own (getNewReplicaSet,
// sync.go, updates only the new one), so the old pods stay available, the surge pod is Ready but
// not available for 10 minutes, and maxUnavailable 0 lets no old pod go (reconcileOldReplicaSets,
// rolling.go).
func (e *coreEnv) deploymentMinReady() *coreScenario {
	s := &coreScenario{ns: "core-deploy-min-ready"}
	s.build = func(t *testing.T) {
		e.createDeployment(t, s.ns, coreDeployment("web", 2, coreTemplate("web", corePoolApps)))
		e.patch(t, s.ns, "deployments", "web", `{"spec":{"minReadySeconds":600,"progressDeadlineSeconds":900,`+
			`"template":{"spec":{"containers":[{"name":"app","image":"`+coreImageNext+`"}]}}}}`)
		got := e.waitDeployment(t, s.ns, "web", "the surge pod Ready, not yet available", func(d *appsv1.Deployment) bool {
			return coreDeploymentObserved(d) && d.Status.UpdatedReplicas == 1 &&
				d.Status.ReadyReplicas == 3 && d.Status.AvailableReplicas == 2
		})
		if c := coreConditionOf(got, appsv1.DeploymentProgressing); c.Status != corev1.ConditionTrue {
			t.Fatalf("want Progressing=True: %s", coreDeploymentState(got))
		}
		t.Logf("%s", coreDeploymentState(got))
	}
	return s
}

// A completed rollout: Progressing reason NewReplicaSetAvailable, the old ReplicaSet scaled to 0.
func (e *coreEnv) deploymentComplete() *coreScenario {
	s := &coreScenario{ns: "core-deploy-complete"}
	s.build = func(t *testing.T) {
		e.createDeployment(t, s.ns, coreDeployment("web", 2, coreTemplate("web", corePoolApps)))
		e.patch(t, s.ns, "deployments", "web", coreRollTo(coreImageNext, ""))
		got := e.waitDeployment(t, s.ns, "web", "the second rollout to complete", func(d *appsv1.Deployment) bool {
			return coreDeploymentComplete(d) && d.Annotations["deployment.kubernetes.io/revision"] == "2"
		})
		t.Logf("%s", coreDeploymentState(got))
	}
	return s
}

// A Deployment of zero replicas rolled to an image nobody can pull, with a 10s deadline: no pod is
// wanted, so the rollout is complete at once (syncRolloutStatus: DeploymentComplete).
func (e *coreEnv) deploymentZero() *coreScenario {
	s := &coreScenario{ns: "core-deploy-zero"}
	s.build = func(t *testing.T) {
		d := coreDeployment("web", 0, coreTemplate("web", corePoolApps))
		d.Spec.ProgressDeadlineSeconds = ptr.To[int32](10)
		e.createDeployment(t, s.ns, d)
		e.patch(t, s.ns, "deployments", "web", coreRollTo(coreImageBroken, kubelet.ErrImagePull))
		got := e.waitDeployment(t, s.ns, "web", "the rollout of no pod complete", func(d *appsv1.Deployment) bool {
			return coreDeploymentComplete(d) && d.Annotations["deployment.kubernetes.io/revision"] == "2"
		})
		t.Logf("%s", coreDeploymentState(got))
	}
	return s
}

// An autoscaler scales a Deployment beyond what its node pool holds: through the scale
// subresource, as the HPA does, from 2 to 4 pods of 1 CPU on a 2-CPU node. That is a scaling
// event, not a rollout: every pod is on the current ReplicaSet and the rollout's
// NewReplicaSetAvailable stays (syncRolloutStatus estimates no progress for a complete
// Deployment), while Available turns False MinimumReplicasUnavailable and two pods wait for
// capacity.
func (e *coreEnv) deploymentAutoscaled() *coreScenario {
	s := &coreScenario{ns: "core-deploy-autoscaled"}
	s.build = func(t *testing.T) {
		tmpl := coreTemplate("web", corePoolSmall)
		tmpl.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("1")
		e.createDeployment(t, s.ns, coreDeployment("web", 2, tmpl))
		scale, err := e.cs.AppsV1().Deployments(s.ns).GetScale(t.Context(), "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		scale.Spec.Replicas = 4
		if _, err := e.cs.AppsV1().Deployments(s.ns).UpdateScale(t.Context(), "web", scale, metav1.UpdateOptions{FieldManager: "horizontal-pod-autoscaler"}); err != nil {
			t.Fatal(err)
		}
		pods := e.waitPods(t, s.ns, "app=web", "two pods waiting for capacity", func(pods []corev1.Pod) bool {
			n := 0
			for i := range pods {
				if c := podCondition(&pods[i], corev1.PodScheduled); c != nil && c.Reason == corev1.PodReasonUnschedulable {
					n++
				}
			}
			return len(pods) == 4 && n == 2
		})
		got := e.waitDeployment(t, s.ns, "web", "scaled, not available", func(d *appsv1.Deployment) bool {
			return coreDeploymentObserved(d) && d.Status.Replicas == 4 && d.Status.UpdatedReplicas == 4 &&
				d.Status.AvailableReplicas == 2 && coreCondition(d, appsv1.DeploymentAvailable, corev1.ConditionFalse, "MinimumReplicasUnavailable")
		})
		if !coreCondition(got, appsv1.DeploymentProgressing, corev1.ConditionTrue, "NewReplicaSetAvailable") {
			t.Fatalf("a scale is no rollout: want Progressing NewReplicaSetAvailable: %s", coreDeploymentState(got))
		}
		t.Logf("%s\n%s", coreDeploymentState(got), corePodsState(pods))
	}
	return s
}

// A completed rollout whose old pods are still shutting down within their grace period (3600s;
// kwok stops them only when it runs out, kubelet.StopsAtGraceLabel). The ReplicaSet controller
// counts them apart (calculateStatus, replica_set_utils.go: terminatingReplicas), the Deployment
// is complete.
func (e *coreEnv) deploymentDraining() *coreScenario {
	s := &coreScenario{ns: "core-deploy-draining"}
	s.build = func(t *testing.T) {
		tmpl := coreTemplate("web", corePoolApps)
		tmpl.Labels[kubelet.StopsAtGraceLabel] = "true"
		tmpl.Spec.TerminationGracePeriodSeconds = ptr.To[int64](3600)
		e.createDeployment(t, s.ns, coreDeployment("web", 2, tmpl))
		e.patch(t, s.ns, "deployments", "web", coreRollTo(coreImageNext, ""))
		got := e.waitDeployment(t, s.ns, "web", "complete, the old pods terminating", func(d *appsv1.Deployment) bool {
			return coreDeploymentComplete(d) && d.Annotations["deployment.kubernetes.io/revision"] == "2" &&
				d.Status.TerminatingReplicas != nil && *d.Status.TerminatingReplicas == 2
		})
		pods := e.waitPods(t, s.ns, "app=web", "two old pods within their grace period", func(pods []corev1.Pod) bool {
			n := 0
			for _, p := range pods {
				if p.DeletionTimestamp != nil && p.DeletionTimestamp.After(time.Now().Add(time.Minute)) {
					n++
				}
			}
			return n == 2
		})
		t.Logf("%s\n%s", coreDeploymentState(got), corePodsState(pods))
	}
	return s
}

// An OnDelete DaemonSet whose template changed: the controller replaces a pod only when someone
// deletes it (updateDaemonSet, daemon_controller.go, runs no rollingUpdate), by design.
func (e *coreEnv) daemonSetOnDelete() *coreScenario {
	s := &coreScenario{ns: "core-daemon-on-delete"}
	s.build = func(t *testing.T) {
		ds := coreDaemonSet("agent", coreTemplate("agent", corePoolDaemons))
		ds.Spec.UpdateStrategy = appsv1.DaemonSetUpdateStrategy{Type: appsv1.OnDeleteDaemonSetStrategyType}
		e.createDaemonSet(t, s.ns, ds, 2)
		e.patch(t, s.ns, "daemonsets", "agent", coreRollTo(coreImageBroken, kubelet.ErrImagePull))
		got := e.waitDaemonSet(t, s.ns, "agent", "the new template observed, no pod updated", func(ds *appsv1.DaemonSet) bool {
			return coreDaemonSetObserved(ds) && ds.Status.UpdatedNumberScheduled == 0 && ds.Status.NumberAvailable == 2
		})
		t.Logf("%s", coreDaemonSetState(got))
	}
	return s
}

// A completed DaemonSet rollout: every pod updated and available.
func (e *coreEnv) daemonSetComplete() *coreScenario {
	s := &coreScenario{ns: "core-daemon-complete"}
	s.build = func(t *testing.T) {
		e.createDaemonSet(t, s.ns, coreDaemonSet("agent", coreTemplate("agent", corePoolDaemons)), 2)
		e.patch(t, s.ns, "daemonsets", "agent", coreRollTo(coreImageNext, ""))
		got := e.waitDaemonSet(t, s.ns, "agent", "every pod updated and available", func(ds *appsv1.DaemonSet) bool {
			return coreDaemonSetObserved(ds) && ds.Status.UpdatedNumberScheduled == 2 && ds.Status.NumberAvailable == 2
		})
		t.Logf("%s", coreDaemonSetState(got))
	}
	return s
}

// A DaemonSet rollout waiting out minReadySeconds (3600): its pods are Ready and count available
// only an hour after (IsPodAvailable). Rolled, the old pods are not available either, so
// rollingUpdate replaces them all at once; the new pods are Ready and wait.
func (e *coreEnv) daemonSetMinReady() *coreScenario {
	s := &coreScenario{ns: "core-daemon-min-ready"}
	s.build = func(t *testing.T) {
		ds := coreDaemonSet("agent", coreTemplate("agent", corePoolDaemons))
		ds.Spec.MinReadySeconds = 3600
		if _, err := e.cs.AppsV1().DaemonSets(s.ns).Create(t.Context(), ds, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		e.waitDaemonSet(t, s.ns, "agent", "its pods Ready", func(ds *appsv1.DaemonSet) bool {
			return coreDaemonSetObserved(ds) && ds.Status.DesiredNumberScheduled == 2 && ds.Status.NumberReady == 2
		})
		e.patch(t, s.ns, "daemonsets", "agent", coreRollTo(coreImageNext, ""))
		got := e.waitDaemonSet(t, s.ns, "agent", "every pod updated and Ready, none available yet", func(ds *appsv1.DaemonSet) bool {
			return coreDaemonSetObserved(ds) && ds.Status.UpdatedNumberScheduled == 2 && ds.Status.NumberReady == 2 && ds.Status.NumberAvailable == 0
		})
		t.Logf("%s", coreDaemonSetState(got))
	}
	return s
}

// A DaemonSet rollout waiting for an old pod's graceful shutdown (3600s): rollingUpdate deleted it,
// manage creates no pod on the node while it is there, and with that node unavailable
// (maxUnavailable 1) no other pod is replaced yet.
func (e *coreEnv) daemonSetDraining() *coreScenario {
	s := &coreScenario{ns: "core-daemon-draining"}
	s.build = func(t *testing.T) {
		tmpl := coreTemplate("agent", corePoolDaemons)
		tmpl.Labels[kubelet.StopsAtGraceLabel] = "true"
		tmpl.Spec.TerminationGracePeriodSeconds = ptr.To[int64](3600)
		e.createDaemonSet(t, s.ns, coreDaemonSet("agent", tmpl), 2)
		e.patch(t, s.ns, "daemonsets", "agent", coreRollTo(coreImageNext, ""))
		pods := e.waitPods(t, s.ns, "app=agent", "one old pod within its grace period, no new pod", func(pods []corev1.Pod) bool {
			n := 0
			for _, p := range pods {
				if p.Spec.Containers[0].Image != coreImage {
					return false
				}
				if p.DeletionTimestamp != nil && p.DeletionTimestamp.After(time.Now().Add(time.Minute)) {
					n++
				}
			}
			return len(pods) == 2 && n == 1
		})
		got := e.waitDaemonSet(t, s.ns, "agent", "the rollout observed, nothing updated", func(ds *appsv1.DaemonSet) bool {
			return coreDaemonSetObserved(ds) && ds.Status.UpdatedNumberScheduled == 0
		})
		t.Logf("%s\n%s", coreDaemonSetState(got), corePodsState(pods))
	}
	return s
}
