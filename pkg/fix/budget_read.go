package fix

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/collect"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// budgetReader reads, fresh, what a budget is judged from: a pod's owning workload, the
// workload's pods and the PodDisruptionBudgets over them.
type budgetReader struct{ c Clients }

// owner returns the workload that controls the pod: its controller, or the Deployment that
// controls its ReplicaSet. It returns nil when the pod has no controller.
func (r budgetReader) owner(ctx context.Context, pod *corev1.Pod) (*unstructured.Unstructured, error) {
	ref := metav1.GetControllerOf(pod)
	if ref == nil {
		return nil, nil
	}
	w, err := r.get(ctx, pod.Namespace, ref)
	if err != nil {
		return nil, err
	}
	if w.GetKind() == "ReplicaSet" && w.GetAPIVersion() == "apps/v1" {
		if up := metav1.GetControllerOf(w); up != nil && up.Kind == "Deployment" && up.APIVersion == "apps/v1" {
			return r.get(ctx, pod.Namespace, up)
		}
	}
	return w, nil
}

// get reads a controller by its owner reference and checks it is the one referenced.
func (r budgetReader) get(ctx context.Context, ns string, ref *metav1.OwnerReference) (*unstructured.Unstructured, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil, fmt.Errorf("controller %s %s: bad apiVersion: %w", ref.Kind, ref.Name, err)
	}
	m, err := r.c.Mapper.RESTMapping(gv.WithKind(ref.Kind).GroupKind(), gv.Version)
	if err != nil {
		return nil, fmt.Errorf("controller %s %s: no resource serves %s: %w", ref.Kind, ref.Name, ref.APIVersion, err)
	}
	u, err := r.c.Dynamic.Resource(m.Resource).Namespace(ns).Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("read the pod's controller %s %s/%s: %w", ref.Kind, ns, ref.Name, err)
	}
	if u.GetUID() != ref.UID {
		return nil, fmt.Errorf("the pod's controller %s %s/%s was replaced (uid %s, the pod names %s)", ref.Kind, ns, ref.Name, u.GetUID(), ref.UID)
	}
	return u, nil
}

// pods returns the workload's pods: those it controls, or, for a Deployment, those its
// ReplicaSets control; and the apiserver's time of the read, which availability is judged at.
func (r budgetReader) pods(ctx context.Context, w *unstructured.Unstructured) ([]corev1.Pod, time.Time, error) {
	owners := map[types.UID]bool{w.GetUID(): true}
	if w.GetKind() == "Deployment" {
		rss, err := r.c.Kube.AppsV1().ReplicaSets(w.GetNamespace()).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, time.Time{}, fmt.Errorf("list the ReplicaSets of %s: %w", w.GetName(), err)
		}
		for i := range rss.Items {
			if ref := metav1.GetControllerOf(&rss.Items[i]); ref != nil && ref.UID == w.GetUID() {
				owners[rss.Items[i].UID] = true
			}
		}
	}
	opts := metav1.ListOptions{}
	if raw, ok, _ := unstructured.NestedMap(w.Object, "spec", "selector"); ok {
		var sel metav1.LabelSelector
		if err := fromUnstructured(raw, &sel); err == nil {
			if s, err := metav1.LabelSelectorAsSelector(&sel); err == nil {
				opts.LabelSelector = s.String()
			}
		}
	}
	var date collect.ServerDate
	list, err := r.c.Kube.CoreV1().Pods(w.GetNamespace()).List(collect.WithServerDate(ctx, &date), opts)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("list the pods of %s %s: %w", w.GetKind(), w.GetName(), err)
	}
	now, _ := date.Now(time.Now())
	var out []corev1.Pod
	for _, p := range list.Items {
		if ref := metav1.GetControllerOf(&p); ref != nil && owners[ref.UID] {
			out = append(out, p)
		}
	}
	return out, now, nil
}

// pdbs returns the PodDisruptionBudgets that select any of the pods, with what they allow now.
func (r budgetReader) pdbs(ctx context.Context, ns string, pods []corev1.Pod) ([]PDB, error) {
	list, err := r.c.Kube.PolicyV1().PodDisruptionBudgets(ns).List(ctx, metav1.ListOptions{})
	if apierrors.IsForbidden(err) || apierrors.IsNotFound(err) {
		return nil, nil // the Eviction API still applies them
	}
	if err != nil {
		return nil, fmt.Errorf("list PodDisruptionBudgets in %s: %w", ns, err)
	}
	var out []PDB
	for _, p := range list.Items {
		sel, err := metav1.LabelSelectorAsSelector(p.Spec.Selector)
		if err != nil || sel.Empty() {
			continue
		}
		for _, pod := range pods {
			if sel.Matches(labels.Set(pod.Labels)) {
				out = append(out, PDB{Name: p.Name, DisruptionsAllowed: p.Status.DisruptionsAllowed})
				break
			}
		}
	}
	return out, nil
}

// PDB is a PodDisruptionBudget over a workload's pods.
type PDB struct {
	Name               string
	DisruptionsAllowed int32
}

// serving reports whether a pod serves: Ready and not being deleted.
func serving(p *corev1.Pod) bool {
	if p.DeletionTimestamp != nil {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// available reports whether the workload's controller counts the pod available: serving, and
// Ready for MinReadySeconds at now (k8s.io/kubernetes pkg/api/v1/pod IsPodAvailable, which the
// Deployment, StatefulSet and DaemonSet controllers and OpenKruise's count). A replacement Ready
// for less is not yet one the workload's maxUnavailable counts on. The Advanced StatefulSet also
// counts a pod in a lifecycle state other than Normal, or not Running, unavailable (kruise v1.9.0
// pkg/controller/statefulset/stateful_set_utils.go isRunningAndAvailable).
func (b Budget) available(p *corev1.Pod, now time.Time) bool {
	if !serving(p) {
		return false
	}
	if b.Workload.Kind == "StatefulSet" && strings.HasPrefix(b.Workload.APIVersion, groupKruise+"/") {
		if st := p.Labels[kruise.LabelLifecycleState]; (st != "" && st != kruise.StateNormal) || p.Status.Phase != corev1.PodRunning {
			return false
		}
	}
	if b.MinReadySeconds <= 0 {
		return true
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return !c.LastTransitionTime.IsZero() && c.LastTransitionTime.Add(time.Duration(b.MinReadySeconds)*time.Second).Before(now)
		}
	}
	return false
}

// podRefOf names a pod for a result.
func podRefOf(p *corev1.Pod) report.ObjectRef {
	return report.ObjectRef{APIVersion: "v1", Kind: "Pod", Namespace: p.Namespace, Name: p.Name, UID: string(p.UID), ResourceVersion: p.ResourceVersion}
}
