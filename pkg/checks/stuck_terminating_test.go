package checks

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// Fixtures for stuck-terminating, shaped the way the apiserver, the kubelet, kube-controller-manager,
// kwok, OpenKruise and Cluster API write them.

var stNow = time.Date(2026, 3, 9, 10, 0, 0, 0, time.UTC)

func stAgo(d time.Duration) time.Time { return stNow.Add(-d) }

func stMT(d time.Duration) *metav1.Time { t := metav1.NewTime(stAgo(d)); return &t }

func stTrue() *bool { b := true; return &b }

// stManagedFinalizers is the managedFields entry the apiserver records for a manager that added
// finalizers with an update.
func stManagedFinalizers(manager, apiVersion string, age time.Duration, fins ...string) metav1.ManagedFieldsEntry {
	keys := map[string]any{".": map[string]any{}}
	for _, f := range fins {
		b, _ := json.Marshal(f)
		keys["v:"+string(b)] = map[string]any{}
	}
	raw, _ := json.Marshal(map[string]any{"f:metadata": map[string]any{"f:finalizers": keys}})
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: apiVersion,
		Time: stMT(age), FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: raw}}
}

// stSpecManaged is a managedFields entry that owns spec fields only, as the creator of an object has.
func stSpecManaged(manager string) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
		Time: stMT(time.Hour), FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:containers":{}}}`)}}
}

type stPodOpt func(*corev1.Pod)

// stPod is a running pod of a ReplicaSet on node-a, as the scheduler and kubelet leave it.
func stPod(name string, opts ...stPodOpt) *corev1.Pod {
	grace := int64(30)
	p := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "shop", Name: name, UID: types.UID("uid-" + name), ResourceVersion: "4711",
			CreationTimestamp: metav1.NewTime(stAgo(2 * time.Hour)),
			Labels:            map[string]string{"app": "web", "pod-template-hash": "6d4cf56db6"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-6d4cf56db6",
				UID: "uid-rs-web", Controller: stTrue(), BlockOwnerDeletion: stTrue()}},
			ManagedFields: []metav1.ManagedFieldsEntry{stSpecManaged("kube-controller-manager")},
		},
		Spec: corev1.PodSpec{
			NodeName:                      "node-a",
			TerminationGracePeriodSeconds: &grace,
			Containers:                    []corev1.Container{{Name: "app", Image: "nginx:1.27"}},
			Volumes: []corev1.Volume{{Name: "kube-api-access-x7k2p", VolumeSource: corev1.VolumeSource{
				Projected: &corev1.ProjectedVolumeSource{}}}},
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning,
			ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Ready: true,
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(stAgo(2 * time.Hour))}}}},
		},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

// stDeleted marks the pod deleted: the apiserver sets deletionTimestamp to the request time
// plus the grace period, so dueAgo is how long ago the grace period ended.
func stDeleted(dueAgo time.Duration, grace int64) stPodOpt {
	return func(p *corev1.Pod) {
		p.DeletionTimestamp = stMT(dueAgo)
		p.DeletionGracePeriodSeconds = &grace
	}
}

func stFins(manager string, fins ...string) stPodOpt {
	return func(p *corev1.Pod) {
		p.Finalizers = append(p.Finalizers, fins...)
		p.ManagedFields = append(p.ManagedFields, stManagedFinalizers(manager, "v1", 30*time.Minute, fins...))
	}
}

func stOnNode(node string) stPodOpt { return func(p *corev1.Pod) { p.Spec.NodeName = node } }

func stStopped() stPodOpt {
	return func(p *corev1.Pod) {
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", State: corev1.ContainerState{
			Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", FinishedAt: metav1.NewTime(stAgo(9 * time.Minute))}}}}
	}
}

func stStatefulSet() stPodOpt {
	return func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db",
			UID: "uid-sts-db", Controller: stTrue(), BlockOwnerDeletion: stTrue()}}
	}
}

func stClaim(claim string) stPodOpt {
	return func(p *corev1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}})
	}
}

// stNode is a node as its kubelet reports it (Ready=True), or as the node lifecycle controller
// leaves it once heartbeats stop (Ready=Unknown, unreachable taints).
func stNode(name string, ready corev1.ConditionStatus, since time.Duration) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-node-" + name),
		Labels: map[string]string{"kubernetes.io/hostname": name}}}
	c := corev1.NodeCondition{Type: corev1.NodeReady, Status: ready, LastTransitionTime: metav1.NewTime(stAgo(since))}
	switch ready {
	case corev1.ConditionTrue:
		c.Reason, c.Message, c.LastHeartbeatTime = "KubeletReady", "kubelet is posting ready status", metav1.NewTime(stAgo(3*time.Minute))
	case corev1.ConditionFalse:
		c.Reason, c.Message, c.LastHeartbeatTime = "KubeletNotReady", "container runtime network not ready: NetworkReady=false", metav1.NewTime(stAgo(time.Minute))
		n.Spec.Taints = []corev1.Taint{{Key: "node.kubernetes.io/not-ready", Effect: corev1.TaintEffectNoSchedule}}
	default:
		c.Reason, c.Message, c.LastHeartbeatTime = "NodeStatusUnknown", "Kubelet stopped posting node status.", metav1.NewTime(stAgo(since+40*time.Second))
		n.Spec.Taints = []corev1.Taint{
			{Key: "node.kubernetes.io/unreachable", Effect: corev1.TaintEffectNoExecute, TimeAdded: stMT(since)},
			{Key: "node.kubernetes.io/unreachable", Effect: corev1.TaintEffectNoSchedule, TimeAdded: stMT(since)},
		}
	}
	n.Status.Conditions = []corev1.NodeCondition{c}
	return n
}

func stKwokNode(name string, ready corev1.ConditionStatus, since time.Duration) *corev1.Node {
	n := stNode(name, ready, since)
	n.Annotations = map[string]string{"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"}
	n.Labels["type"] = "kwok"
	n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: "kwok.x-k8s.io/node", Value: "fake", Effect: corev1.TaintEffectNoSchedule})
	return n
}

func stLease(node string, renewedAgo time.Duration) *coordinationv1.Lease {
	dur := int32(40)
	renew := metav1.NewMicroTime(stAgo(renewedAgo))
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: corev1.NamespaceNodeLease, Name: node},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &node, LeaseDurationSeconds: &dur, RenewTime: &renew},
	}
}

func stDeployment(ns, name, container, image string, replicas, available int32, args ...string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-deploy-" + name)},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: container, Image: image, Args: args}}}}},
		Status: appsv1.DeploymentStatus{Replicas: replicas, ReadyReplicas: available, AvailableReplicas: available},
	}
}

// stKwokDeployment is kwok's controller as its shipped kustomization installs it.
func stKwokDeployment(version string, args ...string) *appsv1.Deployment {
	return stDeployment("kube-system", "kwok-controller", "kwok-controller", "registry.k8s.io/kwok/kwok:"+version, 1, 1,
		append([]string{"--config=/root/.kwok/kwok.yaml", "--node-ip=$(POD_IP)"}, args...)...)
}

// stEvent is an event about an object, as client-go's recorder writes it.
func stEvent(involved corev1.ObjectReference, typ, reason, component, msg string, count int32, lastAgo time.Duration) *corev1.Event {
	return &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: involved.Namespace, Name: fmt.Sprintf("%s.%x", involved.Name, count)},
		InvolvedObject: involved, Type: typ, Reason: reason, Message: msg, Count: count,
		Source:         corev1.EventSource{Component: component},
		FirstTimestamp: metav1.NewTime(stAgo(lastAgo + time.Hour)), LastTimestamp: metav1.NewTime(stAgo(lastAgo)),
	}
}

func stPodRef(p *corev1.Pod) corev1.ObjectReference {
	return corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: p.Namespace, Name: p.Name, UID: p.UID}
}

