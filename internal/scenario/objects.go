package scenario

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/scenario/kruisemanager"
	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/scenario/kubelet"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
)

// Field managers of the people and tools that write the scenario's objects.
const (
	applyManager = "kubectl-client-side-apply"
	editManager  = "kubectl-edit"
)

// builder creates the scenario's objects the way the people and controllers of a real cluster do.
type builder struct {
	env Env
	// deleted are the pods each app lost to the story (by app), whose deletion the scan must see stuck.
	deleted map[string][]string
}

func (b *builder) logf(format string, args ...any) { b.env.Logf(format, args...) }

// poll waits for cond, at most timeout; what names the wait in the error.
func poll(ctx context.Context, timeout time.Duration, what string, cond func(ctx context.Context) (bool, error)) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 300*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		ok, err := cond(ctx)
		if err != nil {
			last = err
			return false, nil // API hiccups under load are retried until the timeout
		}
		return ok, nil
	})
	if err != nil {
		if last != nil {
			return fmt.Errorf("wait for %s: %w (last error: %v)", what, err, last)
		}
		return fmt.Errorf("wait for %s: %w", what, err)
	}
	return nil
}

// node registers a node for kwok to play in a pool.
func (b *builder) node(ctx context.Context, name, pool string) error {
	if _, err := b.env.Kube.CoreV1().Nodes().Create(ctx, Node(name, pool, kubelet.NodeMilliCPU+"m"), metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create node %s: %w", name, err)
	}
	return nil
}

// Node is a node for kwok to play, as kwok's documentation registers one, in a pool (its "pool"
// label), with cpu CPUs.
func Node(name, pool, cpu string) *corev1.Node {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse(cpu),
		corev1.ResourceMemory: resource.MustParse("64Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Annotations: map[string]string{"node.alpha.kubernetes.io/ttl": "0", "kwok.x-k8s.io/node": "fake"},
			Labels: map[string]string{
				"kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux", "kubernetes.io/hostname": name,
				"node-role.kubernetes.io/agent": "", kubelet.NodeLabel: kubelet.NodeLabelValue, "pool": pool,
			},
		},
		Status: corev1.NodeStatus{Allocatable: capacity, Capacity: capacity},
	}
}

func (b *builder) waitNodeReady(ctx context.Context, name string, want corev1.ConditionStatus, timeout time.Duration) error {
	return poll(ctx, timeout, fmt.Sprintf("node %s Ready=%s", name, want), func(ctx context.Context) (bool, error) {
		n, err := b.env.Kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return c.Status == want, nil
			}
		}
		return false, nil
	})
}

func (b *builder) namespace(ctx context.Context, name string) error {
	_, err := b.env.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", name, err)
	}
	return nil
}

// podSpec is an application pod: one container with requests, placed on a node pool.
func podSpec(pool, image string, policy []corev1.ContainerResizePolicy) corev1.PodSpec {
	return corev1.PodSpec{
		NodeSelector: map[string]string{"pool": pool},
		Containers: []corev1.Container{{
			Name: "app", Image: image, ResizePolicy: policy,
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("256Mi")}},
		}},
	}
}

// deployment creates a Deployment as `kubectl apply` does; kube-controller-manager runs it.
func (b *builder) deployment(ctx context.Context, ns, name string, replicas int32, spec corev1.PodSpec) error {
	return b.deploymentWithLabels(ctx, ns, name, map[string]string{"app": name}, replicas, spec)
}

func (b *builder) deploymentWithLabels(ctx context.Context, ns, name string, labels map[string]string, replicas int32, spec corev1.PodSpec) error {
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec}},
	}
	if _, err := b.env.Kube.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{FieldManager: applyManager}); err != nil {
		return fmt.Errorf("create Deployment %s/%s: %w", ns, name, err)
	}
	return nil
}

func (b *builder) waitDeploymentAvailable(ctx context.Context, ns, name string) error {
	return poll(ctx, 2*time.Minute, "Deployment "+ns+"/"+name+" available", func(ctx context.Context) (bool, error) {
		d, err := b.env.Kube.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return d.Status.ObservedGeneration == d.Generation && d.Spec.Replicas != nil &&
			d.Status.AvailableReplicas == *d.Spec.Replicas && d.Status.UpdatedReplicas == *d.Spec.Replicas, nil
	})
}

// waitDeploymentProgressing waits until the deployment controller has observed the Deployment's
// generation and set its Progressing condition to reason.
func (b *builder) waitDeploymentProgressing(ctx context.Context, ns, name, reason string, timeout time.Duration) error {
	return poll(ctx, timeout, "Deployment "+ns+"/"+name+" Progressing reason "+reason, func(ctx context.Context) (bool, error) {
		d, err := b.env.Kube.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range d.Status.Conditions {
			if c.Type == appsv1.DeploymentProgressing {
				return c.Reason == reason && d.Status.ObservedGeneration == d.Generation, nil
			}
		}
		return false, nil
	})
}

// cloneSetSpec describes a CloneSet the scenario applies.
type cloneSetSpec struct {
	name      string
	replicas  int64
	spec      corev1.PodSpec
	lifecycle map[string]any
	// updateType is updateStrategy.type ("" leaves kruise's default, ReCreate).
	updateType string
}

