package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/scenario"
	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/scenario/kubelet"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// coreEnv is the cluster the core workloads' scenarios share.
type coreEnv struct {
	cs kubernetes.Interface
}

// The images of the scenarios: what runs, what a rollout moves to, and one nobody can pull (the
// kwok stage behind kubelet.ErrImagePull plays the kubelet's side).
const (
	coreImage       = "registry.example.com/shop/web:1.0"
	coreImageNext   = "registry.example.com/shop/web:1.1"
	coreImageBroken = "registry.example.com/shop/web:1.1-rc0"
)

// node registers a node in pool for kwok to play, with cpu CPUs.
func (e *coreEnv) node(t *testing.T, name, pool, cpu string) {
	t.Helper()
	if _, err := e.cs.CoreV1().Nodes().Create(t.Context(), scenario.Node(name, pool, cpu), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create node %s: %v", name, err)
	}
}

// stopKubelet has kwok stop playing the node's kubelet, as in the demo's shop: its Lease is no
// longer renewed, so the node-lifecycle controller turns it Ready=Unknown after
// --node-monitor-grace-period and taints it unreachable.
func (e *coreEnv) stopKubelet(t *testing.T, name string) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, kubelet.NodeLabel)
	if _, err := e.cs.CoreV1().Nodes().Patch(t.Context(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("stop the kubelet of node %s: %v", name, err)
	}
}

// coreTemplate is an application pod template: one container with requests, on a node pool.
func coreTemplate(app, pool string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": app}},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"pool": pool},
			Containers: []corev1.Container{{
				Name: "app", Image: coreImage,
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")}},
			}},
		},
	}
}

func coreDeployment(name string, replicas int32, tmpl corev1.PodTemplateSpec) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: tmpl.Labels},
			Template: tmpl,
		},
	}
}

func coreDaemonSet(name string, tmpl corev1.PodTemplateSpec) *appsv1.DaemonSet {
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: tmpl.Labels},
			Template: tmpl,
		},
	}
}

// coreRollTo is the strategic merge patch `kubectl set image` and a label edit send: the
// container's image and, when kubeletLabel is set, the pod label that tells kwok what the kubelet
// meets starting the new pods.
func coreRollTo(image, kubeletLabel string) string {
	labels := ""
	if kubeletLabel != "" {
		labels = fmt.Sprintf(`"metadata":{"labels":{%q:%q}},`, kubelet.Label, kubeletLabel)
	}
	return fmt.Sprintf(`{"spec":{"template":{%s"spec":{"containers":[{"name":"app","image":%q}]}}}}`, labels, image)
}

// createDeployment creates d in ns and waits until its first rollout completed.
func (e *coreEnv) createDeployment(t *testing.T, ns string, d *appsv1.Deployment) {
	t.Helper()
	if _, err := e.cs.AppsV1().Deployments(ns).Create(t.Context(), d, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create Deployment %s/%s: %v", ns, d.Name, err)
	}
	e.waitDeployment(t, ns, d.Name, "the first rollout to complete", coreDeploymentComplete)
}

// createDaemonSet creates ds in ns and waits until a pod of it is available on every node it runs on.
func (e *coreEnv) createDaemonSet(t *testing.T, ns string, ds *appsv1.DaemonSet, nodes int32) {
	t.Helper()
	if _, err := e.cs.AppsV1().DaemonSets(ns).Create(t.Context(), ds, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create DaemonSet %s/%s: %v", ns, ds.Name, err)
	}
	e.waitDaemonSet(t, ns, ds.Name, "its pods to be available", func(ds *appsv1.DaemonSet) bool {
		return coreDaemonSetObserved(ds) && ds.Status.DesiredNumberScheduled == nodes && ds.Status.NumberAvailable == nodes
	})
}

// patch sends a strategic merge patch to a Deployment or DaemonSet, as kubectl does.
func (e *coreEnv) patch(t *testing.T, ns, resource, name, patch string) {
	t.Helper()
	var err error
	switch resource {
	case "deployments":
		_, err = e.cs.AppsV1().Deployments(ns).Patch(t.Context(), name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "kubectl-patch"})
	case "daemonsets":
		_, err = e.cs.AppsV1().DaemonSets(ns).Patch(t.Context(), name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "kubectl-patch"})
	default:
		t.Fatalf("patch: unknown resource %s", resource)
	}
	if err != nil {
		t.Fatalf("patch %s %s/%s: %v", resource, ns, name, err)
	}
}