// stObject is an object of another resource as a metadata-only list returns it.
func stObject(gvr schema.GroupVersionResource, kind, ns, name string, dueAgo time.Duration, manager string, fins ...string) snapshot.Object {
	m := &metav1.PartialObjectMetadata{
		TypeMeta: metav1.TypeMeta{APIVersion: gvr.GroupVersion().String(), Kind: kind},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + kind + "-" + name), ResourceVersion: "900",
			CreationTimestamp: metav1.NewTime(stAgo(3 * time.Hour)), Finalizers: fins},
	}
	if dueAgo >= 0 {
		m.DeletionTimestamp = stMT(dueAgo)
		zero := int64(0)
		m.DeletionGracePeriodSeconds = &zero
	}
	if manager != "" && len(fins) > 0 {
		m.ManagedFields = []metav1.ManagedFieldsEntry{stManagedFinalizers(manager, gvr.GroupVersion().String(), 2*time.Hour, fins...)}
	}
	return snapshot.Object{Resource: gvr, Kind: kind, Namespaced: ns != "", Meta: m}
}

func stObjRef(o snapshot.Object) corev1.ObjectReference {
	return corev1.ObjectReference{APIVersion: o.APIVersion(), Kind: o.Kind, Namespace: o.Meta.Namespace, Name: o.Meta.Name, UID: o.Meta.UID}
}

var (
	stWidgets     = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	stMachines    = schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta1", Resource: "machines"}
	stMachineSets = schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta1", Resource: "machinesets"}
	stClusters    = schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta1", Resource: "clusters"}
	stDeploys     = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	stApps        = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}
)

// stCluster is a Cluster API Cluster as the cluster-api input reads it.
func stCluster(ns, name string, paused bool) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "cluster.x-k8s.io/v1beta1", "kind": "Cluster",
		"metadata": map[string]any{"namespace": ns, "name": name, "uid": "uid-Cluster-" + name},
		"spec":     map[string]any{"controlPlaneEndpoint": map[string]any{"host": "10.0.0.1", "port": int64(6443)}},
	}}
	if paused {
		_ = unstructured.SetNestedField(u.Object, true, "spec", "paused")
	}
	return u
}

func stMachine(name, cluster string, dueAgo time.Duration) snapshot.Object {
	o := stObject(stMachines, "Machine", "fleet", name, dueAgo, "manager", "machine.cluster.x-k8s.io")
	o.Meta.Labels = map[string]string{"cluster.x-k8s.io/cluster-name": cluster}
	return o
}

// stCloneSet decodes a CloneSet with a preDelete hook through the real decoder.
func stCloneSet(t *testing.T, preDelete map[string]any) *kruise.Workload {
	t.Helper()
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
		"metadata": map[string]any{"namespace": "shop", "name": "cart", "uid": "uid-cs-cart", "generation": int64(3)},
		"spec": map[string]any{
			"replicas": int64(2),
			"selector": map[string]any{"matchLabels": map[string]any{"app": "cart"}},
			"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "cart"}},
				"spec": map[string]any{"containers": []any{map[string]any{"name": "app", "image": "cart:1"}}}},
			"lifecycle": map[string]any{"preDelete": preDelete},
		},
	}}
	w, err := kruise.WorkloadFromUnstructured(u)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// stCloneSetPod is a CloneSet pod in PreparingDelete since 20 minutes.
func stCloneSetPod(opts ...stPodOpt) *corev1.Pod {
	p := stPod("cart-x8k2q", opts...)
	p.Labels = map[string]string{"app": "cart", kruise.LabelLifecycleState: kruise.StatePreparingDelete,
		"apps.kruise.io/cloneset-instance-id": "x8k2q", "controller-revision-hash": "cart-7b9c"}
	p.Annotations = map[string]string{kruise.AnnotationLifecycleTime: stAgo(20 * time.Minute).Format(time.RFC3339)}
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: "cart",
		UID: "uid-cs-cart", Controller: stTrue(), BlockOwnerDeletion: stTrue()}}
	return p
}

// stWorld is the cluster a test case builds; snap turns it into an indexed snapshot the way the
// collector fills one (pods metadata-only, candidates also in full).
type stWorld struct {
	pods, metaOnlyPods []*corev1.Pod
	nodes              []*corev1.Node
	leases             []*coordinationv1.Lease
	events             []*corev1.Event
	deps               []*appsv1.Deployment
	objects            []snapshot.Object
	namespaces         []*corev1.Namespace
	apiServices        []*unstructured.Unstructured
	clusters           []*unstructured.Unstructured
	workloads          []*kruise.Workload
	unread             map[snapshot.Input]error
}

// stHealthy is a cluster with one Ready node whose kubelet heartbeats.
func stHealthy() stWorld {
	return stWorld{
		nodes:  []*corev1.Node{stNode("node-a", corev1.ConditionTrue, 48*time.Hour)},
		leases: []*coordinationv1.Lease{stLease("node-a", 4*time.Second)},
	}
}

func (w stWorld) snap() *snapshot.Snapshot {
	s := &snapshot.Snapshot{Now: stNow, Nodes: w.nodes, NodeLeases: w.leases, Events: w.events, Deployments: w.deps,
		Objects: w.objects, Namespaces: w.namespaces, APIServices: w.apiServices, Clusters: w.clusters, Workloads: w.workloads,
		Unread: map[snapshot.Input]error{}}
	for in, err := range w.unread {
		s.Unread[in] = err
	}
	for _, p := range append(append([]*corev1.Pod{}, w.pods...), w.metaOnlyPods...) {
		s.Pods = append(s.Pods, p.ObjectMeta.DeepCopy())
	}
	s.FullPods = w.pods
	s.Index()
	return s
}

// stWant is what a case expects of the finding about its target object.
type stWant struct {
	rootCause string // "" expects no finding about the target
	summary   []string
	message   []string
	evidence  []string
	noEvid    []string
	fixes     []string // "action" or "action:finalizer", in order
	risks     []report.Risk
	refs      []string
	noRefs    []string
	node      string
}

func stFind(fs []report.Finding, name string) (report.Finding, int) {
	var out report.Finding
	n := 0
	for _, f := range fs {
		if f.Object.Name == name {
			out = f
			n++
		}
	}
	return out, n
}

func stCheck(t *testing.T, fs []report.Finding, target string, want stWant) {
	t.Helper()
	f, n := stFind(fs, target)
	if want.rootCause == "" {
		if n != 0 {
			t.Fatalf("want no finding about %s, got %s: %s\n%s", target, f.RootCause.ID, f.Summary, strings.Join(f.RootCause.Evidence, "\n"))
		}
		return
	}
	if n != 1 {
		t.Fatalf("want 1 finding about %s, got %d (all: %v)", target, n, fs)
	}
	if f.Check != CheckStuckTerminating || f.RootCause.ID != want.rootCause {
		t.Fatalf("finding = %s/%s, want %s/%s\nsummary: %s\nmessage: %s\nevidence:\n%s", f.Check, f.RootCause.ID, CheckStuckTerminating,
			want.rootCause, f.Summary, f.RootCause.Message, strings.Join(f.RootCause.Evidence, "\n"))
	}
	ev := strings.Join(f.RootCause.Evidence, "\n")
	for _, s := range want.evidence {
		if !strings.Contains(ev, s) {
			t.Errorf("evidence lacks %q:\n%s", s, ev)
		}
	}
	for _, s := range want.noEvid {
		if strings.Contains(ev, s) {
			t.Errorf("evidence has %q, it should not:\n%s", s, ev)
		}
	}
	for _, s := range want.summary {
		if !strings.Contains(f.Summary, s) {
			t.Errorf("summary %q lacks %q", f.Summary, s)
		}
	}
	for _, s := range want.message {
		if !strings.Contains(f.RootCause.Message, s) {
			t.Errorf("message %q lacks %q", f.RootCause.Message, s)
		}
	}
	var got []string
	for _, fx := range f.Fixes {
		s := fx.Action
		if fin := fx.Params["finalizer"]; fin != "" {
			s += ":" + fin
		}
		got = append(got, s)
		if fx.Description == "" || fx.Risk == "" {
			t.Errorf("fix %s lacks description or risk: %+v", s, fx)
		}
	}
	if strings.Join(got, ",") != strings.Join(want.fixes, ",") {
		t.Errorf("fixes = %v, want %v", got, want.fixes)
	}
	for i, r := range want.risks {
		if i < len(f.Fixes) && f.Fixes[i].Risk != r {
			t.Errorf("fix %d risk = %s, want %s (%s)", i, f.Fixes[i].Risk, r, f.Fixes[i].Description)
		}
	}
	refs := strings.Join(f.RootCause.References, ",")
	for _, r := range want.refs {
		if !strings.Contains(refs, r) {
			t.Errorf("references %v lack %s", f.RootCause.References, r)
		}
	}
	for _, r := range want.noRefs {
		if strings.Contains(refs, r) {
			t.Errorf("references %v have %s", f.RootCause.References, r)
		}
	}
	if f.Node != want.node {
		t.Errorf("node = %q, want %q", f.Node, want.node)
	}
	if f.Summary == "" || f.RootCause.Message == "" || len(f.RootCause.Evidence) == 0 {
		t.Errorf("finding lacks summary, message or evidence: %+v", f)
	}
	if f.RootCause.Evidence[0] == "" || !strings.HasPrefix(f.RootCause.Evidence[0], "deletionTimestamp") && f.Object.Kind != "Pod" {
		t.Errorf("first evidence line %q is not the deletion", f.RootCause.Evidence[0])
	}
}

