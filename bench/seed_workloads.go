package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
)

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

// seedGroup creates group g: its owner, its pods and, for a CloneSet, the owner's status.
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

// createOwner creates the group's CloneSet or ReplicaSet and records the owner reference its pods
// carry.
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