// coreWait polls get until ok holds; on timeout it fails with what was last read, so a failure says
// which state the controllers left.
func coreWait[T any](t *testing.T, timeout time.Duration, what string, get func(context.Context) (T, error), ok func(T) bool, describe func(T) string) T {
	t.Helper()
	var last T
	seen := false
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	err := wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		v, err := get(ctx)
		if err != nil {
			return false, err
		}
		last, seen = v, true
		return ok(v), nil
	})
	if err != nil {
		state := "nothing read"
		if seen {
			state = describe(last)
		}
		t.Fatalf("waiting for %s: %v\nlast seen: %s", what, err, state)
	}
	return last
}

func (e *coreEnv) waitDeployment(t *testing.T, ns, name, what string, ok func(*appsv1.Deployment) bool) *appsv1.Deployment {
	t.Helper()
	return coreWait(t, 2*time.Minute, fmt.Sprintf("Deployment %s/%s: %s", ns, name, what), func(ctx context.Context) (*appsv1.Deployment, error) {
		return e.cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
	}, ok, coreDeploymentState)
}

func (e *coreEnv) waitDaemonSet(t *testing.T, ns, name, what string, ok func(*appsv1.DaemonSet) bool) *appsv1.DaemonSet {
	t.Helper()
	return coreWait(t, 2*time.Minute, fmt.Sprintf("DaemonSet %s/%s: %s", ns, name, what), func(ctx context.Context) (*appsv1.DaemonSet, error) {
		return e.cs.AppsV1().DaemonSets(ns).Get(ctx, name, metav1.GetOptions{})
	}, ok, coreDaemonSetState)
}

// waitPods waits until the pods selector selects in ns satisfy ok.
func (e *coreEnv) waitPods(t *testing.T, ns, selector, what string, ok func([]corev1.Pod) bool) []corev1.Pod {
	t.Helper()
	return coreWait(t, 2*time.Minute, fmt.Sprintf("pods %s in %s: %s", selector, ns, what), func(ctx context.Context) ([]corev1.Pod, error) {
		pods, err := e.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return nil, err
		}
		return pods.Items, nil
	}, ok, corePodsState)
}

// newReplicaSet is the Deployment's ReplicaSet of its current revision (the annotation the
// Deployment controller writes on both, getNewReplicaSet in pkg/controller/deployment/sync.go).
func (e *coreEnv) newReplicaSet(t *testing.T, d *appsv1.Deployment) *appsv1.ReplicaSet {
	t.Helper()
	const revision = "deployment.kubernetes.io/revision"
	rss, err := e.cs.AppsV1().ReplicaSets(d.Namespace).List(t.Context(), metav1.ListOptions{LabelSelector: metav1.FormatLabelSelector(d.Spec.Selector)})
	if err != nil {
		t.Fatal(err)
	}
	for i := range rss.Items {
		if rss.Items[i].Annotations[revision] == d.Annotations[revision] {
			return &rss.Items[i]
		}
	}
	t.Fatalf("Deployment %s/%s has no ReplicaSet of revision %s", d.Namespace, d.Name, d.Annotations[revision])
	return nil
}

// newPods waits until the pods of the Deployment's new ReplicaSet satisfy ok.
func (e *coreEnv) newPods(t *testing.T, d *appsv1.Deployment, what string, ok func([]corev1.Pod) bool) []corev1.Pod {
	t.Helper()
	rs := e.newReplicaSet(t, d)
	selector := appsv1.DefaultDeploymentUniqueLabelKey + "=" + rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
	return e.waitPods(t, d.Namespace, selector, what, ok)
}

// coreDeploymentComplete is the Deployment controller's own word that the rollout is done:
// Progressing reason NewReplicaSetAvailable (syncRolloutStatus, progress.go) for the current
// generation, every replica updated and available.
func coreDeploymentComplete(d *appsv1.Deployment) bool {
	want := *d.Spec.Replicas
	return coreDeploymentObserved(d) && coreCondition(d, appsv1.DeploymentProgressing, corev1.ConditionTrue, "NewReplicaSetAvailable") &&
		d.Status.Replicas == want && d.Status.UpdatedReplicas == want && d.Status.AvailableReplicas == want
}

// coreDeploymentObserved and coreDaemonSetObserved tell whether the controller's status is of
// the current spec.
func coreDeploymentObserved(d *appsv1.Deployment) bool {
	return d.Status.ObservedGeneration >= d.Generation
}

func coreDaemonSetObserved(ds *appsv1.DaemonSet) bool {
	return ds.Status.ObservedGeneration >= ds.Generation
}

// coreCondition tells whether the Deployment has condition typ with status and reason.
func coreCondition(d *appsv1.Deployment, typ appsv1.DeploymentConditionType, status corev1.ConditionStatus, reason string) bool {
	for _, c := range d.Status.Conditions {
		if c.Type == typ {
			return c.Status == status && c.Reason == reason
		}
	}
	return false
}