func TestStuckTerminatingPods(t *testing.T) {
	type tc struct {
		name      string
		world     func(t *testing.T) stWorld
		threshold time.Duration
		zero      bool // --min-age 0s
		want      stWant
	}
	fiveMin := 5 * time.Minute
	cases := []tc{
		{name: "node missing: PodGC has not force-deleted the pod",
			world: func(*testing.T) stWorld {
				w := stHealthy()
				w.pods = []*corev1.Pod{stPod("target", stOnNode("ip-10-0-3-7"), stDeleted(12*time.Minute, 30))}
				return w
			},
			want: stWant{rootCause: RCNodeMissing, node: "ip-10-0-3-7",
				summary:  []string{"ip-10-0-3-7", "no longer exists"},
				evidence: []string{"spec.nodeName ip-10-0-3-7: no such Node (1 nodes listed)", "PodGC", "deletionGracePeriodSeconds 30"},
				message:  []string{"PodGC should have force-deleted it"},
				fixes:    []string{ActionForceDelete}, risks: []report.Risk{report.RiskLow}}},
		{name: "node missing, already force-deleted, a finalizer owner is gone",
			world: func(*testing.T) stWorld {
				w := stHealthy()
				w.pods = []*corev1.Pod{stPod("target", stOnNode("ip-10-0-3-7"), stDeleted(12*time.Minute, 0),
					stFins("volume-janitor", "example.com/release-volume"))}
				return w
			},
			want: stWant{rootCause: RCNodeMissing, node: "ip-10-0-3-7",
				evidence: []string{"only finalizers hold it", "finalizer example.com/release-volume: added by field manager volume-janitor"},
				message:  []string{"example.com/release-volume has no running owner"},
				fixes:    []string{ActionRemoveFinalizer + ":example.com/release-volume"}, risks: []report.Risk{report.RiskMedium}}},
		{name: "node missing, grace running, finalizer owner gone: remove it, then force-delete",
			world: func(*testing.T) stWorld {
				w := stHealthy()
				w.pods = []*corev1.Pod{stPod("target", stOnNode("ip-10-0-3-7"), stDeleted(12*time.Minute, 30),
					stFins("volume-janitor", "example.com/release-volume"))}
				return w
			},
			want: stWant{rootCause: RCNodeMissing, node: "ip-10-0-3-7",
				fixes: []string{ActionRemoveFinalizer + ":example.com/release-volume", ActionForceDelete}}},
		{name: "node missing, StatefulSet pod with a claim: force delete is riskier",
			world: func(*testing.T) stWorld {
				w := stHealthy()
				w.pods = []*corev1.Pod{stPod("target", stStatefulSet(), stClaim("data-db-0"), stOnNode("ip-10-0-3-7"), stDeleted(12*time.Minute, 30))}
				return w
			},
			want: stWant{rootCause: RCNodeMissing, node: "ip-10-0-3-7", fixes: []string{ActionForceDelete},
				risks: []report.Risk{report.RiskMedium}}},
		{name: "node not ready: kubelet stopped heartbeating",
			world: func(*testing.T) stWorld {
				w := stHealthy()
				w.nodes = append(w.nodes, stNode("node-b", corev1.ConditionUnknown, 14*time.Minute))
				w.leases = append(w.leases, stLease("node-b", 15*time.Minute))
				w.pods = []*corev1.Pod{stPod("target", stOnNode("node-b"), stDeleted(8*time.Minute, 30))}
				return w
			},
			want: stWant{rootCause: RCNodeNotReady, node: "node-b",
				summary: []string{"node-b", "Ready=Unknown"},
				evidence: []string{"node node-b Ready=Unknown since", "NodeStatusUnknown", "Lease kube-node-lease/node-b last renewed", "(15m ago)",
					"taints: node.kubernetes.io/unreachable:NoExecute", "last status heartbeat"},
				fixes: []string{ActionForceDelete}, risks: []report.Risk{report.RiskMedium}}},
		{name: "node not ready, pod with a persistent volume: force delete is high risk",
			world: func(*testing.T) stWorld {
				w := stHealthy()
				w.nodes = append(w.nodes, stNode("node-b", corev1.ConditionUnknown, 14*time.Minute))
				w.leases = append(w.leases, stLease("node-b", 15*time.Minute))
				w.pods = []*corev1.Pod{stPod("target", stClaim("uploads"), stOnNode("node-b"), stDeleted(8*time.Minute, 30))}
				return w
			},
			want: stWant{rootCause: RCNodeNotReady, node: "node-b", fixes: []string{ActionForceDelete}, risks: []report.Risk{report.RiskHigh}}},
		{name: "node not ready, StatefulSet pod: force delete is high risk",
			world: func(*testing.T) stWorld {
				w := stHealthy()
				w.nodes = append(w.nodes, stNode("node-b", corev1.ConditionUnknown, 14*time.Minute))
				w.leases = append(w.leases, stLease("node-b", 15*time.Minute))
				w.pods = []*corev1.Pod{stPod("target", stStatefulSet(), stOnNode("node-b"), stDeleted(8*time.Minute, 30))}
				return w
			},
			want: stWant{rootCause: RCNodeNotReady, node: "node-b", fixes: []string{ActionForceDelete}, risks: []report.Risk{report.RiskHigh}}},
		{name: "node not ready without a Lease, out-of-service taint set: PodGC is not running",
			world: func(*testing.T) stWorld {
				w := stHealthy()
				n := stNode("node-b", corev1.ConditionUnknown, 30*time.Minute)
				n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: "node.kubernetes.io/out-of-service", Value: "nodeshutdown", Effect: corev1.TaintEffectNoExecute})
				w.nodes = append(w.nodes, n)
				w.pods = []*corev1.Pod{stPod("target", stOnNode("node-b"), stDeleted(8*time.Minute, 30))}
				return w
			},
			want: stWant{rootCause: RCNodeNotReady, node: "node-b",
				evidence: []string{"no Lease kube-node-lease/node-b", "out-of-service is set", "PodGC is not running"},
				fixes:    []string{ActionForceDelete}}},
		{name: "near miss: node NotReady but its kubelet still renews the Lease",
			world: func(*testing.T) stWorld {
				w := stHealthy()
				w.nodes = append(w.nodes, stNode("node-b", corev1.ConditionFalse, 20*time.Minute))
				w.leases = append(w.leases, stLease("node-b", 3*time.Second))
				w.pods = []*corev1.Pod{stPod("target", stOnNode("node-b"), stDeleted(8*time.Minute, 30))}
				return w
			},
			want: stWant{rootCause: RCKubeletKillFailing, node: "node-b",
				evidence: []string{"Ready=False", "KubeletNotReady", "last renewed"}}},
		{name: "near miss: node not ready, pod already deleted with grace 0: the finalizer is the blocker",
			world: func(*testing.T) stWorld {
				w := stHealthy()
				w.nodes = append(w.nodes, stNode("node-b", corev1.ConditionUnknown, 14*time.Minute))
				w.leases = append(w.leases, stLease("node-b", 15*time.Minute))
				w.pods = []*corev1.Pod{stPod("target", stOnNode("node-b"), stDeleted(8*time.Minute, 0), stFins("volume-janitor", "example.com/release-volume"))}
				return w
			},
			want: stWant{rootCause: RCFinalizerOwnerMissing, node: "node-b", fixes: []string{ActionRemoveFinalizer + ":example.com/release-volume"}}},
		{name: "kwok v0.5.0 never ran pod-remove-finalizer",
			world: func(*testing.T) stWorld {
				w := stWorld{
					nodes:  []*corev1.Node{stKwokNode("kwok-node-0", corev1.ConditionTrue, 3*time.Hour)},
					leases: []*coordinationv1.Lease{stLease("kwok-node-0", 2*time.Second)},
					deps:   []*appsv1.Deployment{stKwokDeployment("v0.5.0")},
				}
				w.pods = []*corev1.Pod{stPod("target", stOnNode("kwok-node-0"), stDeleted(6*time.Minute, 30), stFins("kwok", "kwok.x-k8s.io/fake"))}
				return w
			},
			want: stWant{rootCause: RCKwokStageNotRun, node: "kwok-node-0",
				evidence: []string{"finalizer kwok.x-k8s.io/fake is still on the pod (added by field manager kwok)",
					"annotation kwok.x-k8s.io/node=fake", "kwok controller: Deployment kube-system/kwok-controller: 1/1 available, image registry.k8s.io/kwok/kwok:v0.5.0",
					"kwok v0.5.0 is in the range of kubernetes-sigs/kwok#958"},
				message: []string{"kubernetes-sigs/kwok#958", "v0.5.1"},
				refs:    []string{"kubernetes-sigs/kwok#958", "kubernetes-sigs/kwok#962"},
				fixes:   []string{ActionRemoveFinalizer + ":kwok.x-k8s.io/fake"}, risks: []report.Risk{report.RiskLow}}},
		{name: "kwok v0.5.1 is outside the bug's range",
			world: func(*testing.T) stWorld {
				w := stWorld{
					nodes:  []*corev1.Node{stKwokNode("kwok-node-0", corev1.ConditionTrue, 3*time.Hour)},
					leases: []*coordinationv1.Lease{stLease("kwok-node-0", 2*time.Second)},
					deps:   []*appsv1.Deployment{stKwokDeployment("v0.5.1")},
				}
				w.pods = []*corev1.Pod{stPod("target", stOnNode("kwok-node-0"), stDeleted(6*time.Minute, 30), stFins("kwok", "kwok.x-k8s.io/fake"))}
				return w
			},
			want: stWant{rootCause: RCKwokStageNotRun, node: "kwok-node-0",
				evidence: []string{"outside the range of kubernetes-sigs/kwok#958"}, message: []string{"kwok is alive"},
				noRefs: []string{"kwok#958"}, fixes: []string{ActionRemoveFinalizer + ":kwok.x-k8s.io/fake"}}},
		{name: "kwok manages all nodes by flag; no finalizer, kwok never ended the grace period",
			world: func(*testing.T) stWorld {
				w := stHealthy()
				w.deps = []*appsv1.Deployment{stDeployment("kwok-system", "kwok", "kwok", "mirror.example/kwok:v0.6.1", 1, 1, "--manage-all-nodes=true")}
				w.pods = []*corev1.Pod{stPod("target", stDeleted(6*time.Minute, 30))}
				return w
			},
			want: stWant{rootCause: RCKwokStageNotRun, node: "node-a",
				evidence: []string{"kwok Deployment kwok-system/kwok runs with --manage-all-nodes=true", "deletionGracePeriodSeconds 30: kwok has not deleted"},
				message:  []string{"Restarting kwok"}}},
		{name: "kwok manages nodes by label selector",
			world: func(*testing.T) stWorld {
				w := stHealthy()
				w.nodes[0].Labels["sim"] = "true"
				w.deps = []*appsv1.Deployment{stKwokDeployment("v0.7.0", "--manage-nodes-with-label-selector=sim=true")}
				w.pods = []*corev1.Pod{stPod("target", stDeleted(6*time.Minute, 30))}
				return w
			},
			want: stWant{rootCause: RCKwokStageNotRun, node: "node-a", evidence: []string{"--manage-nodes-with-label-selector=sim=true"}}},
		{name: "kwok stopped, pod already deleted with grace 0 still holds kwok's finalizer",
			world: func(*testing.T) stWorld {
				w := stWorld{
					nodes:  []*corev1.Node{stKwokNode("kwok-node-0", corev1.ConditionUnknown, 20*time.Minute)},
					leases: []*coordinationv1.Lease{stLease("kwok-node-0", 21*time.Minute)},
				}
				w.pods = []*corev1.Pod{stPod("target", stOnNode("kwok-node-0"), stDeleted(6*time.Minute, 0), stFins("kwok", "kwok.x-k8s.io/fake"))}
				return w
			},
			want: stWant{rootCause: RCKwokStageNotRun, node: "kwok-node-0",
				evidence: []string{"no kwok controller Deployment found"}, message: []string{"not heartbeating either"},
				fixes: []string{ActionRemoveFinalizer + ":kwok.x-k8s.io/fake"}}},
		{name: "kwok node stopped heartbeating during the grace period: node-not-ready comes first",
			world: func(*testing.T) stWorld {
				w := stWorld{
					nodes:  []*corev1.Node{stKwokNode("kwok-node-0", corev1.ConditionUnknown, 20*time.Minute)},
					leases: []*coordinationv1.Lease{stLease("kwok-node-0", 21*time.Minute)},
				}
				w.pods = []*corev1.Pod{stPod("target", stOnNode("kwok-node-0"), stDeleted(6*time.Minute, 30))}
				return w
			},
			want: stWant{rootCause: RCNodeNotReady, node: "kwok-node-0", fixes: []string{ActionForceDelete}}},
		{name: "OpenKruise preDelete hook finalizer holds a deleted pod",
			world: func(t *testing.T) stWorld {
				w := stHealthy()
				w.workloads = []*kruise.Workload{stCloneSet(t, map[string]any{"finalizersHandler": []any{"example.com/unregister"}})}
				w.pods = []*corev1.Pod{stCloneSetPod(stDeleted(10*time.Minute, 0), stStopped(), stFins("registry-agent", "example.com/unregister"))}
				w.pods[0].Name = "target"
				return w
			},
			want: stWant{rootCause: RCKruisePreDeleteHook, node: "node-a",
				summary: []string{"PreparingDelete for 20m", "example.com/unregister"},
				evidence: []string{"label lifecycle.apps.kruise.io/state=PreparingDelete since", "CloneSet shop/cart spec.lifecycle.preDelete: finalizersHandler [example.com/unregister]",
					"hook finalizer example.com/unregister is still on the pod (added by field manager registry-agent)"}}},
		{name: "OpenKruise preDelete hook label holds a pod chosen for deletion",
			world: func(t *testing.T) stWorld {
				w := stHealthy()
				w.workloads = []*kruise.Workload{stCloneSet(t, map[string]any{"labelsHandler": map[string]any{"example.com/in-lb": "true"}})}
				p := stCloneSetPod()
				p.Name = "target"
				p.Labels["example.com/in-lb"] = "true"
				w.pods = []*corev1.Pod{p}
				return w
			},
			want: stWant{rootCause: RCKruisePreDeleteHook, node: "node-a",
				evidence: []string{"hook label example.com/in-lb=true is still on the pod"}, message: []string{"was chosen for deletion"}}},
		{name: "near miss: PreparingDelete for less than the threshold",
			threshold: time.Hour,
			world: func(t *testing.T) stWorld {
				w := stHealthy()
				w.workloads = []*kruise.Workload{stCloneSet(t, map[string]any{"labelsHandler": map[string]any{"example.com/in-lb": "true"}})}
				p := stCloneSetPod()
				p.Name = "target"
				p.Labels["example.com/in-lb"] = "true"
				w.pods = []*corev1.Pod{p}
				return w
			}},
		{name: "near miss: preDelete hook already released, another finalizer holds the pod",
			world: func(t *testing.T) stWorld {
				w := stHealthy()
				w.workloads = []*kruise.Workload{stCloneSet(t, map[string]any{"finalizersHandler": []any{"example.com/unregister"}})}
				w.pods = []*corev1.Pod{stCloneSetPod(stDeleted(10*time.Minute, 0), stStopped(), stFins("backup-agent", "example.com/snapshot"))}
				w.pods[0].Name = "target"
				return w
			},
			want: stWant{rootCause: RCFinalizerOwnerMissing, node: "node-a", fixes: []string{ActionRemoveFinalizer + ":example.com/snapshot"}}},
		{name: "kubelet cannot kill the container",
			world: func(*testing.T) stWorld {
				w := stHealthy()
				p := stPod("target", stDeleted(9*time.Minute, 30))
				w.pods = []*corev1.Pod{p}
				w.events = []*corev1.Event{
					stEvent(stPodRef(p), corev1.EventTypeWarning, "FailedKillPod", "kubelet",
						`error killing pod: failed to "KillContainer" for "app" with KillContainerError: "rpc error: code = DeadlineExceeded desc = context deadline exceeded"`, 14, time.Minute),
					stEvent(stPodRef(p), corev1.EventTypeNormal, "Killing", "kubelet", "Stopping container app", 1, 10*time.Minute),
				}
				return w
			},
			want: stWant{rootCause: RCKubeletKillFailing, node: "node-a",
				evidence: []string{"Warning FailedKillPod from kubelet (x14", "KillContainerError", "containers still running: app", "node node-a Ready=True"},
				noEvid:   []string{"Stopping container"},
				message:  []string{"reports FailedKillPod"}}},
		{name: "kubelet silent: no event, containers stopped, grace never ended",
			world: func(*testing.T) stWorld {
				w := stHealthy()
				w.pods = []*corev1.Pod{stPod("target", stDeleted(9*time.Minute, 30), stStopped())}
				return w
			},
			want: stWant{rootCause: RCKubeletKillFailing, node: "node-a", evidence: []string{"no kubelet Warning event about this pod"}}},
		{name: "kubelet first, then the finalizer whose owner is gone",
			world: func(*testing.T) stWorld {
				w := stHealthy()
				w.pods = []*corev1.Pod{stPod("target", stDeleted(9*time.Minute, 30), stFins("volume-janitor", "example.com/release-volume"))}
				return w
			},
			want: stWant{rootCause: RCKubeletKillFailing, node: "node-a",
				evidence: []string{"after the kubelet: finalizer example.com/release-volume: added by field manager volume-janitor"}}},
		{name: "pod with two finalizers, one owner gone and one running: only the orphan is removed",
			world: func(*testing.T) stWorld {
				w := stHealthy()
				w.deps = []*appsv1.Deployment{stDeployment("backup", "backup-agent", "agent", "acme/backup-agent:2.3.0", 2, 2)}
				w.pods = []*corev1.Pod{stPod("target", stDeleted(9*time.Minute, 0), stStopped(),
					stFins("volume-janitor", "example.com/release-volume"), stFins("backup-agent", "backup.acme.io/snapshot"))}
				return w
			},
			want: stWant{rootCause: RCFinalizerOwnerMissing, node: "node-a",
				evidence: []string{"finalizer example.com/release-volume: added by field manager volume-janitor (metadata.managedFields; not in the known-finalizer table); no Deployment named volume-janitor",
					"finalizer backup.acme.io/snapshot: added by field manager backup-agent", "Deployment backup/backup-agent: 2/2 available"},
				fixes: []string{ActionRemoveFinalizer + ":example.com/release-volume"}, risks: []report.Risk{report.RiskMedium}}},
		{name: "near miss: the finalizer's owner runs and is healthy: not missing",
			world: func(*testing.T) stWorld {
				w := stHealthy()
				w.deps = []*appsv1.Deployment{stDeployment("backup", "backup-agent", "agent", "acme/backup-agent:2.3.0", 2, 2)}
				p := stPod("target", stDeleted(9*time.Minute, 0), stStopped(), stFins("backup-agent", "backup.acme.io/snapshot"))
				w.pods = []*corev1.Pod{p}
				w.events = []*corev1.Event{stEvent(stPodRef(p), corev1.EventTypeWarning, "SnapshotFailed", "backup-agent",
					"snapshot of volume data failed: quota exceeded", 5, 2*time.Minute)}
				return w
			},
			want: stWant{rootCause: RCFinalizerOwnerNotActing, node: "node-a",
				evidence: []string{"Deployment backup/backup-agent: 2/2 available", "Warning SnapshotFailed from backup-agent (x5"},
				message:  []string{"runs but has not removed it"}}},
		{name: "Job tracking finalizer: built-in owner is not acting",
			world: func(*testing.T) stWorld {
				w := stHealthy()
				w.pods = []*corev1.Pod{stPod("target", stDeleted(9*time.Minute, 0), stStopped(), stFins("kube-controller-manager", "batch.kubernetes.io/job-tracking"))}
				return w
			},
			want: stWant{rootCause: RCFinalizerOwnerNotActing, node: "node-a",
				evidence: []string{"owner Job controller (kube-controller-manager) (known-finalizer table)", "built into the control plane"}}},
		{name: "pod read only in metadata: the finalizer is still diagnosed",
			world: func(*testing.T) stWorld {
				w := stHealthy()
				w.metaOnlyPods = []*corev1.Pod{stPod("target", stDeleted(9*time.Minute, 30), stFins("volume-janitor", "example.com/release-volume"))}
				w.unread = map[snapshot.Input]error{snapshot.InputPods: errors.New("get pods: timeout")}
				return w
			},
			want: stWant{rootCause: RCFinalizerOwnerMissing, node: "", fixes: []string{ActionRemoveFinalizer + ":example.com/release-volume"}}},
		{name: "nodes unread: a missing node is not claimed",
			world: func(*testing.T) stWorld {
				w := stHealthy()
				w.nodes, w.leases = nil, nil
				w.unread = map[snapshot.Input]error{snapshot.InputNodes: errors.New("forbidden: list nodes")}
				w.pods = []*corev1.Pod{stPod("target", stOnNode("ip-10-0-3-7"), stDeleted(12*time.Minute, 30))}
				return w
			},
			want: stWant{rootCause: RCKubeletKillFailing, node: "ip-10-0-3-7", evidence: []string{"nodes were not read"}}},
		{name: "kwok manages a single node by flag",
			world: func(*testing.T) stWorld {
				w := stHealthy()
				w.deps = []*appsv1.Deployment{stKwokDeployment("v0.6.0", "--manage-single-node=node-a")}
				w.pods = []*corev1.Pod{stPod("target", stDeleted(6*time.Minute, 30))}
				return w
			},
			want: stWant{rootCause: RCKwokStageNotRun, node: "node-a", evidence: []string{"--manage-single-node=node-a"}}},
		{name: "near miss: kwok manages another single node",
			world: func(*testing.T) stWorld {
				w := stHealthy()
				w.deps = []*appsv1.Deployment{stKwokDeployment("v0.6.0", "--manage-single-node=node-z")}
				w.pods = []*corev1.Pod{stPod("target", stDeleted(6*time.Minute, 30))}
				return w
			},
			want: stWant{rootCause: RCKubeletKillFailing, node: "node-a"}},
		{name: "near miss: pod still within its grace period",
			zero: true,
			world: func(*testing.T) stWorld {
				w := stHealthy()
				w.nodes = append(w.nodes, stNode("node-b", corev1.ConditionUnknown, 14*time.Minute))
				w.pods = []*corev1.Pod{stPod("target", stOnNode("node-b"), stDeleted(-20*time.Second, 30))}
				return w
			}},
		{name: "near miss: pod deleted 1s ago",
			threshold: fiveMin,
			world: func(*testing.T) stWorld {
				w := stHealthy()
				w.pods = []*corev1.Pod{stPod("target", stOnNode("gone"), stDeleted(time.Second, 0), stFins("volume-janitor", "example.com/release-volume"))}
				return w
			}},
		{name: "the same pod is reported at once with --min-age 0s",
			zero: true,
			world: func(*testing.T) stWorld {
				w := stHealthy()
				w.pods = []*corev1.Pod{stPod("target", stOnNode("gone"), stDeleted(time.Second, 0), stFins("volume-janitor", "example.com/release-volume"))}
				return w
			},
			want: stWant{rootCause: RCNodeMissing, node: "gone", fixes: []string{ActionRemoveFinalizer + ":example.com/release-volume"}}},
		{name: "near miss: a running pod",
			world: func(*testing.T) stWorld {
				w := stHealthy()
				w.pods = []*corev1.Pod{stPod("target")}
				return w
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			th := fiveMin
			switch {
			case c.zero:
				th = 0
			case c.threshold > 0:
				th = c.threshold
			}
			fs := StuckTerminating{}.Run(c.world(t).snap(), th)
			stCheck(t, fs, "target", c.want)
		})
	}
}

