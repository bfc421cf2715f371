package rollout

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	ct "github.com/workloaddoctor/kubectl-workloaddoctor/internal/checktest"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// The objects below are built as kube-controller-manager v1.37.1 leaves them: a Deployment's
// status and conditions from syncRolloutStatus (pkg/controller/deployment/progress.go) and
// getReplicaFailures (sync.go), its ReplicaSets named NAME-HASH with the revision annotation
// (getNewReplicaSet, sync.go), a StatefulSet's revisions named NAME-HASH and carried by its pods'
// controller-revision-hash (newVersionedStatefulSetPod, stateful_set_utils.go), a DaemonSet's
// pods labelled with its template generation and revision hash (daemon_controller.go syncNodes).

const (
	rsOld, rsNew = "5f7c9d8b6", "6d4b8c7f9"
)

// deployment is Deployment shop/api at generation 2 rolling to revision 2: three replicas,
// maxUnavailable 25% (0 of 3) and maxSurge 25% (1), its status as the controller writes it.
func deployment(updated, available int32, conds ...appsv1.DeploymentCondition) *appsv1.Deployment {
	d := ct.Deployment("shop", "api", "app", "registry.example.com/api:2.0", 3, available)
	d.Generation, d.Status.ObservedGeneration = 2, 2
	d.Annotations = map[string]string{revisionAnnotation: "2"}
	d.Spec.ProgressDeadlineSeconds = ptr(int32(600))
	d.Status.UpdatedReplicas, d.Status.Replicas = updated, 3+updated
	d.Status.Conditions = conds
	return d
}

func ptr[T any](v T) *T { return &v }

func deadlineCondition(ago time.Duration) appsv1.DeploymentCondition {
	return appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: reasonDeadlineExceeded,
		Message: `ReplicaSet "api-6d4b8c7f9" has timed out progressing.`, LastUpdateTime: metav1.NewTime(ct.Ago(ago)), LastTransitionTime: metav1.NewTime(ct.Ago(ago))}
}

func progressingCondition(ago time.Duration) appsv1.DeploymentCondition {
	return appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "ReplicaSetUpdated",
		Message: `ReplicaSet "api-6d4b8c7f9" is progressing.`, LastUpdateTime: metav1.NewTime(ct.Ago(ago)), LastTransitionTime: metav1.NewTime(ct.Ago(time.Hour))}
}

// replicaSet is the Deployment's ReplicaSet of hash at revision rev.
func replicaSet(d *appsv1.Deployment, hash, rev string, replicas int32) *appsv1.ReplicaSet {
	labels := map[string]string{"app": d.Name, podTemplateHashLabel: hash}
	yes := true
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: d.Namespace, Name: d.Name + "-" + hash, UID: types.UID("uid-rs-" + hash), Labels: labels,
			Annotations:     map[string]string{revisionAnnotation: rev},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: d.Name, UID: d.UID, Controller: &yes}}},
		Spec: appsv1.ReplicaSetSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels}},
	}
}

// rsPod is a pod of the ReplicaSet, Running and Ready on node-1, created createdAgo.
func rsPod(rs *appsv1.ReplicaSet, name string, createdAgo time.Duration, opts ...ct.Option) *corev1.Pod {
	base := []ct.Option{ct.OwnedBy("apps/v1", "ReplicaSet", rs.Name, rs.UID), ct.CreatedAgo(createdAgo), ct.Labels(rs.Spec.Selector.MatchLabels),
		ct.OnNode("node-1"), ct.Containers(corev1.Container{Name: "app", Image: "registry.example.com/api:2.0"}), ct.Running()}
	return readyUnlessSet(ct.Pod(rs.Namespace, name, append(base, opts...)...), createdAgo)
}

// readyUnlessSet makes the pod Ready since ago unless an option set its readiness.
func readyUnlessSet(p *corev1.Pod, ago time.Duration) *corev1.Pod {
	if condition(p, corev1.PodReady) == nil {
		ct.PodReady(corev1.ConditionTrue, ago)(p)
	}
	return p
}

func imagePull() ct.Option {
	return func(m metav1.Object) {
		ct.Waiting("app", "ImagePullBackOff", `Back-off pulling image "registry.example.com/api:2.0"`, 0)(m)
		notReady()(m)
		m.(*corev1.Pod).Status.Phase = corev1.PodPending
	}
}

