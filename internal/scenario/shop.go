// Package scenario builds "shop", an application whose cluster has every failure the plugin
// diagnoses, each produced the way it arises in a real cluster: through the API, by the
// controllers that own the objects (kube-controller-manager, kube-scheduler, kwok playing the
// kubelets, and a stand-in for kruise-manager, see KruiseManager), with the people and third-party
// controllers of the story doing what they would. The demo (hack/demo) and the demo e2e test
// (test/e2e/demo_test.go) run it on a cluster from ClusterOptions.
package scenario

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
)

// Namespaces of the scenario.
const (
	Namespace       = "shop"
	LegacyNamespace = "shop-legacy"
)

// The kruise-manager the cluster runs: v1.7.0 with CloneSetEventHandlerOptimization on, which has
// the event-filter bug openkruise/kruise#2057 and predates the expectation timeout handling of
// openkruise/kruise#1829. --expectation-timeout is short so its overtime log line shows up while
// the demo starts (the default is 5m).
const (
	kruiseVersion      = "v1.7.0"
	expectationTimeout = 30 * time.Second
)

// Nodes: two healthy ones, one whose kubelet dies, one that is removed.
const (
	nodeMain1 = "shop-main-1"
	nodeMain2 = "shop-main-2"
	nodeEdge  = "shop-edge-1"
	nodeSpot  = "shop-spot-1"
)

// Hooks and finalizers of the third-party controllers in the story.
const (
	registryController = "registry-controller"
	registryFinalizer  = "registry.shop.example/registered"
	registryLabel      = "registry.shop.example/registered"
	warmupController   = "warmup-controller"
	warmupLabel        = "warmup.shop.example/ready"
	cacheWarmer        = "cache-warmer"
	cacheFinalizer     = "cache.shop.example/flush"
	volumeJanitor      = "volume-janitor"
	volumeFinalizer    = "storage.shop.example/release-volume"
)

// The broken aggregated API left behind when the legacy app was uninstalled.
const (
	legacyAPIService = "v1beta1.metrics.shop.example"
	legacyService    = "legacy-metrics"
)

var apiServices = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// Env is what Build needs: admin clients of a cluster started with ClusterOptions (the project's
// OpenKruise CRDs installed), the files ClusterOptions wrote, and where progress goes.
type Env struct {
	Kube    kubernetes.Interface
	Dynamic dynamic.Interface
	Files   Files
	// Logf receives progress; nil discards it.
	Logf func(format string, args ...any)
}

// Object names a Kubernetes object.
type Object struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

func (o Object) String() string {
	if o.Namespace == "" {
		return strings.ToLower(o.Kind) + "/" + o.Name
	}
	return o.Namespace + "/" + strings.ToLower(o.Kind) + "/" + o.Name
}

// Expectation is a finding the scan must report: one check and root cause on one object.
type Expectation struct {
	Check     string `json:"check"`
	RootCause string `json:"rootCause"`
	Object    Object `json:"object"`
	// Fixable is true when `fix --yes` resolves it; otherwise it needs a person and stays.
	Fixable bool `json:"fixable"`
	// Story says in one line what happened, for the demo's legend.
	Story string `json:"story"`
}

// Shop is the built scenario.
type Shop struct {
	// Expected are the findings a scan with --min-age 0s reports, and nothing else.
	Expected []Expectation `json:"expected"`
	// Healthy are workloads and pods that no finding may name, as its object or its owner.
	Healthy []Object `json:"healthy"`
	// Manager is the kruise-manager stand-in; it runs until Build's ctx ends.
	Manager *KruiseManager `json:"-"`
}

// Build creates the shop and breaks it, then returns once every broken state is in place (a few
// minutes at most; the slowest part is PodGC, which waits 40s before it acts on a missing node).
// The kruise-manager stand-in keeps running until ctx ends, so the caller keeps ctx alive for as
// long as the scenario should live.
func Build(ctx context.Context, env Env) (*Shop, error) {
	if env.Logf == nil {
		env.Logf = func(string, ...any) {}
	}
	b := &builder{env: env, deleted: map[string][]string{}}
	shop := &Shop{}
	steps := []struct {
		what string
		do   func(context.Context, *Shop) error
	}{
		{"nodes and namespaces", b.infrastructure},
		{"kruise-manager " + kruiseVersion, b.kruiseManager},
		{"the shop's workloads", b.workloads},
		{"hook controllers act on new pods", b.hooks},
		{"the spot node is reclaimed and the edge node's kubelet dies", b.nodes},
		{"kruise-manager loses a pod event of CloneSet checkout", b.lostEvent},
		{"someone deletes pods and edits a template", b.operations},
		{"the legacy app is uninstalled, leaving its APIService", b.legacy},
		{"waiting for the cluster to settle into the broken states", b.settle},
	}
	for i, s := range steps {
		env.Logf("[%d/%d] %s", i+1, len(steps), s.what)
		if err := s.do(ctx, shop); err != nil {
			return shop, fmt.Errorf("%s: %w", s.what, err)
		}
	}
	return shop, nil
}

