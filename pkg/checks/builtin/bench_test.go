package builtin_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks/builtin"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// The checks' cost apart from the API: every registered check on a synthetic snapshot of 100,000
// pods shaped like the population bench/ seeds into a real cluster (groups of 20 pods owned by
// ReplicaSets or CloneSets over 1,000 namespaces and 500 nodes, one pod in 200 stuck, Warning
// events). As the collector builds it, every pod is metadata-only and the candidates the checks
// select are full objects.
//
//	go test -run '^$' -bench . -benchmem ./pkg/checks/builtin/

const (
	benchPods       = 100_000
	benchNamespaces = 1000
	benchNodes      = 500
	benchDeadNodes  = 5
	benchGroup      = 20
	benchStuckEvery = 200
)

var (
	benchOnce sync.Once
	benchSnap *snapshot.Snapshot
	benchNow  = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
)

func benchSnapshot(b *testing.B) *snapshot.Snapshot {
	b.Helper()
	benchOnce.Do(func() { benchSnap = syntheticSnapshot(benchPods) })
	return benchSnap
}

// BenchmarkChecks runs all registered checks, then each alone.
func BenchmarkChecks(b *testing.B) {
	s := benchSnapshot(b)
	all := builtin.Checks().All()
	b.Run("all", func(b *testing.B) {
		var n int
		for b.Loop() {
			findings, _ := checks.Run(s, all, -1)
			n = len(findings)
		}
		b.ReportMetric(float64(n), "findings")
	})
	for _, c := range all {
		b.Run(c.Info().ID, func(b *testing.B) {
			var n int
			for b.Loop() {
				findings, _ := checks.Run(s, []checks.Check{c}, -1)
				n = len(findings)
			}
			b.ReportMetric(float64(n), "findings")
		})
	}
}

// BenchmarkPodCandidates is the selection the collector runs on the metadata-only snapshot to
// decide which pods to read in full.
func BenchmarkPodCandidates(b *testing.B) {
	s := benchSnapshot(b)
	for _, c := range builtin.Checks().All() {
		sel, ok := c.(checks.PodSelector)
		if !ok {
			continue
		}
		b.Run(c.Info().ID, func(b *testing.B) {
			var n int
			for b.Loop() {
				n = len(sel.PodCandidates(s))
			}
			b.ReportMetric(float64(n), "candidates")
		})
	}
}

// BenchmarkIndex is the snapshot's indexing, which the collector runs twice per scan.
func BenchmarkIndex(b *testing.B) {
	s := benchSnapshot(b)
	for b.Loop() {
		s.Index()
	}
}