// A Deployment past its deadline whose new pods cannot pull: image-pull-failing on the
// Deployment, naming the image; no fix.
func TestDeploymentImagePullPastDeadline(t *testing.T) {
	d := deployment(1, 3, deadlineCondition(2*time.Minute))
	old, cur := replicaSet(d, rsOld, "1", 3), replicaSet(d, rsNew, "2", 1)
	c := ct.Cluster{Deployments: []*appsv1.Deployment{d}, ReplicaSets: []*appsv1.ReplicaSet{old, cur},
		Pods: []*corev1.Pod{rsPod(old, "api-5f7c9d8b6-a", time.Hour), rsPod(cur, "api-6d4b8c7f9-x", 12*time.Minute, imagePull())}}
	f := only(t, run(t, c, -1))
	if f.RootCause.ID != RootCauseImagePullFailing || f.Object.Kind != "Deployment" || f.Object.Name != "api" {
		t.Fatalf("got %s on %s", f.RootCause.ID, f.Object)
	}
	evidenceHas(t, f, "pod api-6d4b8c7f9-x container app waits with ImagePullBackOff for image registry.example.com/api:2.0")
	evidenceHas(t, f, "Deployment shop/api: 1 of 3 replicas are on the new ReplicaSet api-6d4b8c7f9, 0 of them available; 3 available in all")
	evidenceHas(t, f, "condition Progressing=False reason ProgressDeadlineExceeded")
	if len(f.Fixes) != 0 {
		t.Errorf("fixes %+v", f.Fixes)
	}
}

// The nearby healthy states leave no finding: the same pods within the deadline, paused,
// not yet observed, complete.
func TestDeploymentHealthyNeighbours(t *testing.T) {
	for name, d := range map[string]*appsv1.Deployment{
		"within its deadline": deployment(1, 3, progressingCondition(time.Minute)),
		"paused": func() *appsv1.Deployment {
			d := deployment(1, 3, deadlineCondition(time.Minute))
			d.Spec.Paused = true
			return d
		}(),
		"not yet observed": func() *appsv1.Deployment {
			d := deployment(1, 3, deadlineCondition(time.Minute))
			d.Generation = 3
			return d
		}(),
		"complete": deployment(3, 3, appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue,
			Reason: "NewReplicaSetAvailable", LastTransitionTime: metav1.NewTime(ct.Ago(time.Minute))}),
	} {
		t.Run(name, func(t *testing.T) {
			cur := replicaSet(d, rsNew, "2", 1)
			c := ct.Cluster{Deployments: []*appsv1.Deployment{d}, ReplicaSets: []*appsv1.ReplicaSet{cur},
				Pods: []*corev1.Pod{rsPod(cur, "api-6d4b8c7f9-x", 12*time.Minute, imagePull())}}
			none(t, run(t, c, -1))
			none(t, run(t, c, 0))
		})
	}
}

// quotaFailure is the ReplicaFailure condition the Deployment copies from its ReplicaSet when a
// ResourceQuota refuses the surge pod.
func quotaFailure(ago time.Duration) appsv1.DeploymentCondition {
	return appsv1.DeploymentCondition{Type: conditionReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate",
		Message:        `pods "api-6d4b8c7f9-q2x9z" is forbidden: exceeded quota: compute, requested: requests.cpu=500m, used: requests.cpu=1500m, limited: requests.cpu=1500m`,
		LastUpdateTime: metav1.NewTime(ct.Ago(ago)), LastTransitionTime: metav1.NewTime(ct.Ago(ago))}
}