func (b *builder) infrastructure(ctx context.Context, _ *Shop) error {
	for _, n := range []struct{ name, pool string }{{nodeMain1, "main"}, {nodeMain2, "main"}, {nodeEdge, "edge"}, {nodeSpot, "spot"}} {
		if err := b.node(ctx, n.name, n.pool); err != nil {
			return err
		}
	}
	for _, n := range []string{nodeMain1, nodeMain2, nodeEdge, nodeSpot} {
		if err := b.waitNodeReady(ctx, n, corev1.ConditionTrue, time.Minute); err != nil {
			return err
		}
	}
	for _, ns := range []string{Namespace, LegacyNamespace, KruiseNamespace} {
		if err := b.namespace(ctx, ns); err != nil {
			return err
		}
	}
	return nil
}

// kruiseManager installs kruise-manager as the Helm chart does and starts its stand-in.
func (b *builder) kruiseManager(ctx context.Context, shop *Shop) error {
	spec := corev1.PodSpec{
		NodeSelector: map[string]string{"pool": "main"},
		Containers: []corev1.Container{{
			Name: managerContainer, Image: "openkruise/kruise-manager:" + kruiseVersion, Command: []string{"/manager"},
			Args: []string{"--enable-leader-election", "--metrics-addr=:8080", "--health-probe-addr=:8000", "--logtostderr=true",
				"--leader-election-namespace=" + KruiseNamespace, "--v=4",
				"--feature-gates=CloneSetEventHandlerOptimization=true",
				"--expectation-timeout=" + expectationTimeout.String()},
		}},
	}
	labels := kruiseManagerLabels
	replicas := int32(2)
	if err := b.deploymentWithLabels(ctx, KruiseNamespace, KruiseDeployment, labels, replicas, spec); err != nil {
		return err
	}
	if err := b.waitDeploymentAvailable(ctx, KruiseNamespace, KruiseDeployment); err != nil {
		return err
	}
	m := newKruiseManager(b.env.Kube, b.env.Dynamic, b.env.Files.ManagerLog, true, expectationTimeout, b.env.Logf)
	go m.Run(ctx)
	shop.Manager = m
	if err := m.WaitLeading(ctx, time.Minute); err != nil {
		return err
	}
	shop.Healthy = append(shop.Healthy, Object{"Deployment", KruiseNamespace, KruiseDeployment})
	return nil
}