func TestStuckTerminatingObjects(t *testing.T) {
	readd := "Machine.cluster.x-k8s.io \"m-2\" is invalid: metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{\"machine.cluster.x-k8s.io/pre-drain\"}"
	cases := []struct {
		name  string
		world func() stWorld
		want  stWant
	}{
		{name: "custom resource whose finalizer's manager has no Deployment",
			world: func() stWorld {
				return stWorld{objects: []snapshot.Object{stObject(stWidgets, "Widget", "shop", "target", 20*time.Minute, "widget-operator", "example.com/protect")}}
			},
			want: stWant{rootCause: RCFinalizerOwnerMissing,
				summary:  []string{"Deleting for 20m", "example.com/protect"},
				evidence: []string{"deletionTimestamp", "finalizer example.com/protect: added by field manager widget-operator (metadata.managedFields; not in the known-finalizer table); no Deployment named widget-operator or running a container named so"},
				fixes:    []string{ActionRemoveFinalizer + ":example.com/protect"}, risks: []report.Risk{report.RiskMedium}}},
		{name: "Deployments unread: the owner is not claimed missing",
			world: func() stWorld {
				return stWorld{objects: []snapshot.Object{stObject(stWidgets, "Widget", "shop", "target", 20*time.Minute, "widget-operator", "example.com/protect")},
					unread: map[snapshot.Input]error{snapshot.InputControllers: errors.New("forbidden: list apps/deployments in all namespaces")}}
			},
			want: stWant{rootCause: RCFinalizerOwnerNotActing, evidence: []string{"Deployments were not (all) read"},
				message: []string{"could not be checked"}}},
		{name: "near miss: owner Deployment named like the manager runs",
			world: func() stWorld {
				return stWorld{objects: []snapshot.Object{stObject(stWidgets, "Widget", "shop", "target", 20*time.Minute, "widget-operator", "example.com/protect")},
					deps: []*appsv1.Deployment{stDeployment("widgets", "widget-operator", "manager", "acme/widget-operator:1.0", 1, 1)}}
			},
			want: stWant{rootCause: RCFinalizerOwnerNotActing, evidence: []string{"Deployment widgets/widget-operator: 1/1 available"}}},
		{name: "owner found by container name, scaled to zero",
			world: func() stWorld {
				return stWorld{objects: []snapshot.Object{stObject(stWidgets, "Widget", "shop", "target", 20*time.Minute, "widget-operator", "example.com/protect")},
					deps: []*appsv1.Deployment{stDeployment("acme-system", "acme-controller-manager", "widget-operator", "acme/ops:1.0", 0, 0)}}
			},
			want: stWant{rootCause: RCFinalizerOwnerNotActing, evidence: []string{"Deployment acme-system/acme-controller-manager: 0/0 available"},
				message: []string{"has no available replica"}}},
		{name: "finalizer set by kubectl: no controller owns it",
			world: func() stWorld {
				return stWorld{objects: []snapshot.Object{stObject(stWidgets, "Widget", "shop", "target", 20*time.Minute, "kubectl-edit", "example.com/protect")}}
			},
			want: stWant{rootCause: RCFinalizerOwnerMissing, evidence: []string{"kubectl-edit is a client command, not a controller"},
				fixes: []string{ActionRemoveFinalizer + ":example.com/protect"}}},
		{name: "unknown finalizer set by kube-controller-manager: built in",
			world: func() stWorld {
				return stWorld{objects: []snapshot.Object{stObject(stWidgets, "Widget", "shop", "target", 20*time.Minute, "kube-controller-manager", "example.com/protect")}}
			},
			want: stWant{rootCause: RCFinalizerOwnerNotActing, evidence: []string{"kube-controller-manager is a control-plane component"}}},
		{name: "no table row and no manager: owner unknown",
			world: func() stWorld {
				return stWorld{objects: []snapshot.Object{stObject(stWidgets, "Widget", "shop", "target", 20*time.Minute, "", "example.com/protect")}}
			},
			want: stWant{rootCause: RCFinalizerOwnerNotActing, evidence: []string{"managedFields name no manager"}}},
		{name: "foreground deletion waits for the garbage collector",
			world: func() stWorld {
				return stWorld{objects: []snapshot.Object{stObject(stDeploys, "Deployment", "shop", "target", 20*time.Minute, "kube-apiserver", "foregroundDeletion")}}
			},
			want: stWant{rootCause: RCFinalizerOwnerNotActing, evidence: []string{"garbage collector (kube-controller-manager)", "built into the control plane"}}},
		{name: "known finalizer: owner found by image repository",
			world: func() stWorld {
				return stWorld{objects: []snapshot.Object{stObject(stApps, "Application", "argocd", "target", 20*time.Minute, "argocd-server", "resources-finalizer.argocd.argoproj.io")},
					deps: []*appsv1.Deployment{stDeployment("gitops", "argocd-repo-server", "repo-server", "quay.io/argoproj/argocd:v2.13.1", 1, 1)}}
			},
			want: stWant{rootCause: RCFinalizerOwnerNotActing, evidence: []string{"Argo CD application controller (known-finalizer table)", "Deployment gitops/argocd-repo-server: 1/1 available"}}},
		{name: "known finalizer: owner not installed",
			world: func() stWorld {
				return stWorld{objects: []snapshot.Object{stObject(stApps, "Application", "argocd", "target", 20*time.Minute, "argocd-server", "resources-finalizer.argocd.argoproj.io")}}
			},
			want: stWant{rootCause: RCFinalizerOwnerMissing,
				evidence: []string{"no Deployment argocd/argocd-application-controller, no Deployment running image argocd", "no Deployment named argocd-server"},
				fixes:    []string{ActionRemoveFinalizer + ":resources-finalizer.argocd.argoproj.io"}}},
		{name: "near miss: object without finalizers",
			world: func() stWorld {
				return stWorld{objects: []snapshot.Object{stObject(stWidgets, "Widget", "shop", "target", 20*time.Minute, "")}}
			}},
		{name: "near miss: object deleted 1s ago",
			world: func() stWorld {
				return stWorld{objects: []snapshot.Object{stObject(stWidgets, "Widget", "shop", "target", time.Second, "widget-operator", "example.com/protect")}}
			}},
		{name: "Machine of a Cluster paused by an interrupted clusterctl move",
			world: func() stWorld {
				m := stMachine("target", "prod", 30*time.Minute)
				m.Meta.Annotations = map[string]string{"clusterctl.cluster.x-k8s.io/delete-for-move": ""}
				return stWorld{objects: []snapshot.Object{m}, clusters: []*unstructured.Unstructured{stCluster("fleet", "prod", true)}}
			},
			want: stWant{rootCause: RCOwnerPaused, summary: []string{"Cluster fleet/prod is paused"},
				evidence: []string{"Cluster fleet/prod: spec.paused=true", "clusterctl.cluster.x-k8s.io/delete-for-move", "finalizer machine.cluster.x-k8s.io: owner Cluster API controller"},
				message:  []string{"interrupted clusterctl move"}}},
		{name: "Machine paused by its own annotation",
			world: func() stWorld {
				m := stMachine("target", "prod", 30*time.Minute)
				m.Meta.Annotations = map[string]string{"cluster.x-k8s.io/paused": ""}
				return stWorld{objects: []snapshot.Object{m}, clusters: []*unstructured.Unstructured{stCluster("fleet", "prod", false)}}
			},
			want: stWant{rootCause: RCOwnerPaused, evidence: []string{"Machine fleet/target: annotation cluster.x-k8s.io/paused"}, message: []string{"unpause it"}}},
		{name: "Machine whose owning MachineSet is paused",
			world: func() stWorld {
				ms := stObject(stMachineSets, "MachineSet", "fleet", "prod-md-0-7bqx", 30*time.Minute, "manager", "machineset.cluster.x-k8s.io")
				ms.Meta.Annotations = map[string]string{"cluster.x-k8s.io/paused": ""}
				m := stObject(stMachines, "Machine", "fleet", "target", 30*time.Minute, "manager", "machine.cluster.x-k8s.io")
				m.Meta.OwnerReferences = []metav1.OwnerReference{{APIVersion: "cluster.x-k8s.io/v1beta1", Kind: "MachineSet",
					Name: ms.Meta.Name, UID: ms.Meta.UID, Controller: stTrue(), BlockOwnerDeletion: stTrue()}}
				return stWorld{objects: []snapshot.Object{ms, m}}
			},
			want: stWant{rootCause: RCOwnerPaused, evidence: []string{"MachineSet fleet/prod-md-0-7bqx: annotation cluster.x-k8s.io/paused"}}},
		{name: "paused Cluster being deleted",
			world: func() stWorld {
				o := stObject(stClusters, "Cluster", "fleet", "target", 30*time.Minute, "manager", "cluster.cluster.x-k8s.io")
				c := stCluster("fleet", "target", true)
				c.SetUID(o.Meta.UID)
				return stWorld{objects: []snapshot.Object{o}, clusters: []*unstructured.Unstructured{c}}
			},
			want: stWant{rootCause: RCOwnerPaused, evidence: []string{"Cluster fleet/target: spec.paused=true"}}},
		{name: "near miss: the Machine's Cluster is not paused",
			world: func() stWorld {
				return stWorld{objects: []snapshot.Object{stMachine("target", "prod", 30*time.Minute)},
					clusters: []*unstructured.Unstructured{stCluster("fleet", "prod", false)}}
			},
			want: stWant{rootCause: RCFinalizerOwnerMissing,
				evidence: []string{"no Deployment capi-system/capi-controller-manager", "no Deployment named manager"},
				fixes:    []string{ActionRemoveFinalizer + ":machine.cluster.x-k8s.io"}}},
		{name: "controller keeps re-adding a finalizer after deletion began",
			world: func() stWorld {
				m := stMachine("target", "prod", 30*time.Minute)
				return stWorld{objects: []snapshot.Object{m}, clusters: []*unstructured.Unstructured{stCluster("fleet", "prod", false)},
					events: []*corev1.Event{
						stEvent(stObjRef(m), corev1.EventTypeWarning, "ReconcileError", "machine-controller", readd, 7, time.Minute),
						stEvent(stObjRef(m), corev1.EventTypeWarning, "FailedUpdate", "machinehealthcheck-controller", readd, 2, 3*time.Minute),
					}}
			},
			want: stWant{rootCause: RCFinalizerReaddRace, summary: []string{"9 refused"},
				evidence: []string{"7 Warning event(s) ReconcileError from machine-controller", "2 Warning event(s) FailedUpdate from machinehealthcheck-controller",
					"no new finalizers can be added"},
				refs:  []string{"kubernetes-sigs/cluster-api#11812"},
				fixes: []string{ActionRemoveFinalizer + ":machine.cluster.x-k8s.io"}}},
		{name: "re-add race with an affected Cluster API version",
			world: func() stWorld {
				m := stMachine("target", "prod", 30*time.Minute)
				return stWorld{objects: []snapshot.Object{m}, clusters: []*unstructured.Unstructured{stCluster("fleet", "prod", false)},
					deps: []*appsv1.Deployment{stDeployment("capi-system", "capi-controller-manager", "manager",
						"registry.k8s.io/cluster-api/cluster-api-controller:v1.9.4", 1, 1)},
					events: []*corev1.Event{stEvent(stObjRef(m), corev1.EventTypeWarning, "ReconcileError", "machine-controller", readd, 7, time.Minute)}}
			},
			want: stWant{rootCause: RCFinalizerReaddRace,
				evidence: []string{"Cluster API v1.9.4 (Deployment capi-system/capi-controller-manager) is in the range of kubernetes-sigs/cluster-api#11812"},
				message:  []string{"upgrade to v1.9.5"}}},
		{name: "near miss: owner-paused wins over a re-add race",
			world: func() stWorld {
				m := stMachine("target", "prod", 30*time.Minute)
				return stWorld{objects: []snapshot.Object{m}, clusters: []*unstructured.Unstructured{stCluster("fleet", "prod", true)},
					events: []*corev1.Event{stEvent(stObjRef(m), corev1.EventTypeWarning, "ReconcileError", "machine-controller", readd, 7, time.Minute)}}
			},
			want: stWant{rootCause: RCOwnerPaused}},
		{name: "near miss: an unrelated Warning event is no re-add race",
			world: func() stWorld {
				m := stMachine("target", "prod", 30*time.Minute)
				return stWorld{objects: []snapshot.Object{m}, clusters: []*unstructured.Unstructured{stCluster("fleet", "prod", false)},
					events: []*corev1.Event{stEvent(stObjRef(m), corev1.EventTypeWarning, "ReconcileError", "machine-controller", "failed to drain node", 7, time.Minute)}}
			},
			want: stWant{rootCause: RCFinalizerOwnerMissing, evidence: []string{"failed to drain node"}, fixes: []string{ActionRemoveFinalizer + ":machine.cluster.x-k8s.io"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := StuckTerminating{}.Run(c.world().snap(), 5*time.Minute)
			stCheck(t, fs, "target", c.want)
		})
	}
}

// stNamespace is a namespace being deleted, with the conditions the namespace controller sets.
func stNamespace(name string, dueAgo time.Duration, conds ...corev1.NamespaceCondition) *corev1.Namespace {
	return &corev1.Namespace{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-ns-" + name), ResourceVersion: "77",
			DeletionTimestamp: stMT(dueAgo), Labels: map[string]string{"kubernetes.io/metadata.name": name}},
		Spec:   corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}},
		Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating, Conditions: conds},
	}
}