// syntheticSnapshot builds the snapshot a scan of the bench population collects.
func syntheticSnapshot(nPods int) *snapshot.Snapshot {
	s := &snapshot.Snapshot{
		Now: benchNow, ServerVersion: "v1.37.1", Scope: snapshot.Scope{AllNamespaces: true}, Settings: snapshot.DefaultSettings(),
		Unread: map[snapshot.Input]error{}, Limits: map[snapshot.Input]string{}, Logs: map[string]string{},
		Installed: map[string]bool{kruise.Group: true},
	}
	for i := range benchNamespaces {
		s.Namespaces = append(s.Namespaces, &corev1.Namespace{
			ObjectMeta: metav1.ObjectMeta{Name: benchNS(i), UID: benchUID("ns", i), CreationTimestamp: metav1.NewTime(benchNow.Add(-30 * 24 * time.Hour))},
			Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceActive},
		})
	}
	for i := range benchNodes {
		s.Nodes = append(s.Nodes, benchNode(i))
		renew := benchNow.Add(-5 * time.Second)
		if i < benchDeadNodes {
			renew = benchNow.Add(-time.Hour)
		}
		s.NodeLeases = append(s.NodeLeases, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: benchNodeName(i), Namespace: corev1.NamespaceNodeLease},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptrTo(benchNodeName(i)), LeaseDurationSeconds: ptrTo[int32](40),
				RenewTime: &metav1.MicroTime{Time: renew}},
		})
	}
	mgr, lease, mgrPod := benchKruiseManager()
	s.Deployments = append(s.Deployments, mgr)
	s.Leases = append(s.Leases, lease)
	s.ControllerPods = append(s.ControllerPods, mgrPod)
	s.Logs[mgrPod.Namespace+"/"+mgrPod.Name] = ""

	full := map[types.UID]*corev1.Pod{}
	for g := 0; g*benchGroup < nPods; g++ {
		ns := benchNS(g % benchNamespaces)
		cloneSet := g%4 == 0
		app := fmt.Sprintf("svc-%05d", g)
		owner := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: app + "-7d9f8c6b5d", UID: benchUID("rs", g),
			Controller: ptrTo(true), BlockOwnerDeletion: ptrTo(true)}
		revision := app + "-7d9f8c6b5"
		if cloneSet {
			w := benchCloneSet(ns, app, g)
			s.Workloads = append(s.Workloads, w)
			owner = metav1.OwnerReference{APIVersion: kruise.CloneSets.GroupVersion().String(), Kind: kruise.KindCloneSet, Name: app,
				UID: w.UID, Controller: ptrTo(true), BlockOwnerDeletion: ptrTo(true)}
			s.Events = append(s.Events, benchEvent(ns, kruise.KindCloneSet, app, w.UID, kruise.CloneSets.GroupVersion().String(),
				corev1.EventTypeNormal, "SuccessfulCreate", "succeed to create pod "+app+"-abcde", g))
		}
		for k := range benchGroup {
			i := g*benchGroup + k
			if i >= nPods {
				break
			}
			p, f := benchPod(ns, app, revision, owner, cloneSet, i, k)
			s.Pods = append(s.Pods, &p.ObjectMeta)
			if f != nil {
				full[f.UID] = f
			}
			if i%10 == 3 {
				s.Events = append(s.Events, benchEvent(ns, "Pod", p.Name, p.UID, "v1", corev1.EventTypeWarning, "Unhealthy",
					"Readiness probe failed: HTTP probe failed with statuscode: 503", i))
			}
		}
	}
	// As the collector does: select candidates on the metadata-only snapshot, then read those in full.
	s.Index()
	seen := map[types.UID]bool{}
	for _, c := range builtin.Checks().All() {
		sel, ok := c.(checks.PodSelector)
		if !ok {
			continue
		}
		for _, uid := range sel.PodCandidates(s) {
			if seen[uid] {
				continue
			}
			seen[uid] = true
			if f, ok := full[uid]; ok {
				s.FullPods = append(s.FullPods, f)
			} else if m, _ := s.Pod(uid); m != nil {
				p := &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: *m}
				s.FullPods = append(s.FullPods, benchFull(p, benchNodeName(benchDeadNodes+int(p.CreationTimestamp.Unix()%int64(benchNodes-benchDeadNodes)))))
			}
		}
	}
	s.Index()
	return s
}

func benchNS(i int) string       { return fmt.Sprintf("team-%04d", i) }
func benchNodeName(i int) string { return fmt.Sprintf("node-%03d", i) }
func benchUID(kind string, i int) types.UID {
	return types.UID(fmt.Sprintf("%08x-0000-4000-8000-%012x", i, len(kind)<<32|i))
}
func ptrTo[T any](v T) *T { return &v }

func benchNode(i int) *corev1.Node {
	ready := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
		LastHeartbeatTime: metav1.NewTime(benchNow.Add(-10 * time.Second)), LastTransitionTime: metav1.NewTime(benchNow.Add(-72 * time.Hour))}
	var taints []corev1.Taint
	if i < benchDeadNodes {
		ready = corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, Reason: "NodeStatusUnknown",
			Message: "Kubelet stopped posting node status.", LastHeartbeatTime: metav1.NewTime(benchNow.Add(-time.Hour)),
			LastTransitionTime: metav1.NewTime(benchNow.Add(-time.Hour))}
		taints = []corev1.Taint{{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute}}
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: benchNodeName(i), UID: benchUID("node", i), Labels: map[string]string{"kubernetes.io/hostname": benchNodeName(i)}},
		Spec:       corev1.NodeSpec{Taints: taints},
		Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{ready}, NodeInfo: corev1.NodeSystemInfo{KubeletVersion: "v1.37.1"}},
	}
}