// workloads creates the shop: Deployments run by kube-controller-manager, CloneSets run by
// kruise-manager, each pinned to a node pool.
func (b *builder) workloads(ctx context.Context, shop *Shop) error {
	img := func(name, tag string) string { return "registry.shop.example/" + name + ":" + tag }
	deployments := []struct {
		name     string
		replicas int32
		pool     string
	}{
		{"frontend", 2, "main"},      // healthy
		{"image-resizer", 1, "main"}, // its pod gets a finalizer from a controller later uninstalled
		{"search", 1, "edge"},        // on the node whose kubelet dies
		{"recommender", 1, "spot"},   // on the node that is reclaimed
	}
	for _, d := range deployments {
		if err := b.deployment(ctx, Namespace, d.name, d.replicas, podSpec(d.pool, img(d.name, "2.4.1"), nil)); err != nil {
			return err
		}
	}
	notRequired := func(r corev1.ResourceName) corev1.ContainerResizePolicy {
		return corev1.ContainerResizePolicy{ResourceName: r, RestartPolicy: corev1.NotRequired}
	}
	restart := func(r corev1.ResourceName) corev1.ContainerResizePolicy {
		return corev1.ContainerResizePolicy{ResourceName: r, RestartPolicy: corev1.RestartContainer}
	}
	cloneSets := []cloneSetSpec{
		{name: "catalog", replicas: 3, spec: podSpec("main", img("catalog", "5.2.0"), nil)}, // healthy
		{name: "orders", replicas: 2, spec: podSpec("main", img("orders", "3.8.2"), nil), // healthy, with a label hook
			lifecycle: map[string]any{"preNormal": map[string]any{"labelsHandler": map[string]any{registryLabel: "true"}}}},
		{name: "cart", replicas: 2, spec: podSpec("main", img("cart", "1.14.0"), nil),
			lifecycle: map[string]any{"preNormal": map[string]any{"finalizersHandler": []any{registryFinalizer}}}},
		{name: "payments", replicas: 1, spec: podSpec("main", img("payments", "7.0.3"), nil),
			lifecycle: map[string]any{"preNormal": map[string]any{"labelsHandler": map[string]any{warmupLabel: "true"}}}},
		{name: "checkout", replicas: 1, spec: podSpec("main", img("checkout", "4.1.0"), nil)},
		{name: "reviews", replicas: 2, updateType: "InPlaceIfPossible", // healthy, in place
			spec: podSpec("main", img("reviews", "2.0.7"), []corev1.ContainerResizePolicy{notRequired(corev1.ResourceCPU), restart(corev1.ResourceMemory)})},
		{name: "inventory", replicas: 2, updateType: "InPlaceIfPossible",
			spec: podSpec("main", img("inventory", "6.3.1"), []corev1.ContainerResizePolicy{notRequired(corev1.ResourceCPU), notRequired(corev1.ResourceMemory)})},
	}
	for _, c := range cloneSets {
		if err := b.cloneSet(ctx, Namespace, c); err != nil {
			return err
		}
	}
	for _, d := range deployments {
		if err := b.waitDeploymentAvailable(ctx, Namespace, d.name); err != nil {
			return err
		}
	}
	for _, c := range cloneSets {
		if err := b.waitCloneSetSteady(ctx, Namespace, c.name); err != nil {
			return err
		}
	}
	return nil
}

// hooks: the third-party controllers behind the preNormal hooks act on the new, ready pods.
func (b *builder) hooks(ctx context.Context, _ *Shop) error {
	// orders: the registry controller registers the pods and says so with the hook's label. Label
	// changes always reach kruise, which moves the pods to Normal.
	orders, err := b.livePods(ctx, Namespace, "app=orders")
	if err != nil {
		return err
	}
	for _, p := range orders {
		if err := b.patchPodMeta(ctx, Namespace, p.Name, registryController, map[string]string{registryLabel: "true"}, nil); err != nil {
			return err
		}
	}
	if err := b.waitLifecycle(ctx, Namespace, "app=orders", "Normal", len(orders)); err != nil {
		return err
	}
	// cart: the same controller registers the pods with the hook's finalizer. kruise v1.7.0 with
	// CloneSetEventHandlerOptimization ignores that pod event: the pods stay PreparingNormal.
	cart, err := b.livePods(ctx, Namespace, "app=cart")
	if err != nil {
		return err
	}
	for _, p := range cart {
		if err := b.patchPodMeta(ctx, Namespace, p.Name, registryController, nil, []string{registryFinalizer}); err != nil {
			return err
		}
	}
	// payments: the warm-up controller's check fails; it marks the pod not ready for traffic.
	payments, err := b.livePods(ctx, Namespace, "app=payments")
	if err != nil {
		return err
	}
	for _, p := range payments {
		if err := b.patchPodMeta(ctx, Namespace, p.Name, warmupController, map[string]string{warmupLabel: "false"}, nil); err != nil {
			return err
		}
	}
	// Controllers that add finalizers to the pods they manage resources for; both are uninstalled
	// later, leaving their finalizers behind.
	for _, x := range []struct{ app, manager, finalizer string }{
		{"recommender", cacheWarmer, cacheFinalizer},
		{"image-resizer", volumeJanitor, volumeFinalizer},
	} {
		pods, err := b.livePods(ctx, Namespace, "app="+x.app)
		if err != nil {
			return err
		}
		for _, p := range pods {
			if err := b.patchPodMeta(ctx, Namespace, p.Name, x.manager, nil, []string{x.finalizer}); err != nil {
				return err
			}
		}
	}
	return nil
}