// maxUnavailable 0 and a full quota: the surge pod is refused, the Deployment stays
// Available=True with every old pod, and its rollout never starts. pod-creation-refused names
// the quota and the resource, past the threshold of the ReplicaFailure condition.
func TestDeploymentQuotaRefusesSurgePod(t *testing.T) {
	d := deployment(0, 3, progressingCondition(3*time.Minute), quotaFailure(12*time.Minute),
		appsv1.DeploymentCondition{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable"})
	d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxUnavailable: ptr(intstr.FromInt32(0))}
	old, cur := replicaSet(d, rsOld, "1", 3), replicaSet(d, rsNew, "2", 1)
	c := ct.Cluster{Deployments: []*appsv1.Deployment{d}, ReplicaSets: []*appsv1.ReplicaSet{old, cur},
		Pods: []*corev1.Pod{rsPod(old, "api-5f7c9d8b6-a", time.Hour), rsPod(old, "api-5f7c9d8b6-b", time.Hour), rsPod(old, "api-5f7c9d8b6-c", time.Hour)},
		Events: []*corev1.Event{ct.Event(ct.RefTo("apps/v1", "ReplicaSet", cur), corev1.EventTypeWarning, "FailedCreate",
			"Error creating: "+quotaFailure(0).Message, ct.From("replicaset-controller"), ct.Count(14), ct.Seen(12*time.Minute, 30*time.Second))}}
	f := only(t, run(t, c, -1))
	if f.RootCause.ID != RootCausePodCreationRefused || f.Severity != report.SeverityError {
		t.Fatalf("got %s %s: %s", f.RootCause.ID, f.Severity, f.RootCause.Message)
	}
	evidenceHas(t, f, "condition ReplicaFailure=True reason FailedCreate since 12m")
	evidenceHas(t, f, "refused by ResourceQuota compute: requests.cpu: requested 500m, used 1500m, hard 1500m")
	evidenceHas(t, f, "event Warning FailedCreate from replicaset-controller (x14")
	if !strings.Contains(f.Summary, "(ResourceQuota compute)") || !strings.Contains(f.RootCause.Message, "ResourceQuota compute has no room") {
		t.Errorf("summary %q message %q", f.Summary, f.RootCause.Message)
	}
	// Within the threshold the controller may still get past it.
	d.Status.Conditions[1] = quotaFailure(3 * time.Minute)
	none(t, run(t, c, -1))
}

// The ReplicaSets could not be read: the Deployment's own conditions still say it is stuck, and
// the evidence says what was not read.
func TestDeploymentReplicaSetsUnread(t *testing.T) {
	d := deployment(1, 3, deadlineCondition(2*time.Minute))
	c := ct.Cluster{Deployments: []*appsv1.Deployment{d}, Unread: map[snapshot.Input]error{snapshot.InputReplicaSets: errString("forbidden: list replicasets in shop")}}
	f := only(t, run(t, c, -1))
	if f.RootCause.ID != RootCauseProgressDeadline {
		t.Fatalf("got %s", f.RootCause.ID)
	}
	evidenceHas(t, f, "its ReplicaSets could not be read: forbidden: list replicasets in shop")
}

type errString string

func (e errString) Error() string { return string(e) }

// statefulSet is StatefulSet shop/db of three replicas, OrderedReady, after a rollout to a
// broken revision (db-bad) that was reverted: updateRevision and currentRevision are db-good
// again, db-0 and db-1 on it and Ready, db-2 recreated on db-bad and crash-looping since.
func statefulSet() (*appsv1.StatefulSet, []*corev1.Pod) {
	sts := ct.StatefulSet("shop", "db", "db", "postgres:16", 3, 2)
	sts.Generation, sts.Status.ObservedGeneration = 3, 3
	sts.Status.UpdateRevision, sts.Status.CurrentRevision = "db-good", "db-good"
	sts.Status.UpdatedReplicas, sts.Status.CurrentReplicas, sts.Status.ReadyReplicas = 2, 2, 2
	pod := func(name, rev string, createdAgo time.Duration, opts ...ct.Option) *corev1.Pod {
		idx := strings.TrimPrefix(name, "db-")
		base := []ct.Option{ct.OwnedBy("apps/v1", "StatefulSet", sts.Name, sts.UID), ct.CreatedAgo(createdAgo),
			ct.Labels(map[string]string{"app.kubernetes.io/name": "db", revisionLabel: rev, podIndexLabel: idx}),
			ct.OnNode("node-1"), ct.Containers(corev1.Container{Name: "db", Image: "postgres:16"}), ct.Running()}
		return readyUnlessSet(ct.Pod("shop", name, append(base, opts...)...), createdAgo)
	}
	crash := func(m metav1.Object) {
		ct.Waiting("db", "CrashLoopBackOff", "back-off 5m0s restarting failed container=db", 9)(m)
		ct.PodReady(corev1.ConditionFalse, 25*time.Minute)(m)
	}
	return sts, []*corev1.Pod{pod("db-0", "db-good", 3*time.Hour), pod("db-1", "db-good", 3*time.Hour), pod("db-2", "db-bad", 25*time.Minute, crash)}
}

// The forced-rollback state: statefulset-broken-pod names db-2 and its revision, and offers
// delete-pod for exactly that pod with the guards' values.
func TestStatefulSetBrokenPodAfterRevert(t *testing.T) {
	sts, pods := statefulSet()
	c := ct.Cluster{StatefulSets: []*appsv1.StatefulSet{sts}, Pods: pods}
	f := only(t, run(t, c, -1))
	if f.RootCause.ID != RootCauseStatefulSetBrokenPod || f.Object.Kind != "StatefulSet" {
		t.Fatalf("got %s on %s", f.RootCause.ID, f.Object)
	}
	evidenceHas(t, f, "pod db-2 (ordinal 2) is on revision db-bad, not the updateRevision db-good, and not Ready for 25m")
	evidenceHas(t, f, "CrashLoopBackOff after 9 restarts")
	// The fix the rule proposes, before the root cause's actions filter it.
	s := c.Snapshot()
	p := newPass(s, New().Info().Threshold)
	d, ok := statefulSetBrokenPod(p, newStall(p, rollouts(s)[0]))
	if !ok || len(d.Fixes) != 1 || d.Fixes[0].Action != checks.ActionDeletePod {
		t.Fatalf("fixes %+v", d.Fixes)
	}
	want := map[string]string{"pod": "db-2", "podUID": string(pods[2].UID), "revision": "db-bad", "updateRevision": "db-good"}
	for k, v := range want {
		if d.Fixes[0].Params[k] != v {
			t.Errorf("param %s = %q, want %q", k, d.Fixes[0].Params[k], v)
		}
	}
}

// Around it, the controller behaves as designed: no finding (or no delete-pod).
func TestStatefulSetBrokenPodNeighbours(t *testing.T) {
	t.Run("below the partition", func(t *testing.T) {
		// A partition of 3 keeps every pod on its revision: the rollout is done as asked.
		sts, pods := statefulSet()
		sts.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr(int32(3))}
		none(t, run(t, ct.Cluster{StatefulSets: []*appsv1.StatefulSet{sts}, Pods: pods}, -1))
	})
	t.Run("OnDelete", func(t *testing.T) {
		sts, pods := statefulSet()
		sts.Spec.UpdateStrategy.Type = appsv1.OnDeleteStatefulSetStrategyType
		none(t, run(t, ct.Cluster{StatefulSets: []*appsv1.StatefulSet{sts}, Pods: pods}, -1))
	})
	t.Run("Parallel", func(t *testing.T) {
		// v1.37 deletes an unavailable old-revision pod itself under Parallel.
		sts, pods := statefulSet()
		sts.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
		none(t, run(t, ct.Cluster{StatefulSets: []*appsv1.StatefulSet{sts}, Pods: pods}, -1))
	})
	t.Run("within the threshold", func(t *testing.T) {
		sts, pods := statefulSet()
		ct.CreatedAgo(3 * time.Minute)(pods[2])
		setCondition(corev1.PodReady, corev1.ConditionFalse, "ContainersNotReady", "")(pods[2])
		pods[2].Status.Conditions[len(pods[2].Status.Conditions)-1].LastTransitionTime = metav1.NewTime(ct.Ago(3 * time.Minute))
		none(t, run(t, ct.Cluster{StatefulSets: []*appsv1.StatefulSet{sts}, Pods: pods}, -1))
	})
	t.Run("not reverted", func(t *testing.T) {
		// The broken revision is still the update revision: the template is at fault, no delete.
		sts, pods := statefulSet()
		sts.Status.UpdateRevision, sts.Status.UpdatedReplicas = "db-bad", 1
		f := only(t, run(t, ct.Cluster{StatefulSets: []*appsv1.StatefulSet{sts}, Pods: pods}, -1))
		if f.RootCause.ID != RootCauseCrashLooping || len(f.Fixes) != 0 {
			t.Fatalf("got %s fixes %+v", f.RootCause.ID, f.Fixes)
		}
	})
}