func benchKruiseManager() (*appsv1.Deployment, *coordinationv1.Lease, *corev1.Pod) {
	const ns = "kruise-system"
	labels := map[string]string{"control-plane": "controller-manager"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "kruise-controller-manager", Namespace: ns, UID: benchUID("deploy", 1), Generation: 1},
		Spec: appsv1.DeploymentSpec{Replicas: ptrTo[int32](2), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: kruise.ManagerContainer, Image: "openkruise/kruise-manager:v1.8.0",
				Args: []string{"--enable-leader-election", "--leader-election-namespace=" + ns, "--v=4"},
			}}}}},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 2, ReadyReplicas: 2, AvailableReplicas: 2, UpdatedReplicas: 2},
	}
	m := kruise.FindManager([]*appsv1.Deployment{d}, ns, d.Name)
	holder := "kruise-controller-manager-6c8f9d7b5-x2k4p_0b9c6f1e-4c3a-4a55-9d51-0e5d2f7b8a11"
	l := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: m.LeaseName, Namespace: m.LeaseNamespace},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: ptrTo[int32](15),
			RenewTime: &metav1.MicroTime{Time: benchNow.Add(-2 * time.Second)}},
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: kruise.HolderPod(holder), Namespace: ns, Labels: labels, UID: benchUID("mgr", 1)},
		Spec:       corev1.PodSpec{NodeName: benchNodeName(benchDeadNodes)},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
	return d, l, p
}