// nodes: the spot node is reclaimed (its Node object deleted) and the edge node's kubelet dies
// (kwok stops playing it, so its Lease is no longer renewed).
func (b *builder) nodes(ctx context.Context, _ *Shop) error {
	spot, err := b.livePods(ctx, Namespace, "app=recommender")
	if err != nil {
		return err
	}
	for _, p := range spot {
		if p.Spec.NodeName == nodeSpot {
			b.deleted["recommender"] = append(b.deleted["recommender"], p.Name)
		}
	}
	if err := b.env.Kube.CoreV1().Nodes().Delete(ctx, nodeSpot, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("delete node %s: %w", nodeSpot, err)
	}
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, KwokLabel)
	if _, err := b.env.Kube.CoreV1().Nodes().Patch(ctx, nodeEdge, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("stop the kubelet of node %s: %w", nodeEdge, err)
	}
	return nil
}

// lostEvent: checkout is scaled to 2 while kruise-manager's pod watch is broken; the pod it
// creates is deleted right away, before the watch re-lists, so the leader never sees it and
// waits for it forever (openkruise/kruise#1765).
func (b *builder) lostEvent(ctx context.Context, shop *Shop) error {
	before, err := b.livePods(ctx, Namespace, "app=checkout")
	if err != nil {
		return err
	}
	known := map[string]bool{}
	for _, p := range before {
		known[p.Name] = true
	}
	return shop.Manager.PodWatchOutage(ctx, func(ctx context.Context) error {
		if err := b.patchCloneSet(ctx, Namespace, "checkout", "kubectl-scale", map[string]any{"spec": map[string]any{"replicas": 2}}); err != nil {
			return err
		}
		var lost *corev1.Pod
		err := poll(ctx, time.Minute, "kruise-manager to create a checkout pod", func(ctx context.Context) (bool, error) {
			pods, err := b.pods(ctx, Namespace, "app=checkout")
			if err != nil {
				return false, err
			}
			for i := range pods {
				if !known[pods[i].Name] {
					lost = &pods[i]
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return err
		}
		// Deleted before anyone saw it (an admission-time cleanup, a descheduler, a person).
		grace := int64(0)
		uid := lost.UID
		err = b.env.Kube.CoreV1().Pods(Namespace).Delete(ctx, lost.Name, metav1.DeleteOptions{GracePeriodSeconds: &grace,
			Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete pod %s: %w", lost.Name, err)
		}
		b.logf("      pod %s/%s was created and deleted while kruise-manager's pod watch was down", Namespace, lost.Name)
		return nil
	})
}

// operations: what people do next, on a cluster that is already in trouble.
func (b *builder) operations(ctx context.Context, _ *Shop) error {
	// checkout is short of pods; the on-call scales it up again. The leader skips that too.
	if err := b.patchCloneSet(ctx, Namespace, "checkout", "kubectl-scale", map[string]any{"spec": map[string]any{"replicas": 3}}); err != nil {
		return err
	}
	// image-resizer is restarted; its kubelet stops the pod, and the finalizer of the uninstalled
	// volume janitor holds it.
	resizer, err := b.livePods(ctx, Namespace, "app=image-resizer")
	if err != nil {
		return err
	}
	for _, p := range resizer {
		if err := b.env.Kube.CoreV1().Pods(Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
			return fmt.Errorf("delete pod %s: %w", p.Name, err)
		}
		b.deleted["image-resizer"] = append(b.deleted["image-resizer"], p.Name)
	}
	// inventory: the team wants memory resizes to restart the container and sets it in the
	// template, with the rollout paused for a release freeze. A pod update may not change
	// resizePolicy, so the running pods keep theirs.
	err = b.patchCloneSet(ctx, Namespace, "inventory", editManager, map[string]any{"spec": map[string]any{
		"updateStrategy": map[string]any{"type": "InPlaceIfPossible", "paused": true},
		"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{
			"name": "app", "image": "registry.shop.example/inventory:6.3.1",
			"ports":     []any{map[string]any{"name": "http", "containerPort": 8080}},
			"resources": map[string]any{"requests": map[string]any{"cpu": "250m", "memory": "256Mi"}},
			"resizePolicy": []any{
				map[string]any{"resourceName": "cpu", "restartPolicy": "NotRequired"},
				map[string]any{"resourceName": "memory", "restartPolicy": "RestartContainer"},
			},
		}}}},
	}})
	if err != nil {
		return err
	}
	// search runs on the edge node, which stopped heartbeating; someone deletes its pod to get it
	// rescheduled. Nothing confirms the containers stopped: the pod stays Terminating.
	if err := b.waitNodeReady(ctx, nodeEdge, corev1.ConditionUnknown, 2*time.Minute); err != nil {
		return err
	}
	search, err := b.livePods(ctx, Namespace, "app=search")
	if err != nil {
		return err
	}
	for _, p := range search {
		if p.Spec.NodeName != nodeEdge {
			continue
		}
		if err := b.env.Kube.CoreV1().Pods(Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
			return fmt.Errorf("delete pod %s: %w", p.Name, err)
		}
		b.deleted["search"] = append(b.deleted["search"], p.Name)
	}
	return nil
}

