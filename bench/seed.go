package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
)

// The population's fixed shape. Pods come in groups of groupSize, each group owned by one
// ReplicaSet or CloneSet in one namespace; groups are spread round-robin over the namespaces.
const (
	namespaces = 1000
	nodes      = 500
	// deadNodes are the first nodes: NotReady, heartbeat an hour old, as after a kubelet died.
	deadNodes = 5
	groupSize = 20
	// Every cloneSetEvery-th group is a CloneSet; the others are ReplicaSets (Deployments' pods).
	cloneSetEvery = 4
	// One pod in stuckEvery is stuck in a state a check diagnoses.
	stuckEvery  = 200
	stuckOffset = 7
	// One CloneSet in frozenEvery has a spec its controller never observed (expectations).
	frozenEvery = 100
	// One pod in warningEvery has a Warning event, one in normalEvery a Normal one.
	warningEvery = 10
	normalEvery  = 5
)

// Field managers as the real writers of these objects appear in managedFields.
const (
	managerKCM     = "kube-controller-manager"
	managerKruise  = "manager"
	managerKubelet = "kubelet"
)

const (
	// finalizerUnowned is a finalizer no controller in the cluster handles.
	finalizerUnowned = "example.com/cleanup"
	// hookLabel is the label the CloneSets' preNormal hook waits for.
	hookLabel = "example.com/warmed-up"
)

// seeder creates the population through the API, with bounded concurrency and retries.
type seeder struct {
	kube    kubernetes.Interface
	dyn     dynamic.Interface
	workers int
	// created counts API writes, for the seeding rate.
	created atomic.Int64
	// base is when the population "started": object timestamps are set relative to it.
	base time.Time
}

// sha64 is the hex SHA-256 of s, the shape of image digests and container IDs.
func sha64(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func nsName(i int) string   { return fmt.Sprintf("team-%04d", i) }
func nodeName(i int) string { return fmt.Sprintf("node-%03d", i) }

// hash10 is a stable, kube-looking hash suffix of s.
func hash10(s string) string {
	sum := sha256.Sum256([]byte(s))
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	out := make([]byte, 10)
	for i := range out {
		out[i] = alphabet[int(sum[i])%len(alphabet)]
	}
	return string(out)
}

// retry runs f until it succeeds, fails with a non-retryable error, or five attempts failed.
// AlreadyExists counts as success so a resumed seeding is idempotent.
func retry(ctx context.Context, f func() error) error {
	var err error
	for attempt := range 5 {
		err = f()
		switch {
		case err == nil, apierrors.IsAlreadyExists(err):
			return nil
		case apierrors.IsInvalid(err), apierrors.IsBadRequest(err), apierrors.IsForbidden(err), apierrors.IsNotFound(err):
			return err
		}
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(time.Duration(200*(attempt+1)) * time.Millisecond):
		}
	}
	return err
}

// parallel runs work(i) for i in [from, to) on the seeder's workers, stopping at the first error.
func (s *seeder) parallel(ctx context.Context, from, to int, work func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan int)
	var wg sync.WaitGroup
	for range s.workers {
		wg.Go(func() {
			for i := range next {
				if err := work(ctx, i); err != nil {
					cancel(err)
				}
			}
		})
	}
feed:
	for i := from; i < to; i++ {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return ctx.Err()
}

// seedBase creates what does not grow with the pods: namespaces and their usual content, nodes
// with their heartbeat Leases, and the OpenKruise manager's Deployment.
func (s *seeder) seedBase(ctx context.Context) error {
	if err := s.parallel(ctx, 0, namespaces, s.namespace); err != nil {
		return fmt.Errorf("seed namespaces: %w", err)
	}
	if err := s.parallel(ctx, 0, nodes, s.node); err != nil {
		return fmt.Errorf("seed nodes: %w", err)
	}
	if err := s.kruiseManager(ctx); err != nil {
		return fmt.Errorf("seed kruise-manager: %w", err)
	}
	return nil
}