func stNSCond(t corev1.NamespaceConditionType, status corev1.ConditionStatus, reason, msg string) corev1.NamespaceCondition {
	return corev1.NamespaceCondition{Type: t, Status: status, Reason: reason, Message: msg, LastTransitionTime: metav1.NewTime(stAgo(9 * time.Minute))}
}

func stAPIService(name, group, version, svcNS, svcName, status, reason, msg string) *unstructured.Unstructured {
	spec := map[string]any{"group": group, "version": version, "groupPriorityMinimum": int64(100), "versionPriority": int64(100)}
	if svcName != "" {
		spec["service"] = map[string]any{"namespace": svcNS, "name": svcName, "port": int64(443)}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": name},
		"spec":     spec,
		"status": map[string]any{"conditions": []any{map[string]any{
			"type": "Available", "status": status, "reason": reason, "message": msg, "lastTransitionTime": stAgo(time.Hour).Format(time.RFC3339)}}},
	}}
}

func TestStuckTerminatingNamespaces(t *testing.T) {
	discovery := "Discovery failed for some groups, 1 failing: unable to retrieve the complete list of server APIs: metrics.k8s.io/v1beta1: stale GroupVersion discovery: metrics.k8s.io/v1beta1"
	cases := []struct {
		name  string
		world func() stWorld
		want  stWant
	}{
		{name: "unavailable APIService blocks discovery",
			world: func() stWorld {
				return stWorld{
					namespaces: []*corev1.Namespace{stNamespace("target", 10*time.Minute,
						stNSCond(corev1.NamespaceDeletionDiscoveryFailure, corev1.ConditionTrue, "DiscoveryFailed", discovery),
						stNSCond(corev1.NamespaceContentRemaining, corev1.ConditionFalse, "ContentRemoved", "All content successfully removed"))},
					apiServices: []*unstructured.Unstructured{
						stAPIService("v1.apps", "apps", "v1", "", "", "True", "Local", "Local APIServices are always available"),
						stAPIService("v1beta1.metrics.k8s.io", "metrics.k8s.io", "v1beta1", "kube-system", "metrics-server", "False", "ServiceNotFound",
							`service/metrics-server in "kube-system" is not present`),
					},
				}
			},
			want: stWant{rootCause: RCNamespaceDiscoveryFailed, summary: []string{"APIService v1beta1.metrics.k8s.io"},
				evidence: []string{"condition NamespaceDeletionDiscoveryFailure=True (DiscoveryFailed)", "failing group versions named by the condition: metrics.k8s.io/v1beta1",
					"APIService v1beta1.metrics.k8s.io (service kube-system/metrics-server): Available=False (ServiceNotFound)", "named by the condition",
					"spec.finalizers [kubernetes]"},
				noEvid:  []string{"APIService v1.apps"},
				message: []string{"every namespace"},
				refs:    []string{"kubernetes/kubernetes#60807"}}},
		{name: "discovery failed, APIServices unread: the condition still names the group",
			world: func() stWorld {
				return stWorld{
					namespaces: []*corev1.Namespace{stNamespace("target", 10*time.Minute,
						stNSCond(corev1.NamespaceDeletionDiscoveryFailure, corev1.ConditionTrue, "DiscoveryFailed", discovery))},
					unread: map[snapshot.Input]error{snapshot.InputAPIServices: errors.New("forbidden: list apiregistration.k8s.io/apiservices")},
				}
			},
			want: stWant{rootCause: RCNamespaceDiscoveryFailed, summary: []string{"metrics.k8s.io/v1beta1"}, evidence: []string{"APIServices were not read"}}},
		{name: "content with finalizers remains",
			world: func() stWorld {
				return stWorld{
					namespaces: []*corev1.Namespace{stNamespace("target", 10*time.Minute,
						stNSCond(corev1.NamespaceDeletionDiscoveryFailure, corev1.ConditionFalse, "ResourcesDiscovered", "All resources successfully discovered"),
						stNSCond(corev1.NamespaceContentRemaining, corev1.ConditionTrue, "SomeResourcesRemain", "Some resources are remaining: pods. has 2 resource instances, widgets.example.com has 1 resource instances"),
						stNSCond(corev1.NamespaceFinalizersRemaining, corev1.ConditionTrue, "SomeFinalizersRemain", "Some content in the namespace has finalizers remaining: example.com/protect in 1 resource instances"))},
					objects: []snapshot.Object{stObject(stWidgets, "Widget", "target", "w1", 9*time.Minute, "widget-operator", "example.com/protect")},
				}
			},
			want: stWant{rootCause: RCNamespaceContentRemaining, summary: []string{"pods (2), widgets.example.com (1) remains"},
				evidence: []string{"remaining: pods (2), widgets.example.com (1)", "held by finalizers: example.com/protect (1)",
					"objects being deleted in the namespace: Widget w1 [example.com/protect]"},
				noEvid: []string{"NamespaceDeletionDiscoveryFailure"}}},
		{name: "no condition yet: the namespace controller has not acted",
			world: func() stWorld {
				return stWorld{namespaces: []*corev1.Namespace{stNamespace("target", 10*time.Minute)}}
			},
			want: stWant{rootCause: RCFinalizerOwnerNotActing, evidence: []string{"no NamespaceDeletion* or *Remaining condition"}, message: []string{"kube-controller-manager"}}},
		{name: "near miss: namespace deleted 1s ago",
			world: func() stWorld {
				return stWorld{namespaces: []*corev1.Namespace{stNamespace("target", time.Second,
					stNSCond(corev1.NamespaceDeletionDiscoveryFailure, corev1.ConditionTrue, "DiscoveryFailed", discovery))}}
			}},
		{name: "near miss: namespace not being deleted",
			world: func() stWorld {
				ns := stNamespace("target", time.Hour)
				ns.DeletionTimestamp = nil
				ns.Status = corev1.NamespaceStatus{Phase: corev1.NamespaceActive}
				return stWorld{namespaces: []*corev1.Namespace{ns}}
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := StuckTerminating{}.Run(c.world().snap(), 5*time.Minute)
			stCheck(t, fs, "target", c.want)
			for _, f := range fs {
				for _, fx := range f.Fixes {
					if f.Object.Kind == "Namespace" {
						t.Errorf("namespace finding offers fix %s: no fix may finalize a namespace", fx.Action)
					}
				}
			}
		})
	}
}