// legacy: the legacy app's Helm release is uninstalled; its cluster-scoped APIService stays and
// points at the Service that went with it. Deleting the namespace then blocks on discovery.
func (b *builder) legacy(ctx context.Context, _ *Shop) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "legacy-settings", Namespace: LegacyNamespace},
		Data: map[string]string{"mode": "readonly"}}
	if _, err := b.env.Kube.CoreV1().ConfigMaps(LegacyNamespace).Create(ctx, cm, metav1.CreateOptions{FieldManager: "helm"}); err != nil {
		return fmt.Errorf("create ConfigMap: %w", err)
	}
	svc := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
		"metadata": map[string]any{"name": legacyAPIService, "labels": map[string]any{"app.kubernetes.io/managed-by": "Helm"}},
		"spec": map[string]any{"group": "metrics.shop.example", "version": "v1beta1", "groupPriorityMinimum": int64(1000),
			"versionPriority": int64(15), "insecureSkipTLSVerify": true,
			"service": map[string]any{"namespace": LegacyNamespace, "name": legacyService, "port": int64(443)}},
	}}
	if _, err := b.env.Dynamic.Resource(apiServices).Create(ctx, svc, metav1.CreateOptions{FieldManager: "helm"}); err != nil {
		return fmt.Errorf("create APIService %s: %w", legacyAPIService, err)
	}
	err := poll(ctx, time.Minute, "APIService "+legacyAPIService+" to be unavailable", func(ctx context.Context) (bool, error) {
		got, err := b.env.Dynamic.Resource(apiServices).Get(ctx, legacyAPIService, metav1.GetOptions{})
		return err == nil && APIServiceUnavailable(got), err
	})
	if err != nil {
		return err
	}
	if err := b.env.Kube.CoreV1().Namespaces().Delete(ctx, LegacyNamespace, metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("delete namespace %s: %w", LegacyNamespace, err)
	}
	return nil
}