func benchCloneSet(ns, app string, g int) *kruise.Workload {
	gen := int64(1)
	if g%400 == 0 {
		gen = 2 // a spec the controller never observed
	}
	sel := map[string]string{"app.kubernetes.io/name": app}
	return &kruise.Workload{
		APIVersion: kruise.CloneSets.GroupVersion().String(), Kind: kruise.KindCloneSet,
		ObjectMeta: metav1.ObjectMeta{Name: app, Namespace: ns, UID: benchUID("cs", g), Generation: gen,
			CreationTimestamp: metav1.NewTime(benchNow.Add(-48 * time.Hour)),
			ManagedFields: []metav1.ManagedFieldsEntry{
				{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "apps.kruise.io/v1alpha1",
					Time: ptrTo(metav1.NewTime(benchNow.Add(-time.Hour))), FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:replicas":{}}}`)}},
				{Manager: "manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "apps.kruise.io/v1alpha1", Subresource: "status",
					Time: ptrTo(metav1.NewTime(benchNow.Add(-59 * time.Minute))), FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{}}`)}},
			}},
		Replicas: ptrTo[int32](benchGroup), Selector: &metav1.LabelSelector{MatchLabels: sel},
		Template:   corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: sel}, Spec: benchSpec("")},
		Lifecycle:  kruise.Lifecycle{PreNormal: &kruise.LifecycleHook{LabelsHandler: map[string]string{"example.com/warmed-up": "true"}}},
		UpdateType: kruise.UpdateInPlaceIfPossible,
		Status: kruise.WorkloadStatus{ObservedGeneration: 1, Replicas: benchGroup, ReadyReplicas: benchGroup, AvailableReplicas: benchGroup,
			UpdatedReplicas: benchGroup, UpdatedReadyReplicas: benchGroup, UpdateRevision: app + "-7d9f8c6b5", CurrentRevision: app + "-7d9f8c6b5",
			LabelSelector: "app.kubernetes.io/name=" + app},
	}
}

// benchPod returns the metadata-only pod the bulk list yields and, for a stuck pod, its full object.
func benchPod(ns, app, revision string, owner metav1.OwnerReference, cloneSet bool, i, k int) (meta, full *corev1.Pod) {
	created := benchNow.Add(-time.Duration(3600+i%7200) * time.Second)
	p := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("%s-%05x", app, k), Namespace: ns, UID: benchUID("pod", i), ResourceVersion: fmt.Sprint(1000 + i),
			CreationTimestamp: metav1.NewTime(created),
			Labels: map[string]string{"app.kubernetes.io/name": app, "app.kubernetes.io/part-of": "shop", "app.kubernetes.io/version": "v2.14.3",
				"team": ns, "tier": []string{"frontend", "backend", "worker"}[i/benchGroup%3]},
			Annotations: map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": "9090",
				"cni.projectcalico.org/podIP": fmt.Sprintf("10.%d.%d.%d/32", 64+(i>>16)&63, (i>>8)&255, i&255)},
			OwnerReferences: []metav1.OwnerReference{owner},
		},
	}
	node := benchNodeName(benchDeadNodes + i%(benchNodes-benchDeadNodes))
	// The 8th pod of every 10th group: half of those groups are CloneSets.
	stuck := i%benchStuckEvery == 7
	if cloneSet {
		p.Labels["controller-revision-hash"] = revision
		p.Labels["example.com/warmed-up"] = "true"
		p.Labels[kruise.LabelLifecycleState] = kruise.StateNormal
		p.Annotations[kruise.AnnotationLifecycleTime] = created.Format(time.RFC3339)
		if stuck {
			delete(p.Labels, "example.com/warmed-up")
			p.Labels[kruise.LabelLifecycleState] = kruise.StatePreparingNormal
		}
	} else {
		p.Labels["pod-template-hash"] = "7d9f8c6b5d"
		if stuck {
			del := metav1.NewTime(benchNow.Add(-time.Hour))
			p.DeletionTimestamp = &del
			if (i/benchStuckEvery)%2 == 0 {
				p.DeletionGracePeriodSeconds = ptrTo[int64](0)
				p.Finalizers = []string{"example.com/cleanup"}
			} else {
				p.DeletionGracePeriodSeconds = ptrTo[int64](30)
				node = benchNodeName(i % benchDeadNodes)
			}
		}
	}
	if stuck {
		full = benchFull(p, node)
	}
	return p, full
}

// benchFull is the full object of a metadata-only pod: spec, status and managedFields.
func benchFull(meta *corev1.Pod, node string) *corev1.Pod {
	p := meta.DeepCopy()
	p.Spec = benchSpec(node)
	start := metav1.NewTime(p.CreationTimestamp.Add(3 * time.Second))
	p.Status = corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &start, PodIP: "10.64.0.1", HostIP: "10.0.0.1",
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: start}},
		ContainerStatuses: []corev1.ContainerStatus{
			{Name: "app", Ready: true, Image: p.Spec.Containers[0].Image, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: start}}},
			{Name: "proxy", Ready: true, Image: p.Spec.Containers[1].Image, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: start}}},
		}}
	p.ManagedFields = []metav1.ManagedFieldsEntry{
		{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Time: &p.CreationTimestamp,
			FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:labels":{},"f:ownerReferences":{}},"f:spec":{"f:containers":{}}}`)}},
		{Manager: "kubelet", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1", Subresource: "status", Time: &start,
			FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{"f:conditions":{},"f:containerStatuses":{}}}`)}},
	}
	if len(p.Finalizers) > 0 {
		p.ManagedFields = append(p.ManagedFields, metav1.ManagedFieldsEntry{Manager: "cleanup-controller", Operation: metav1.ManagedFieldsOperationUpdate,
			APIVersion: "v1", Time: &p.CreationTimestamp, FieldsType: "FieldsV1",
			FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:finalizers":{".":{},"v:\"example.com/cleanup\"":{}}}}`)}})
	}
	return p
}

func benchSpec(node string) corev1.PodSpec {
	return corev1.PodSpec{
		NodeName: node, TerminationGracePeriodSeconds: ptrTo[int64](30),
		Containers: []corev1.Container{
			{Name: "app", Image: "registry.example.com/shop/app:v2.14.3", ResizePolicy: []corev1.ContainerResizePolicy{
				{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.NotRequired}, {ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer}}},
			{Name: "proxy", Image: "registry.example.com/mesh/proxy:v1.22.0"},
		},
	}
}

func benchEvent(ns, kind, name string, uid types.UID, apiVersion, typ, reason, msg string, i int) *corev1.Event {
	at := metav1.NewTime(benchNow.Add(-time.Duration(i%3600) * time.Second))
	return &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", name, i), Namespace: ns},
		InvolvedObject: corev1.ObjectReference{Kind: kind, Namespace: ns, Name: name, UID: uid, APIVersion: apiVersion},
		Reason:         reason, Message: msg, Type: typ, Count: 1, FirstTimestamp: at, LastTimestamp: at,
		Source: corev1.EventSource{Component: "kubelet"},
	}
}
