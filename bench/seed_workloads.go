package main

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
)

// kind is the kind of workload a group of pods belongs to.
type kind int

const (
	kindDeployment kind = iota
	kindCloneSet
	kindStatefulSet
	kindDaemonSet
)

// kindAt is the kind of the group at position p of each run of setsEvery groups.
func kindAt(p int) kind {
	switch {
	case p%cloneSetEvery == 0:
		return kindCloneSet
	case p == 2:
		return kindStatefulSet
	case p == 3:
		return kindDaemonSet
	}
	return kindDeployment
}

// kindOf is the kind of group g and its ordinal among the groups of that kind.
func kindOf(g int) (kind, int) {
	run, p := g/setsEvery, g%setsEvery
	k := kindAt(p)
	before, perRun := 0, 0
	for q := range setsEvery {
		if kindAt(q) == k {
			perRun++
			if q < p {
				before++
			}
		}
	}
	return k, run*perRun + before
}

// group is one workload and its pods.
type group struct {
	index int
	ns    string
	// name is the workload's.
	name string
	kind kind
	// ordinal is the group's index among the groups of its kind.
	ordinal int
	// stalled says the workload's rollout is stuck (Deployments, StatefulSets, DaemonSets).
	stalled bool
	// revision is a CloneSet's controller-revision-hash.
	revision string
	// labels are the pod template's labels, without the controllers' revision labels.
	labels map[string]string
	// owner is a CloneSet's reference, which all its pods carry.
	owner metav1.OwnerReference
	// members say how each pod of a core workload differs from its siblings: see member.
	members [groupSize]member
	// The core workload as created, and its ReplicaSets (a Deployment's) or revision names (a
	// StatefulSet's ControllerRevisions, a DaemonSet's hashes), oldest first.
	deployment  *appsv1.Deployment
	replicaSets []*appsv1.ReplicaSet
	statefulSet *appsv1.StatefulSet
	daemonSet   *appsv1.DaemonSet
	revisions   []string
}

func newGroup(g int) group {
	k, ordinal := kindOf(g)
	gr := group{index: g, ns: nsName(g % namespaces), kind: k, ordinal: ordinal}
	app := fmt.Sprintf("svc-%05d", g)
	gr.name = app
	gr.labels = map[string]string{
		"app.kubernetes.io/name": app, "app.kubernetes.io/part-of": "shop", "app.kubernetes.io/version": "v2.14.3",
		"team": gr.ns, "tier": []string{"frontend", "backend", "worker"}[g%3],
	}
	switch k {
	case kindCloneSet:
		gr.revision = app + "-" + hash10(app)[:9]
	case kindDeployment:
		gr.stalled = ordinal%stalledDeploymentEvery == 1
	default:
		gr.stalled = ordinal%stalledSetEvery == 0
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

// seedGroup creates group g: its workload (and a Deployment's ReplicaSets, a StatefulSet's or
// DaemonSet's ControllerRevisions), its pods, and then the statuses the controllers would write
// on what the pods are.
func (s *seeder) seedGroup(ctx context.Context, g int) error {
	gr := newGroup(g)
	var err error
	switch gr.kind {
	case kindCloneSet:
		err = s.createCloneSet(ctx, &gr)
	case kindDeployment:
		err = s.createDeployment(ctx, &gr)
	case kindStatefulSet:
		err = s.createStatefulSet(ctx, &gr)
	case kindDaemonSet:
		err = s.createDaemonSet(ctx, &gr)
	}
	if err != nil {
		return fmt.Errorf("group %d owner: %w", g, err)
	}
	for k := range groupSize {
		if err := s.seedPod(ctx, gr, g*groupSize+k, k); err != nil {
			return fmt.Errorf("group %d pod %d: %w", g, k, err)
		}
	}
	switch gr.kind {
	case kindCloneSet:
		err = s.cloneSetStatus(ctx, gr)
	case kindDeployment:
		err = s.deploymentStatus(ctx, gr)
	case kindStatefulSet:
		err = s.statefulSetStatus(ctx, gr)
	case kindDaemonSet:
		err = s.daemonSetStatus(ctx, gr)
	}
	if err != nil {
		return fmt.Errorf("group %d status: %w", g, err)
	}
	return nil
}

// createCloneSet creates the group's CloneSet and records the owner reference its pods carry.
func (s *seeder) createCloneSet(ctx context.Context, gr *group) error {
	tmpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: gr.labels, Annotations: templateAnnotations()}, Spec: podSpec(*gr, "", appImage)}
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