// daemonSet is DaemonSet kube-system/agent on four nodes rolled to template generation 2
// (revision hash 7c9d) with maxUnavailable 1: node-4 stopped heartbeating, so its old pod, which
// the controller deleted as unavailable, stays Terminating, and no pod on another node is
// replaced.
func daemonSet() (*appsv1.DaemonSet, []*corev1.Pod, []*corev1.Node) {
	ds := ct.DaemonSet("kube-system", "agent", "agent", "agent:2", 3, 3)
	ds.Generation, ds.Status.ObservedGeneration = 2, 2
	ds.Annotations = map[string]string{templateGeneration: "2"}
	ds.Status.UpdatedNumberScheduled = 0
	pod := func(name, node, gen, hash string, opts ...ct.Option) *corev1.Pod {
		base := []ct.Option{ct.OwnedBy("apps/v1", "DaemonSet", ds.Name, ds.UID), ct.CreatedAgo(2 * time.Hour),
			ct.Labels(map[string]string{"app.kubernetes.io/name": "agent", templateGenerationLabel: gen, revisionLabel: hash}),
			ct.OnNode(node), ct.Containers(corev1.Container{Name: "agent", Image: "agent:1"}), ct.Running()}
		return readyUnlessSet(ct.Pod("kube-system", name, append(base, opts...)...), 2*time.Hour)
	}
	pods := []*corev1.Pod{pod("agent-a", "node-1", "1", "5b8f"), pod("agent-b", "node-2", "1", "5b8f"), pod("agent-c", "node-3", "1", "5b8f"),
		pod("agent-d", "node-4", "1", "5b8f", ct.Deleted(20*time.Minute, 30), ct.PodReady(corev1.ConditionFalse, 40*time.Minute))}
	nodes := []*corev1.Node{ct.Node("node-1", ct.Ready(corev1.ConditionTrue, time.Hour)), ct.Node("node-2", ct.Ready(corev1.ConditionTrue, time.Hour)),
		ct.Node("node-3", ct.Ready(corev1.ConditionTrue, time.Hour)), ct.Node("node-4", ct.Ready(corev1.ConditionUnknown, 45*time.Minute))}
	return ds, pods, nodes
}