func (s *seeder) namespace(ctx context.Context, i int) error {
	name := nsName(i)
	c := s.kube.CoreV1()
	writes := []func() error{
		func() error {
			_, err := c.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
				Name: name, Labels: map[string]string{"kubernetes.io/metadata.name": name, "team": name, "env": "prod"},
			}}, metav1.CreateOptions{})
			return err
		},
		// What kube-controller-manager puts in every namespace.
		func() error {
			_, err := c.ServiceAccounts(name).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}},
				metav1.CreateOptions{FieldManager: managerKCM})
			return err
		},
		func() error {
			_, err := c.ConfigMaps(name).Create(ctx, &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: "kube-root-ca.crt", Annotations: map[string]string{"kubernetes.io/description": "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters."}},
				Data:       map[string]string{"ca.crt": fakeCABundle},
			}, metav1.CreateOptions{FieldManager: managerKCM})
			return err
		},
		func() error {
			_, err := c.Secrets(name).Create(ctx, &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: "registry-credentials"},
				Type:       corev1.SecretTypeDockerConfigJson,
				Data:       map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{"registry.example.com":{"auth":"YmVuY2g6YmVuY2g="}}}`)},
			}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := c.Services(name).Create(ctx, &corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Name: "frontend", Labels: map[string]string{"app.kubernetes.io/name": "frontend"}},
				Spec: corev1.ServiceSpec{Selector: map[string]string{"app.kubernetes.io/name": "frontend"},
					Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}}},
			}, metav1.CreateOptions{})
			return err
		},
	}
	for _, w := range writes {
		if err := retry(ctx, w); err != nil {
			return fmt.Errorf("namespace %s: %w", name, err)
		}
		s.created.Add(1)
	}
	return nil
}

func (s *seeder) node(ctx context.Context, i int) error {
	name := nodeName(i)
	dead := i < deadNodes
	heartbeat := metav1.NewTime(time.Now())
	ready := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
		Message: "kubelet is posting ready status", LastHeartbeatTime: heartbeat, LastTransitionTime: metav1.NewTime(s.base.Add(-72 * time.Hour))}
	var taints []corev1.Taint
	if dead {
		heartbeat = metav1.NewTime(time.Now().Add(-time.Hour))
		ready = corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, Reason: "NodeStatusUnknown",
			Message: "Kubelet stopped posting node status.", LastHeartbeatTime: heartbeat, LastTransitionTime: heartbeat}
		taints = []corev1.Taint{{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoSchedule},
			{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute, TimeAdded: &heartbeat}}
	}
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
			"node.kubernetes.io/instance-type": "m6i.4xlarge", "topology.kubernetes.io/zone": "zone-" + strconv.Itoa(i%3),
			"topology.kubernetes.io/region": "region-1",
		}, Annotations: map[string]string{"node.alpha.kubernetes.io/ttl": "0", "volumes.kubernetes.io/controller-managed-attach-detach": "true"}},
		Spec: corev1.NodeSpec{PodCIDR: fmt.Sprintf("10.%d.%d.0/24", 64+i/256, i%256), Taints: taints},
	}
	var created *corev1.Node
	if err := retry(ctx, func() (err error) {
		created, err = s.kube.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{FieldManager: managerKubelet})
		return err
	}); err != nil {
		return fmt.Errorf("node %s: %w", name, err)
	}
	s.created.Add(1)
	if created != nil {
		quantity := func(v string) resource.Quantity { return resource.MustParse(v) }
		created.Status = corev1.NodeStatus{
			Capacity:    corev1.ResourceList{corev1.ResourceCPU: quantity("16"), corev1.ResourceMemory: quantity("64Gi"), corev1.ResourcePods: quantity("250"), corev1.ResourceEphemeralStorage: quantity("200Gi")},
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: quantity("15890m"), corev1.ResourceMemory: quantity("62Gi"), corev1.ResourcePods: quantity("250"), corev1.ResourceEphemeralStorage: quantity("180Gi")},
			Conditions: []corev1.NodeCondition{
				{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory", LastHeartbeatTime: heartbeat, LastTransitionTime: ready.LastTransitionTime},
				{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasNoDiskPressure", LastHeartbeatTime: heartbeat, LastTransitionTime: ready.LastTransitionTime},
				{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientPID", LastHeartbeatTime: heartbeat, LastTransitionTime: ready.LastTransitionTime},
				ready,
			},
			Addresses: []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: fmt.Sprintf("10.0.%d.%d", i/256, i%256)}, {Type: corev1.NodeHostName, Address: name}},
			NodeInfo: corev1.NodeSystemInfo{KubeletVersion: "v1.37.1", ContainerRuntimeVersion: "containerd://2.1.4", OSImage: "Ubuntu 24.04.2 LTS",
				KernelVersion: "6.8.0-1021-aws", OperatingSystem: "linux", Architecture: "amd64", MachineID: hash10(name) + hash10(name+"m"), SystemUUID: hash10(name + "u")},
			Images: []corev1.ContainerImage{
				{Names: []string{"registry.example.com/shop/app@sha256:" + sha64("app:v2.14.3"), "registry.example.com/shop/app:v2.14.3"}, SizeBytes: 187_000_000},
				{Names: []string{"registry.example.com/mesh/proxy:v1.22.0"}, SizeBytes: 64_000_000},
				{Names: []string{"registry.k8s.io/pause:3.10"}, SizeBytes: 320_000},
			},
		}
		if err := retry(ctx, func() error {
			_, err := s.kube.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{FieldManager: managerKubelet})
			return err
		}); err != nil {
			return fmt.Errorf("node %s status: %w", name, err)
		}
		s.created.Add(1)
	}
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: corev1.NamespaceNodeLease},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(name), LeaseDurationSeconds: ptr.To[int32](40),
			RenewTime: &metav1.MicroTime{Time: heartbeat.Time}},
	}
	if err := retry(ctx, func() error {
		_, err := s.kube.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, lease, metav1.CreateOptions{FieldManager: managerKubelet})
		return err
	}); err != nil {
		return fmt.Errorf("node lease %s: %w", name, err)
	}
	s.created.Add(1)
	return nil
}

// kruiseManager is the OpenKruise manager's Deployment, so the checks find the controller's
// version and flags the way they would in a cluster running OpenKruise.
func (s *seeder) kruiseManager(ctx context.Context) error {
	const ns = "kruise-system"
	if err := retry(ctx, func() error {
		_, err := s.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		return err
	}); err != nil {
		return err
	}
	labels := map[string]string{"control-plane": "controller-manager"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "kruise-controller-manager", Namespace: ns, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "manager", Image: "openkruise/kruise-manager:v1.8.0",
					Args: []string{"--enable-leader-election", "--metrics-addr=:8080", "--health-probe-addr=:8000", "--logtostderr=true", "--leader-election-namespace=kruise-system", "--v=4", "--feature-gates=", "--sync-period=0"},
				}}},
			},
		},
	}
	return retry(ctx, func() error {
		_, err := s.kube.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{})
		return err
	})
}

// group is one workload and its pods.
type group struct {
	index    int
	ns       string
	name     string
	cloneSet bool
	// revision is the controller-revision-hash (CloneSet) or pod-template-hash (ReplicaSet).
	revision string
	labels   map[string]string
	owner    metav1.OwnerReference
}

func newGroup(g int) group {
	gr := group{index: g, ns: nsName(g % namespaces), cloneSet: g%cloneSetEvery == 0}
	app := fmt.Sprintf("svc-%05d", g)
	gr.labels = map[string]string{
		"app.kubernetes.io/name": app, "app.kubernetes.io/part-of": "shop", "app.kubernetes.io/version": "v2.14.3",
		"team": gr.ns, "tier": []string{"frontend", "backend", "worker"}[g%3],
	}
	if gr.cloneSet {
		gr.name = app
		gr.revision = app + "-" + hash10(app)[:9]
	} else {
		gr.revision = hash10(app)
		gr.name = app + "-" + gr.revision
		gr.labels["pod-template-hash"] = gr.revision
	}
	return gr
}

// selector is the labels the owner selects its pods by.
func (gr group) selector() map[string]string {
	return map[string]string{"app.kubernetes.io/name": gr.labels["app.kubernetes.io/name"]}
}

// seedGroups creates groups [from, to) with their pods and events.
func (s *seeder) seedGroups(ctx context.Context, from, to int) error {
	return s.parallel(ctx, from, to, s.seedGroup)
}

func (s *seeder) seedGroup(ctx context.Context, g int) error {
	gr := newGroup(g)
	if err := s.createOwner(ctx, &gr); err != nil {
		return fmt.Errorf("group %d owner: %w", g, err)
	}
	for k := range groupSize {
		if err := s.seedPod(ctx, gr, g*groupSize+k, k); err != nil {
			return fmt.Errorf("group %d pod %d: %w", g, k, err)
		}
	}
	if gr.cloneSet {
		if err := s.cloneSetStatus(ctx, gr); err != nil {
			return fmt.Errorf("group %d status: %w", g, err)
		}
	}
	return nil
}

func (s *seeder) createOwner(ctx context.Context, gr *group) error {
	tmpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: gr.labels, Annotations: templateAnnotations()}, Spec: podSpec(*gr, "")}
	if gr.cloneSet {
		template, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&tmpl)
		if err != nil {
			return fmt.Errorf("convert pod template: %w", err)
		}
		obj := map[string]any{
			"apiVersion": kruise.CloneSets.GroupVersion().String(), "kind": kruise.KindCloneSet,
			"metadata": map[string]any{"name": gr.name, "namespace": gr.ns, "labels": toAny(gr.selector())},
			"spec": map[string]any{
				"replicas": int64(groupSize),
				"selector": map[string]any{"matchLabels": toAny(gr.selector())},
				"template": template,
				"updateStrategy": map[string]any{"type": kruise.UpdateInPlaceIfPossible, "maxUnavailable": "20%",
					"inPlaceUpdateStrategy": map[string]any{"gracePeriodSeconds": int64(10)}},
				"lifecycle":            map[string]any{"preNormal": map[string]any{"labelsHandler": map[string]any{hookLabel: "true"}}},
				"scaleStrategy":        map[string]any{"maxUnavailable": int64(2)},
				"revisionHistoryLimit": int64(10),
			},
		}
		var created *unstructured.Unstructured
		err = retry(ctx, func() (err error) {
			created, err = s.dyn.Resource(kruise.CloneSets).Namespace(gr.ns).Create(ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{})
			return err
		})
		if err != nil {
			return err
		}
		if created == nil { // already there from an earlier run
			if created, err = s.dyn.Resource(kruise.CloneSets).Namespace(gr.ns).Get(ctx, gr.name, metav1.GetOptions{}); err != nil {
				return err
			}
		}
		s.created.Add(1)
		gr.owner = metav1.OwnerReference{APIVersion: kruise.CloneSets.GroupVersion().String(), Kind: kruise.KindCloneSet,
			Name: gr.name, UID: created.GetUID(), Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
		return nil
	}
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: gr.name, Namespace: gr.ns, Labels: gr.labels,
			Annotations: map[string]string{"deployment.kubernetes.io/desired-replicas": strconv.Itoa(groupSize), "deployment.kubernetes.io/max-replicas": strconv.Itoa(groupSize + 5), "deployment.kubernetes.io/revision": "7"}},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](groupSize),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": gr.labels["app.kubernetes.io/name"], "pod-template-hash": gr.revision}},
			Template: tmpl},
	}
	var created *appsv1.ReplicaSet
	err := retry(ctx, func() (err error) {
		created, err = s.kube.AppsV1().ReplicaSets(gr.ns).Create(ctx, rs, metav1.CreateOptions{FieldManager: managerKCM})
		return err
	})
	if err != nil {
		return err
	}
	if created == nil {
		if created, err = s.kube.AppsV1().ReplicaSets(gr.ns).Get(ctx, gr.name, metav1.GetOptions{}); err != nil {
			return err
		}
	}
	s.created.Add(1)
	gr.owner = metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: gr.name, UID: created.UID,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
	return nil
}

// cloneSetStatus writes the status a healthy kruise-manager would, and for one CloneSet in
// frozenEvery bumps the spec afterwards, so the controller appears never to have seen it.
func (s *seeder) cloneSetStatus(ctx context.Context, gr group) error {
	cs := s.dyn.Resource(kruise.CloneSets).Namespace(gr.ns)
	return retry(ctx, func() error {
		u, err := cs.Get(ctx, gr.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		sel := "app.kubernetes.io/name=" + gr.labels["app.kubernetes.io/name"]
		u.Object["status"] = map[string]any{
			"observedGeneration": u.GetGeneration(), "replicas": int64(groupSize), "readyReplicas": int64(groupSize),
			"availableReplicas": int64(groupSize), "updatedReplicas": int64(groupSize), "updatedReadyReplicas": int64(groupSize),
			"expectedUpdatedReplicas": int64(groupSize), "updateRevision": gr.revision, "currentRevision": gr.revision,
			"collisionCount": int64(0), "labelSelector": sel,
		}
		u, err = cs.UpdateStatus(ctx, u, metav1.UpdateOptions{FieldManager: managerKruise})
		if err != nil {
			return err
		}
		s.created.Add(1)
		if gr.index%(cloneSetEvery*frozenEvery) != 0 {
			return nil
		}
		_ = unstructured.SetNestedField(u.Object, time.Now().UTC().Format(time.RFC3339),
			"spec", "template", "metadata", "annotations", "kubectl.kubernetes.io/restartedAt")
		_, err = cs.Update(ctx, u, metav1.UpdateOptions{FieldManager: "kubectl-rollout"})
		if err == nil {
			s.created.Add(1)
		}
		return err
	})
}

// stuckKind says how pod i is stuck, if at all.
type stuckKind int

const (
	notStuck stuckKind = iota
	// stuckFinalizer: deleted, held by a finalizer nobody handles (stuck-terminating).
	stuckFinalizer
	// stuckDeadNode: deleted on a node whose kubelet died (stuck-terminating).
	stuckDeadNode
	// stuckPreparingNormal: a CloneSet pod whose preNormal hook is never satisfied (stuck-preparing-normal).
	stuckPreparingNormal
)

func stuckOf(gr group, i int) stuckKind {
	// The 8th pod of every 10th group: half of those groups are CloneSets.
	if i%stuckEvery != stuckOffset {
		return notStuck
	}
	if gr.cloneSet {
		return stuckPreparingNormal
	}
	if (i/stuckEvery)%2 == 0 {
		return stuckFinalizer
	}
	return stuckDeadNode
}

func (s *seeder) seedPod(ctx context.Context, gr group, i, k int) error {
	stuck := stuckOf(gr, i)
	node := nodeName(deadNodes + i%(nodes-deadNodes))
	if stuck == stuckDeadNode {
		node = nodeName(i % deadNodes)
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: gr.ns, Labels: map[string]string{}, Annotations: templateAnnotations(),
			OwnerReferences: []metav1.OwnerReference{gr.owner}},
		Spec: podSpec(gr, node),
	}
	for k, v := range gr.labels {
		p.Labels[k] = v
	}
	created := s.base.Add(-time.Duration(i%7200) * time.Second)
	manager := managerKCM
	if gr.cloneSet {
		manager = managerKruise
		id := hash10(fmt.Sprintf("%s-%d", gr.name, k))[:5]
		p.Name = gr.name + "-" + id
		p.Labels["apps.kruise.io/cloneset-instance-id"] = id
		p.Labels["controller-revision-hash"] = gr.revision
		p.Labels[hookLabel] = "true"
		p.Labels[kruise.LabelLifecycleState] = kruise.StateNormal
		p.Annotations[kruise.AnnotationLifecycleTime] = created.UTC().Format(time.RFC3339)
		p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: kruise.ConditionInPlaceReady}}
		if stuck == stuckPreparingNormal {
			delete(p.Labels, hookLabel)
			p.Labels[kruise.LabelLifecycleState] = kruise.StatePreparingNormal
		}
	} else {
		p.Name = gr.name + "-" + hash10(fmt.Sprintf("%s-%d", gr.name, k))[:5]
	}
	p.Annotations["cni.projectcalico.org/podIP"] = podIP(i) + "/32"
	p.Annotations["cni.projectcalico.org/containerID"] = sha64(p.Name)
	if stuck == stuckFinalizer {
		p.Finalizers = []string{finalizerUnowned}
	}
	pods := s.kube.CoreV1().Pods(gr.ns)
	var live *corev1.Pod
	if err := retry(ctx, func() (err error) {
		live, err = pods.Create(ctx, p, metav1.CreateOptions{FieldManager: manager})
		return err
	}); err != nil {
		return err
	}
	if live == nil {
		return nil // from an earlier run
	}
	s.created.Add(1)
	live.Status = podStatus(live, i, created)
	if err := retry(ctx, func() (err error) {
		live, err = pods.UpdateStatus(ctx, live, metav1.UpdateOptions{FieldManager: managerKubelet})
		return err
	}); err != nil {
		return fmt.Errorf("status: %w", err)
	}
	s.created.Add(1)
	if err := s.podEvents(ctx, live, i); err != nil {
		return err
	}
	switch stuck {
	case stuckFinalizer:
		if err := retry(ctx, func() error {
			return pods.Delete(ctx, live.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0), Preconditions: &metav1.Preconditions{UID: &live.UID}})
		}); err != nil {
			return fmt.Errorf("delete: %w", err)
		}
		s.created.Add(1)
	case stuckDeadNode:
		// A graceful delete: only the (dead) kubelet would finish it.
		if err := retry(ctx, func() error {
			return pods.Delete(ctx, live.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &live.UID}})
		}); err != nil {
			return fmt.Errorf("delete: %w", err)
		}
		s.created.Add(1)
	}
	return nil
}

func podIP(i int) string { return fmt.Sprintf("10.%d.%d.%d", 64+(i>>16)&63, (i>>8)&255, i&255) }

// podEvents writes the events a kubelet would have emitted about the pod, at the population's
// rates: Warnings (probe failures, back-offs, mounts) and Normal ones (pulls, starts).
func (s *seeder) podEvents(ctx context.Context, p *corev1.Pod, i int) error {
	type ev struct{ typ, reason, msg string }
	var evs []ev
	if i%warningEvery == 3 {
		evs = append(evs, []ev{
			{corev1.EventTypeWarning, "Unhealthy", "Readiness probe failed: HTTP probe failed with statuscode: 503"},
			{corev1.EventTypeWarning, "BackOff", "Back-off restarting failed container app in pod " + p.Name + "_" + p.Namespace + "(" + string(p.UID) + ")"},
			{corev1.EventTypeWarning, "FailedMount", `MountVolume.SetUp failed for volume "config" : configmap "app-config" not found`},
		}[i/warningEvery%3])
	}
	if i%normalEvery == 1 {
		evs = append(evs, []ev{
			{corev1.EventTypeNormal, "Pulled", `Container image "registry.example.com/shop/app:v2.14.3" already present on machine`},
			{corev1.EventTypeNormal, "Started", "Started container app"},
		}[i/normalEvery%2])
	}
	for n, e := range evs {
		now := metav1.NewTime(time.Now())
		event := &corev1.Event{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", p.Name, s.base.UnixNano()+int64(n)), Namespace: p.Namespace},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: p.Namespace, Name: p.Name, UID: p.UID, APIVersion: "v1",
				ResourceVersion: p.ResourceVersion, FieldPath: "spec.containers{app}"},
			Reason: e.reason, Message: e.msg, Type: e.typ, Count: int32(1 + i%17),
			Source:         corev1.EventSource{Component: "kubelet", Host: p.Spec.NodeName},
			FirstTimestamp: metav1.NewTime(now.Add(-time.Duration(i%3600) * time.Second)), LastTimestamp: now,
			ReportingController: "kubelet", ReportingInstance: p.Spec.NodeName,
		}
		if err := retry(ctx, func() error {
			_, err := s.kube.CoreV1().Events(p.Namespace).Create(ctx, event, metav1.CreateOptions{})
			return err
		}); err != nil {
			return fmt.Errorf("event: %w", err)
		}
		s.created.Add(1)
	}
	return nil
}

func templateAnnotations() map[string]string {
	return map[string]string{
		"prometheus.io/scrape": "true", "prometheus.io/port": "9090", "prometheus.io/path": "/metrics",
		"kubectl.kubernetes.io/default-container": "app",
	}
}

// podSpec is a typical two-container pod: an application and a proxy sidecar, with env, ports,
// probes, resources and the projected service-account token volume the apiserver would add.
func podSpec(gr group, node string) corev1.PodSpec {
	quantity := resource.MustParse
	app := gr.labels["app.kubernetes.io/name"]
	env := []corev1.EnvVar{
		{Name: "APP_NAME", Value: app}, {Name: "APP_ENV", Value: "production"}, {Name: "LOG_LEVEL", Value: "info"},
		{Name: "LOG_FORMAT", Value: "json"}, {Name: "HTTP_PORT", Value: "8080"}, {Name: "METRICS_PORT", Value: "9090"},
		{Name: "DB_HOST", Value: "postgres.db.svc.cluster.local"}, {Name: "DB_POOL_SIZE", Value: "20"},
		{Name: "CACHE_URL", Value: "redis://redis.cache.svc.cluster.local:6379/0"},
		{Name: "OTEL_EXPORTER_OTLP_ENDPOINT", Value: "http://otel-collector.observability.svc:4317"},
		{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}},
		{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "status.podIP"}}},
		{Name: "DB_PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "db-credentials"}, Key: "password"}}},
	}
	mounts := []corev1.VolumeMount{{Name: "config", MountPath: "/etc/app", ReadOnly: true},
		{Name: "kube-api-access", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true}}
	probe := func(path string, delay int32) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromString("http"), Scheme: corev1.URISchemeHTTP}},
			InitialDelaySeconds: delay, TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3}
	}
	return corev1.PodSpec{
		NodeName: node,
		Containers: []corev1.Container{
			{
				Name: "app", Image: "registry.example.com/shop/app:v2.14.3", Args: []string{"--config=/etc/app/config.yaml", "--listen=:8080"},
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}, {Name: "metrics", ContainerPort: 9090, Protocol: corev1.ProtocolTCP}},
				Env:   env,
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: quantity("250m"), corev1.ResourceMemory: quantity("256Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceCPU: quantity("1"), corev1.ResourceMemory: quantity("512Mi")},
				},
				ResizePolicy: []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.NotRequired},
					{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer}},
				VolumeMounts: mounts, LivenessProbe: probe("/healthz", 10), ReadinessProbe: probe("/ready", 5),
				TerminationMessagePath: corev1.TerminationMessagePathDefault, TerminationMessagePolicy: corev1.TerminationMessageReadFile,
				ImagePullPolicy: corev1.PullIfNotPresent,
				SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), RunAsNonRoot: ptr.To(true), ReadOnlyRootFilesystem: ptr.To(true),
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
			},
			{
				Name: "proxy", Image: "registry.example.com/mesh/proxy:v1.22.0", Args: []string{"proxy", "sidecar", "--log-level=warn", "--concurrency=2"},
				Ports: []corev1.ContainerPort{{Name: "proxy-admin", ContainerPort: 15000, Protocol: corev1.ProtocolTCP}, {Name: "proxy-stats", ContainerPort: 15090, Protocol: corev1.ProtocolTCP}},
				Env: []corev1.EnvVar{{Name: "PROXY_CLUSTER_ID", Value: "prod-eu-1"}, {Name: "PROXY_MESH_ID", Value: "shop"},
					{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: quantity("100m"), corev1.ResourceMemory: quantity("128Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceCPU: quantity("500m"), corev1.ResourceMemory: quantity("256Mi")},
				},
				VolumeMounts:           mounts[1:],
				ReadinessProbe:         probe("/healthz/ready", 1),
				TerminationMessagePath: corev1.TerminationMessagePathDefault, TerminationMessagePolicy: corev1.TerminationMessageReadFile,
				ImagePullPolicy: corev1.PullIfNotPresent,
			},
		},
		Volumes: []corev1.Volume{
			{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app-config"}, DefaultMode: ptr.To[int32](0o644)}}},
			{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{DefaultMode: ptr.To[int32](0o644), Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{ExpirationSeconds: ptr.To[int64](3607), Path: "token"}},
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
				{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
			}}}},
		},
		RestartPolicy: corev1.RestartPolicyAlways, TerminationGracePeriodSeconds: ptr.To[int64](30), DNSPolicy: corev1.DNSClusterFirst,
		ServiceAccountName: "default", SecurityContext: &corev1.PodSecurityContext{FSGroup: ptr.To[int64](2000)},
		SchedulerName: corev1.DefaultSchedulerName, PriorityClassName: "", EnableServiceLinks: ptr.To(false),
		Tolerations: []corev1.Toleration{
			{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
			{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)},
		},
		TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "topology.kubernetes.io/zone",
			WhenUnsatisfiable: corev1.ScheduleAnyway, LabelSelector: &metav1.LabelSelector{MatchLabels: gr.selector()}}},
	}
}

// podStatus is what a kubelet reports for a running pod.
func podStatus(p *corev1.Pod, i int, started time.Time) corev1.PodStatus {
	at := metav1.NewTime(started)
	ip := podIP(i)
	hostIP := fmt.Sprintf("10.0.%d.%d", (i%nodes)/256, (i%nodes)%256)
	cond := func(t corev1.PodConditionType) corev1.PodCondition {
		return corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: at}
	}
	cs := func(c corev1.Container, restarts int32) corev1.ContainerStatus {
		name, image := c.Name, c.Image
		return corev1.ContainerStatus{Name: name, Ready: true, Started: ptr.To(true), RestartCount: restarts, Image: image,
			ImageID:     image + "@sha256:" + sha64(image),
			ContainerID: "containerd://" + sha64(p.Name+"/"+name),
			State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: at}},
			Resources:   &corev1.ResourceRequirements{Requests: c.Resources.Requests, Limits: c.Resources.Limits},
			VolumeMounts: []corev1.VolumeMountStatus{{Name: "kube-api-access", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true,
				RecursiveReadOnly: ptr.To(corev1.RecursiveReadOnlyDisabled)}},
		}
	}
	conds := []corev1.PodCondition{cond("PodReadyToStartContainers"), cond(corev1.PodInitialized), cond(corev1.PodReady), cond(corev1.ContainersReady), cond(corev1.PodScheduled)}
	if len(p.Spec.ReadinessGates) > 0 {
		conds = append(conds, cond(kruise.ConditionInPlaceReady))
	}
	return corev1.PodStatus{
		Phase: corev1.PodRunning, Conditions: conds, HostIP: hostIP, HostIPs: []corev1.HostIP{{IP: hostIP}},
		PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}}, StartTime: &at, QOSClass: corev1.PodQOSBurstable,
		ContainerStatuses: []corev1.ContainerStatus{cs(p.Spec.Containers[0], int32(i%3)), cs(p.Spec.Containers[1], 0)},
	}
}

func toAny(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// fakeCABundle has the size of a real CA bundle; it is not a valid certificate.
var fakeCABundle = "-----BEGIN CERTIFICATE-----\n" + func() string {
	var b []byte
	for i := 0; len(b) < 1100; i++ {
		b = append(b, hash10(strconv.Itoa(i))...)
		if i%6 == 5 {
			b = append(b, '\n')
		}
	}
	return string(b)
}() + "\n-----END CERTIFICATE-----\n"