// settle waits until every broken state is what a scan should see, then records the expected
// findings and the healthy objects.
func (b *builder) settle(ctx context.Context, shop *Shop) error {
	kube := b.env.Kube
	// image-resizer: its kubelet finished (grace period 0); only the finalizer holds the pod.
	resizer, err := b.waitTerminating(ctx, b.deleted["image-resizer"], func(p *corev1.Pod) bool {
		return p.DeletionGracePeriodSeconds != nil && *p.DeletionGracePeriodSeconds == 0
	}, "the kubelet to stop image-resizer's pod")
	if err != nil {
		return err
	}
	// search: the deletion's grace period ran out on the dead node.
	search, err := b.waitTerminating(ctx, b.deleted["search"], func(p *corev1.Pod) bool {
		return time.Now().After(p.DeletionTimestamp.Add(time.Second))
	}, "search's grace period to run out on "+nodeEdge)
	if err != nil {
		return err
	}
	// recommender: PodGC force-deletes pods of the missing node (after 40s of quarantine); the
	// uninstalled cache warmer's finalizer keeps the pod.
	recommender, err := b.waitTerminating(ctx, b.deleted["recommender"], func(*corev1.Pod) bool { return true },
		"PodGC to delete recommender's pod on the missing node "+nodeSpot)
	if err != nil {
		return err
	}
	err = poll(ctx, 2*time.Minute, "namespace "+LegacyNamespace+" to report NamespaceDeletionDiscoveryFailure", func(ctx context.Context) (bool, error) {
		ns, err := kube.CoreV1().Namespaces().Get(ctx, LegacyNamespace, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range ns.Status.Conditions {
			if c.Type == corev1.NamespaceDeletionDiscoveryFailure && c.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return err
	}
	err = poll(ctx, time.Minute, "CloneSet inventory to observe its template change", func(ctx context.Context) (bool, error) {
		u, err := b.env.Dynamic.Resource(kruise.CloneSets).Namespace(Namespace).Get(ctx, "inventory", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		og, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
		return og == u.GetGeneration(), nil
	})
	if err != nil {
		return err
	}
	// checkout: past --expectation-timeout the leader logs the leaked expectation.
	err = poll(ctx, 2*expectationTimeout+time.Minute, "kruise-manager to log the leaked expectation of checkout", func(context.Context) (bool, error) {
		data, err := os.ReadFile(b.env.Files.ManagerLog)
		return err == nil && strings.Contains(string(data), `"Expectation unsatisfied overtime" cloneSet="shop/checkout"`), err
	})
	if err != nil {
		return err
	}

	cart, err := b.livePods(ctx, Namespace, "app=cart")
	if err != nil {
		return err
	}
	payments, err := b.livePods(ctx, Namespace, "app=payments")
	if err != nil {
		return err
	}
	inventory, err := b.livePods(ctx, Namespace, "app=inventory")
	if err != nil {
		return err
	}
	for _, p := range cart {
		shop.expect("stuck-preparing-normal", "prenormal-event-dropped", pod(p.Name), true,
			"cart: the hook finalizer was added, but kruise-manager v1.7.0 with CloneSetEventHandlerOptimization ignored that event; the pod stays PreparingNormal")
	}
	for _, p := range payments {
		shop.expect("stuck-preparing-normal", "prenormal-hook-pending", pod(p.Name), false,
			"payments: the warm-up controller set "+warmupLabel+"=false; kruise waits for the hook by design (a person looks at the warm-up)")
	}
	shop.expect("expectations-unsatisfied", "scale-expectations-leaked", Object{"CloneSet", Namespace, "checkout"}, true,
		"checkout: a pod was created and deleted while kruise-manager's watch re-listed; the leader waits for it and skips every reconcile")
	for _, p := range inventory {
		shop.expect("resize-policy-drift", "resize-policy-immutable", pod(p.Name), true,
			"inventory: the template now restarts on memory resize; running pods cannot take a new resizePolicy in place")
	}
	for _, p := range search {
		shop.expect("stuck-terminating", "node-not-ready", pod(p.Name), true,
			"search: deleted while its node "+nodeEdge+" stopped heartbeating; no kubelet confirms it stopped")
	}
	for _, p := range recommender {
		shop.expect("stuck-terminating", "node-missing", pod(p.Name), true,
			"recommender: its node "+nodeSpot+" was removed; PodGC deleted it, the uninstalled cache warmer's finalizer holds it")
	}
	for _, p := range resizer {
		shop.expect("stuck-terminating", "finalizer-owner-missing", pod(p.Name), true,
			"image-resizer: restarted; the finalizer of the uninstalled volume janitor holds the old pod")
	}
	shop.expect("stuck-terminating", "namespace-discovery-failed", Object{"Namespace", "", LegacyNamespace}, false,
		"shop-legacy: deleted while APIService "+legacyAPIService+" points at a Service that is gone (a person removes or repairs it)")

	for _, app := range []string{"catalog", "orders", "reviews"} {
		shop.Healthy = append(shop.Healthy, Object{"CloneSet", Namespace, app})
	}
	shop.Healthy = append(shop.Healthy, Object{"Deployment", Namespace, "frontend"})
	for _, app := range []string{"catalog", "orders", "reviews", "frontend"} {
		pods, err := b.pods(ctx, Namespace, "app="+app)
		if err != nil {
			return err
		}
		for _, p := range pods {
			shop.Healthy = append(shop.Healthy, pod(p.Name))
		}
	}
	return nil
}

// waitTerminating waits until each named pod is being deleted and matches done, and returns them.
func (b *builder) waitTerminating(ctx context.Context, names []string, done func(*corev1.Pod) bool, what string) ([]corev1.Pod, error) {
	if len(names) == 0 {
		return nil, fmt.Errorf("wait for %s: no pod", what)
	}
	var out []corev1.Pod
	err := poll(ctx, 3*time.Minute, what, func(ctx context.Context) (bool, error) {
		out = out[:0]
		for _, name := range names {
			p, err := b.env.Kube.CoreV1().Pods(Namespace).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if p.DeletionTimestamp == nil || !done(p) {
				return false, nil
			}
			out = append(out, *p)
		}
		return true, nil
	})
	return out, err
}

func (s *Shop) expect(check, rootCause string, obj Object, fixable bool, story string) {
	s.Expected = append(s.Expected, Expectation{Check: check, RootCause: rootCause, Object: obj, Fixable: fixable, Story: story})
}

func pod(name string) Object { return Object{"Pod", Namespace, name} }

// APIServiceUnavailable reports whether the kube-apiserver's availability controller has marked an
// APIService Available=False (its service cannot be reached).
func APIServiceUnavailable(svc *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(svc.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Available" && m["status"] == "False" {
			return true
		}
	}
	return false
}