func TestDaemonSetNodesUseUpMaxUnavailable(t *testing.T) {
	ds, pods, nodes := daemonSet()
	// Due 20m ago with a grace period of 10m: asked 30m ago.
	pods[3].DeletionGracePeriodSeconds = ptr(int64(600))
	f := only(t, run(t, ct.Cluster{DaemonSets: []*appsv1.DaemonSet{ds}, Pods: pods, Nodes: nodes}, -1))
	if f.RootCause.ID != RootCauseDaemonSetNodesUnavailable {
		t.Fatalf("got %s: %v", f.RootCause.ID, f.RootCause.Evidence)
	}
	evidenceHas(t, f, "node node-4 is Ready=Unknown reason NodeStatusUnknown since 45m ago; its pod agent-d is Terminating (deleted 30m ago)")
	// No pod of generation 2 exists to tell its revision hash.
	evidenceHas(t, f, "no pod of the new revision exists, and no FailedCreate event on the DaemonSet was read")
	if !strings.Contains(f.Summary, "nodes node-4 use up its maxUnavailable") {
		t.Errorf("summary %q", f.Summary)
	}
	if len(f.BlockedBy) != 1 || f.BlockedBy[0].Name != "agent-d" {
		t.Errorf("blockedBy %+v", f.BlockedBy)
	}
	// With room for two unavailable nodes, one dead node does not stop the update.
	ds.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateDaemonSet{MaxUnavailable: ptr(intstr.FromInt32(2))}
	for _, f := range run(t, ct.Cluster{DaemonSets: []*appsv1.DaemonSet{ds}, Pods: pods, Nodes: nodes}, -1) {
		if f.RootCause.ID == RootCauseDaemonSetNodesUnavailable {
			t.Errorf("reported with maxUnavailable 2: %v", f.RootCause.Evidence)
		}
	}
	// OnDelete updates only pods someone deletes.
	ds.Spec.UpdateStrategy = appsv1.DaemonSetUpdateStrategy{Type: appsv1.OnDeleteDaemonSetStrategyType}
	none(t, run(t, ct.Cluster{DaemonSets: []*appsv1.DaemonSet{ds}, Pods: pods, Nodes: nodes}, -1))
}

