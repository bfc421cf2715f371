package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
)

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
	// The 8th pod of every 10th group: half of those groups are CloneSets, the others
	// Deployments.
	if i%stuckEvery != stuckOffset {
		return notStuck
	}
	switch gr.kind {
	case kindCloneSet:
		return stuckPreparingNormal
	case kindDeployment:
		if (i/stuckEvery)%2 == 0 {
			return stuckFinalizer
		}
		return stuckDeadNode
	}
	return notStuck
}

// seedPod creates pod i, the k-th of its group, with its status and events, and deletes it when
// it is meant to be stuck Terminating.
func (s *seeder) seedPod(ctx context.Context, gr group, i, k int) error {
	stuck := stuckOf(gr, i)
	node := nodeName(deadNodes + i%(nodes-deadNodes))
	if stuck == stuckDeadNode {
		node = nodeName(i % deadNodes)
	}
	created := s.base.Add(-time.Duration(i%7200) * time.Second)
	var p *corev1.Pod
	manager, state := managerKCM, podRunning
	if gr.kind == kindCloneSet {
		p = &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: gr.ns, Labels: map[string]string{}, Annotations: templateAnnotations(),
				OwnerReferences: []metav1.OwnerReference{gr.owner}},
			Spec: podSpec(gr, node, appImage),
		}
		for k, v := range gr.labels {
			p.Labels[k] = v
		}
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
		m := gr.members[k]
		p = memberPod(gr, m, node)
		state = m.state
		if state != podRunning {
			// The pods of a stalled rollout were created when it started.
			created = s.base.Add(-45 * time.Minute)
		}
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
	live.Status = podStatus(live, i, created, state)
	if err := retry(ctx, func() (err error) {
		live, err = pods.UpdateStatus(ctx, live, metav1.UpdateOptions{FieldManager: managerKubelet})
		return err
	}); err != nil {
		return fmt.Errorf("status: %w", err)
	}
	s.created.Add(1)
	if err := s.podEvents(ctx, live, i, state); err != nil {
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

// memberPod is a core workload's pod as its controller creates it from the template of its
// revision (GetPodFromTemplate, pkg/controller/controller_utils.go) and the scheduler places it on
// node, or on the node a DaemonSet pod is pinned to.
func memberPod(gr group, m member, node string) *corev1.Pod {
	t := m.template.DeepCopy()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: m.name, Namespace: gr.ns, Labels: t.Labels, Annotations: t.Annotations,
		OwnerReferences: []metav1.OwnerReference{m.owner}}, Spec: t.Spec}
	for k, v := range m.labels {
		p.Labels[k] = v
	}
	p.Spec.NodeName = node
	if m.node != "" {
		p.Spec.NodeName = m.node
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{
				{Key: metav1.ObjectNameField, Operator: corev1.NodeSelectorOpIn, Values: []string{m.node}}}}}}}}
	}
	if m.subdomain != "" {
		p.Spec.Hostname, p.Spec.Subdomain = m.name, m.subdomain
	}
	return p
}

func podIP(i int) string { return fmt.Sprintf("10.%d.%d.%d", 64+(i>>16)&63, (i>>8)&255, i&255) }

// podEvents writes the events a kubelet would have emitted about the pod, at the population's
// rates: Warnings (probe failures, back-offs, mounts) and Normal ones (pulls, starts); and, for a
// pod whose app cannot start, its Warnings about that.
func (s *seeder) podEvents(ctx context.Context, p *corev1.Pod, i int, state podState) error {
	type ev struct{ typ, reason, msg string }
	var evs []ev
	switch image := p.Spec.Containers[0].Image; state {
	case podImagePullBackOff:
		evs = append(evs, ev{corev1.EventTypeWarning, "Failed", fmt.Sprintf("Failed to pull image %q: %s", image, pullError(image))},
			ev{corev1.EventTypeWarning, "Failed", "Error: ErrImagePull"},
			ev{corev1.EventTypeWarning, "BackOff", fmt.Sprintf("Back-off pulling image %q", image)},
			ev{corev1.EventTypeWarning, "Failed", "Error: ImagePullBackOff"})
	case podCrashLoop:
		evs = append(evs, ev{corev1.EventTypeWarning, "BackOff", "Back-off restarting failed container app in pod " + p.Name + "_" + p.Namespace + "(" + string(p.UID) + ")"})
	}
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