func coreConditionOf(d *appsv1.Deployment, typ appsv1.DeploymentConditionType) appsv1.DeploymentCondition {
	for _, c := range d.Status.Conditions {
		if c.Type == typ {
			return c
		}
	}
	return appsv1.DeploymentCondition{}
}

func coreDeploymentState(d *appsv1.Deployment) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Deployment %s/%s generation %d observed %d; spec replicas %d paused %t; status replicas %d updated %d ready %d available %d unavailable %d",
		d.Namespace, d.Name, d.Generation, d.Status.ObservedGeneration, *d.Spec.Replicas, d.Spec.Paused,
		d.Status.Replicas, d.Status.UpdatedReplicas, d.Status.ReadyReplicas, d.Status.AvailableReplicas, d.Status.UnavailableReplicas)
	if d.Status.TerminatingReplicas != nil {
		fmt.Fprintf(&b, " terminating %d", *d.Status.TerminatingReplicas)
	}
	for _, c := range d.Status.Conditions {
		fmt.Fprintf(&b, "; %s=%s %s (%s)", c.Type, c.Status, c.Reason, c.Message)
	}
	return b.String()
}

func coreDaemonSetState(ds *appsv1.DaemonSet) string {
	return fmt.Sprintf("DaemonSet %s/%s generation %d observed %d; desired %d current %d ready %d available %d unavailable %d updated %d misscheduled %d",
		ds.Namespace, ds.Name, ds.Generation, ds.Status.ObservedGeneration, ds.Status.DesiredNumberScheduled, ds.Status.CurrentNumberScheduled,
		ds.Status.NumberReady, ds.Status.NumberAvailable, ds.Status.NumberUnavailable, ds.Status.UpdatedNumberScheduled, ds.Status.NumberMisscheduled)
}

func corePodsState(pods []corev1.Pod) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d pods", len(pods))
	for _, p := range pods {
		fmt.Fprintf(&b, "\n  %s node %q phase %s image %s", p.Name, p.Spec.NodeName, p.Status.Phase, p.Spec.Containers[0].Image)
		if p.DeletionTimestamp != nil {
			fmt.Fprintf(&b, " deleting at %s", p.DeletionTimestamp.Format(time.RFC3339))
		}
		for _, c := range p.Status.Conditions {
			if c.Status != corev1.ConditionTrue {
				fmt.Fprintf(&b, "; %s=%s %s (%s)", c.Type, c.Status, c.Reason, c.Message)
			}
		}
		for _, s := range p.Status.ContainerStatuses {
			if s.State.Waiting != nil {
				fmt.Fprintf(&b, "; %s waiting %s (%s)", s.Name, s.State.Waiting.Reason, s.State.Waiting.Message)
			}
		}
	}
	return b.String()
}

// podReady is the status of the pod's Ready condition.
func podReady(p *corev1.Pod) corev1.ConditionStatus {
	if c := podCondition(p, corev1.PodReady); c != nil {
		return c.Status
	}
	return corev1.ConditionUnknown
}

// imagePullBackOff tells whether the kubelet reports the pod's container waiting to pull image.
func imagePullBackOff(p *corev1.Pod, image string) bool {
	return slices.ContainsFunc(p.Status.ContainerStatuses, func(s corev1.ContainerStatus) bool {
		return s.Image == image && s.State.Waiting != nil && s.State.Waiting.Reason == "ImagePullBackOff"
	})
}

// coreKey names a finding by what the scenarios assert: check, root cause and object.
func coreKey(f report.Finding) string {
	return fmt.Sprintf("%s %s %s/%s", f.Check, f.RootCause.ID, f.Object.Kind, f.Object.Name)
}

// coreFindings are the keys of the report's findings on objects in namespace ns, sorted.
func coreFindings(rep *report.Report, ns string) []string {
	var keys []string
	for _, f := range rep.Findings {
		if f.Object.Namespace == ns {
			keys = append(keys, coreKey(f))
		}
	}
	slices.Sort(keys)
	return keys
}

// coreFinding is the report's finding of check on the object kind ns/name.
func coreFinding(t *testing.T, rep *report.Report, check, kind, ns, name string) report.Finding {
	t.Helper()
	for _, f := range rep.Findings {
		if f.Check == check && f.Object.Kind == kind && f.Object.Namespace == ns && f.Object.Name == name {
			return f
		}
	}
	t.Fatalf("no %s finding on %s %s/%s; findings:\n%s", check, kind, ns, name, summaries(rep))
	return report.Finding{}
}