// A DaemonSet rolled to an image that cannot be pulled: its new pods on healthy nodes name it.
func TestDaemonSetImagePull(t *testing.T) {
	ds, pods, nodes := daemonSet()
	pods = pods[:3]
	nodes = nodes[:3]
	ds.Status.DesiredNumberScheduled, ds.Status.UpdatedNumberScheduled, ds.Status.NumberAvailable = 3, 1, 2
	fresh := ct.Pod("kube-system", "agent-n", ct.OwnedBy("apps/v1", "DaemonSet", ds.Name, ds.UID), ct.CreatedAgo(15*time.Minute),
		ct.Labels(map[string]string{"app.kubernetes.io/name": "agent", templateGenerationLabel: "2", revisionLabel: "7c9d"}),
		ct.OnNode("node-1"), ct.Containers(corev1.Container{Name: "agent", Image: "agent:2"}),
		ct.Waiting("agent", "ImagePullBackOff", `Back-off pulling image "agent:2"`, 0), ct.PodReady(corev1.ConditionFalse, 15*time.Minute))
	f := only(t, run(t, ct.Cluster{DaemonSets: []*appsv1.DaemonSet{ds}, Pods: append(pods[1:], fresh), Nodes: nodes}, -1))
	if f.RootCause.ID != RootCauseImagePullFailing {
		t.Fatalf("got %s: %v", f.RootCause.ID, f.RootCause.Evidence)
	}
	evidenceHas(t, f, "DaemonSet kube-system/agent: 1 of 3 pods to update are on revision 7c9d")
	// Within the threshold it may still pull.
	none(t, run(t, ct.Cluster{DaemonSets: []*appsv1.DaemonSet{ds}, Pods: append(pods[1:], fresh), Nodes: nodes}, time.Hour))
}

// The apiserver's words for each refuser, as its admission plugins write them.
func TestRefuserOf(t *testing.T) {
	for _, tc := range []struct{ msg, kind, name, line string }{
		{`pods "x" is forbidden: exceeded quota: compute, requested: limits.cpu=2,requests.cpu=1, used: limits.cpu=4,requests.cpu=3, limited: limits.cpu=4,requests.cpu=4`,
			"ResourceQuota", "compute", "refused by ResourceQuota compute: limits.cpu: requested 2, used 4, hard 4; requests.cpu: requested 1, used 3, hard 4"},
		{`pods "x" is forbidden: failed quota: compute: must specify limits.cpu for: app`, "ResourceQuota", "compute", "must specify limits.cpu for: app"},
		{`pods "x" is forbidden: maximum cpu usage per Container is 1, but limit is 2`, "LimitRange", "",
			"refused by a LimitRange of the namespace: maximum cpu usage per Container is 1, but limit is 2"},
		{`pods "x" is forbidden: violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "app" must set securityContext.allowPrivilegeEscalation=false)`,
			"PodSecurity", "restricted:latest", "refused by Pod Security admission, level restricted:latest: allowPrivilegeEscalation != false"},
		{`admission webhook "validate.policy.example.com" denied the request: image registry not allowed`, "AdmissionWebhook", "validate.policy.example.com",
			"denied the request: image registry not allowed"},
		{`Internal error occurred: failed calling webhook "mpod.kb.io": failed to call webhook: Post "https://kruise-webhook-service.kruise-system.svc:443/mutate-pod?timeout=30s": service "kruise-webhook-service" not found`,
			"AdmissionWebhook", "mpod.kb.io", `could not be called: failed to call webhook: Post`},
		{`pods "x" is forbidden: ValidatingAdmissionPolicy 'no-latest' with binding 'no-latest-binding' denied request: image tag latest`,
			"ValidatingAdmissionPolicy", "no-latest", "binding no-latest-binding denied the request: image tag latest"},
		{`pods "x" is forbidden: error looking up service account shop/api: serviceaccount "api" not found`, "", "", ""},
	} {
		r := refuserOf(tc.msg)
		if r.kind != tc.kind || r.name != tc.name || !strings.Contains(r.line(), tc.line) {
			t.Errorf("%s:\n got %s %q %q", tc.msg, r.kind, r.name, r.line())
		}
	}
}