func TestStuckTerminatingInfo(t *testing.T) {
	info := StuckTerminating{}.Info()
	if info.ID != "stuck-terminating" || info.Threshold != 5*time.Minute || info.Title == "" || info.Description == "" {
		t.Fatalf("info = %+v", info)
	}
	contract := []string{"finalizer-owner-missing", "finalizer-owner-not-acting", "kruise-predelete-hook-pending",
		"kwok-stage-not-run", "node-missing", "node-not-ready", "kubelet-kill-failing", "owner-paused",
		"finalizer-readd-race", "namespace-content-remaining", "namespace-discovery-failed"}
	have := map[string]RootCause{}
	for _, rc := range info.RootCauses {
		have[rc.ID] = rc
		if rc.Title == "" || rc.Description == "" || rc.Severity.Rank() == 0 {
			t.Errorf("root cause %s lacks title, description or severity", rc.ID)
		}
		for _, a := range rc.Actions {
			if _, ok := LookupAction(a); !ok {
				t.Errorf("root cause %s names unknown action %s", rc.ID, a)
			}
		}
	}
	for _, id := range contract {
		if _, ok := have[id]; !ok {
			t.Errorf("root cause %s from the contract is missing", id)
		}
	}
	if len(have) != len(contract) {
		t.Errorf("root causes = %d, contract lists %d", len(have), len(contract))
	}
	for _, n := range info.Needs {
		if (n.Input == snapshot.InputPods) == n.Optional {
			t.Errorf("need %s optional=%v: only pods are required", n.Input, n.Optional)
		}
	}
}