// cloneSet creates a CloneSet as `kubectl apply` does; the kruise-manager stand-in runs it.
func (b *builder) cloneSet(ctx context.Context, ns string, c cloneSetSpec) error {
	labels := map[string]string{"app": c.name}
	tpl, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: c.spec})
	if err != nil {
		return fmt.Errorf("CloneSet %s template: %w", c.name, err)
	}
	delete(tpl["metadata"].(map[string]any), "creationTimestamp")
	spec := map[string]any{
		"replicas": c.replicas,
		"selector": map[string]any{"matchLabels": map[string]any{"app": c.name}},
		"template": tpl,
	}
	if c.lifecycle != nil {
		spec["lifecycle"] = c.lifecycle
	}
	if c.updateType != "" {
		spec["updateStrategy"] = map[string]any{"type": c.updateType}
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": kruise.Group + "/v1alpha1", "kind": kruise.KindCloneSet,
		"metadata": map[string]any{"name": c.name, "namespace": ns, "labels": map[string]any{"app": c.name}},
		"spec":     spec,
	}}
	if _, err := b.env.Dynamic.Resource(kruise.CloneSets).Namespace(ns).Create(ctx, u, metav1.CreateOptions{FieldManager: applyManager}); err != nil {
		return fmt.Errorf("create CloneSet %s/%s: %w", ns, c.name, err)
	}
	return nil
}

// patchCloneSet edits a CloneSet's spec with a merge patch, as `kubectl patch`/`edit` does.
func (b *builder) patchCloneSet(ctx context.Context, ns, name, manager string, patch map[string]any) error {
	raw, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	if _, err := b.env.Dynamic.Resource(kruise.CloneSets).Namespace(ns).Patch(ctx, name, types.MergePatchType, raw,
		metav1.PatchOptions{FieldManager: manager}); err != nil {
		return fmt.Errorf("patch CloneSet %s/%s: %w", ns, name, err)
	}
	return nil
}

// waitCloneSetSteady waits until the CloneSet's pods all run and its status says so.
func (b *builder) waitCloneSetSteady(ctx context.Context, ns, name string) error {
	return poll(ctx, 2*time.Minute, "CloneSet "+ns+"/"+name+" to run all its pods", func(ctx context.Context) (bool, error) {
		u, err := b.env.Dynamic.Resource(kruise.CloneSets).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		w, err := kruise.WorkloadFromUnstructured(u)
		if err != nil || w.Replicas == nil {
			return false, err
		}
		pods, err := b.pods(ctx, ns, "app="+name)
		if err != nil {
			return false, err
		}
		running := int32(0)
		for _, p := range pods {
			if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && kruisemanager.PodReady(&p) {
				running++
			}
		}
		return running == *w.Replicas && w.Status.ObservedGeneration == w.Generation && w.Status.Replicas == *w.Replicas &&
			w.Status.ReadyReplicas == *w.Replicas, nil
	})
}

func (b *builder) pods(ctx context.Context, ns, selector string) ([]corev1.Pod, error) {
	list, err := b.env.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// livePods returns the pods of selector that are not being deleted, sorted by name.
func (b *builder) livePods(ctx context.Context, ns, selector string) ([]corev1.Pod, error) {
	all, err := b.pods(ctx, ns, selector)
	if err != nil {
		return nil, err
	}
	var out []corev1.Pod
	for _, p := range all {
		if p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out, nil
}

// patchPodMeta patches a pod's labels and finalizers as the named controller does (a strategic
// merge patch under its own field manager).
func (b *builder) patchPodMeta(ctx context.Context, ns, name, manager string, labels map[string]string, finalizers []string) error {
	meta := map[string]any{}
	if labels != nil {
		meta["labels"] = labels
	}
	if finalizers != nil {
		meta["finalizers"] = finalizers
	}
	raw, err := json.Marshal(map[string]any{"metadata": meta})
	if err != nil {
		return err
	}
	if _, err := b.env.Kube.CoreV1().Pods(ns).Patch(ctx, name, types.StrategicMergePatchType, raw, metav1.PatchOptions{FieldManager: manager}); err != nil {
		return fmt.Errorf("%s patches pod %s/%s: %w", manager, ns, name, err)
	}
	return nil
}

// controllerPatches has the named controller patch the labels and finalizers of every live pod
// of app, and returns how many pods it patched.
func (b *builder) controllerPatches(ctx context.Context, app, manager string, labels map[string]string, finalizers []string) (int, error) {
	pods, err := b.livePods(ctx, Namespace, "app="+app)
	if err != nil {
		return 0, err
	}
	for _, p := range pods {
		if err := b.patchPodMeta(ctx, Namespace, p.Name, manager, labels, finalizers); err != nil {
			return 0, err
		}
	}
	return len(pods), nil
}

// waitLifecycle waits until every live pod of selector is in the lifecycle state.
func (b *builder) waitLifecycle(ctx context.Context, ns, selector, state string, n int) error {
	return poll(ctx, time.Minute, fmt.Sprintf("%d pods %s in %s to be %s", n, selector, ns, state), func(ctx context.Context) (bool, error) {
		pods, err := b.livePods(ctx, ns, selector)
		if err != nil {
			return false, err
		}
		count := 0
		for _, p := range pods {
			if p.Labels[kruise.LabelLifecycleState] == state {
				count++
			}
		}
		return count == n && len(pods) == n, nil
	})
}