// A pod stuck Terminating past its grace period on a Ready node counts as unavailable too
// (findUpdatedPodsOnNode skips it): the rollout is blocked by that pod, whose own finding says
// why. Within its grace period it is a pod draining, by design.
func TestDaemonSetBlockedByPodStuckTerminating(t *testing.T) {
	ds, pods, nodes := daemonSet()
	nodes[3] = ct.Node("node-4", ct.Ready(corev1.ConditionTrue, time.Hour))
	f := only(t, run(t, ct.Cluster{DaemonSets: []*appsv1.DaemonSet{ds}, Pods: pods, Nodes: nodes}, -1))
	if f.RootCause.ID != RootCauseBlockedByStuckPod || len(f.BlockedBy) != 1 || f.BlockedBy[0].Name != "agent-d" {
		t.Fatalf("got %s blockedBy %+v", f.RootCause.ID, f.BlockedBy)
	}
	evidenceHas(t, f, "node node-4 is Ready; its pod agent-d is Terminating")
	// Within its grace period.
	ct.Deleted(-10*time.Minute, 3600)(pods[3])
	none(t, run(t, ct.Cluster{DaemonSets: []*appsv1.DaemonSet{ds}, Pods: pods, Nodes: nodes}, -1))
}

// A scan scoped to another namespace, or by a label selector the Deployment's pods need not
// match, did not read all its pods: the Deployment is not judged, whatever its conditions say
// (the workloads are listed in every namespace, the pods only in the scope).
func TestDeploymentOutsideTheScanScope(t *testing.T) {
	d := deployment(1, 3, deadlineCondition(2*time.Minute))
	old, cur := replicaSet(d, rsOld, "1", 3), replicaSet(d, rsNew, "2", 1)
	c := ct.Cluster{Deployments: []*appsv1.Deployment{d}, ReplicaSets: []*appsv1.ReplicaSet{old, cur},
		Pods: []*corev1.Pod{rsPod(cur, "api-6d4b8c7f9-x", 12*time.Minute, imagePull())}}
	for name, scope := range map[string]snapshot.Scope{
		"another namespace":       {Namespace: "billing"},
		"another team's selector": {AllNamespaces: true, LabelSelector: "team=billing"},
		"a narrower selector":     {AllNamespaces: true, LabelSelector: "tier=frontend"},
	} {
		t.Run(name, func(t *testing.T) {
			s := c.Snapshot()
			s.Scope = scope
			none(t, New().Run(s, New().Info().Threshold))
			if reads := New().(interface {
				DeclareReads(*snapshot.Snapshot) snapshot.Reads
			}).DeclareReads(s); len(reads.ReplicaSets) != 0 {
				t.Errorf("ReplicaSets read outside the scope: %+v", reads.ReplicaSets)
			}
		})
	}
	// The same Deployment in scope is judged.
	s := c.Snapshot()
	s.Scope = snapshot.Scope{Namespace: "shop", LabelSelector: "app=api"}
	if f := only(t, New().Run(s, New().Info().Threshold)); f.RootCause.ID != RootCauseImagePullFailing {
		t.Fatalf("in scope: %s", f.RootCause.ID)
	}
}

// TestNodeDownReadByName: a node whose name the scan never read (why reads nodes one by one) is
// not "gone"; one it asked for and did not get is.
func TestNodeDownReadByName(t *testing.T) {
	for _, c := range []struct {
		read map[string]bool
		want string
	}{
		{read: nil, want: "node n1 does not exist"}, // nodes listed, n1 not among them
		{read: map[string]bool{"n1": true}, want: "node n1 does not exist"},
		{read: map[string]bool{"n2": true}, want: ""},
	} {
		s := ct.Cluster{NodesByName: c.read}.Snapshot()
		if got := nodeDown(s, "n1"); got != c.want {
			t.Errorf("nodes read by name %v: nodeDown %q, want %q", c.read, got, c.want)
		}
	}
}