func TestStuckTerminatingPodCandidates(t *testing.T) {
	w := stHealthy()
	deleting := stPod("deleting", stDeleted(time.Minute, 30))
	preparing := stCloneSetPod()
	running := stPod("running")
	w.pods = []*corev1.Pod{deleting, preparing, running}
	s := w.snap()
	s.FullPods = nil // the collector asks on the metadata-only snapshot
	s.Index()
	got := StuckTerminating{}.PodCandidates(s)
	if len(got) != 2 || got[0] != deleting.UID || got[1] != preparing.UID {
		t.Errorf("PodCandidates = %v, want %s and %s", got, deleting.UID, preparing.UID)
	}
}

func TestStuckTerminatingFinalizerManagers(t *testing.T) {
	p := stPod("p")
	p.ManagedFields = []metav1.ManagedFieldsEntry{
		stSpecManaged("kube-controller-manager"),
		stManagedFinalizers("agent-a", "v1", time.Minute, "example.com/a"),
		stManagedFinalizers("agent-b", "v1", time.Minute, "example.com/b", `odd.example.com/"quoted"`),
		{Manager: "broken", FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{not json`)}},
		{Manager: "status-writer", Subresource: "status", FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{}}`)}},
	}
	for fin, want := range map[string]string{
		"example.com/a": "agent-a", "example.com/b": "agent-b", `odd.example.com/"quoted"`: "agent-b", "example.com/none": "",
	} {
		got := strings.Join(stManagerNames(stFinalizerManagers(p, fin)), ",")
		if got != want {
			t.Errorf("managers of %s = %q, want %q", fin, got, want)
		}
	}
}

func TestStuckTerminatingCoverageAndIDs(t *testing.T) {
	w := stHealthy()
	w.pods = []*corev1.Pod{
		stPod("a", stOnNode("gone"), stDeleted(time.Hour, 30)),
		stPod("b", stOnNode("gone"), stDeleted(time.Hour, 30)),
	}
	w.unread = map[snapshot.Input]error{snapshot.InputControllers: errors.New("forbidden: list apps/deployments")}
	s := w.snap()
	fs, cov := Run(s, []Check{StuckTerminating{}}, -1)
	if len(fs) != 2 || len(cov.Degraded) != 1 || cov.Degraded[0].Check != CheckStuckTerminating || len(cov.Skipped) != 0 {
		t.Fatalf("findings %d, coverage %+v", len(fs), cov)
	}
	again, _ := Run(s, []Check{StuckTerminating{}}, -1)
	if fs[0].ID != again[0].ID || fs[0].ID == fs[1].ID {
		t.Errorf("IDs not stable or not distinct: %s %s %s", fs[0].ID, again[0].ID, fs[1].ID)
	}
	for _, f := range fs {
		if f.Node != "gone" || f.Object.ResourceVersion == "" || f.Owner == nil || f.Owner.Kind != "ReplicaSet" {
			t.Errorf("finding %+v lacks node, resourceVersion or owner", f)
		}
	}
	w.unread = map[snapshot.Input]error{snapshot.InputPods: errors.New("forbidden: list pods")}
	if _, cov := Run(w.snap(), []Check{StuckTerminating{}}, -1); len(cov.Skipped) != 1 {
		t.Errorf("pods unread: coverage %+v, want the check skipped", cov)
	}
}
