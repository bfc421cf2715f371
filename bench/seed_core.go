package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// The core workloads are written as kube-controller-manager v1.37.1 leaves them: the user (Helm)
// writes the spec, the controllers write the objects they own and every status, each through the
// status subresource. Citations are files of k8s.io/kubernetes@v1.37.1/pkg/controller.

// Releases of the shop's app a template runs. A stalled rollout moves to releaseBroken: for a
// Deployment its image is not in the registry, for a StatefulSet or DaemonSet it exits at start.
// releaseFixed is the template a user moved on to after seeing it.
const (
	appRepo        = "registry.example.com/shop/app"
	releaseCurrent = "v2.14.3"
	releaseBroken  = "v2.15.0"
	releaseFixed   = "v2.15.1"
	appImage       = appRepo + ":" + releaseCurrent
)

// Names the controllers write.
const (
	revisionAnnotation     = "deployment.kubernetes.io/revision"
	desiredReplicas        = "deployment.kubernetes.io/desired-replicas"
	maxReplicas            = "deployment.kubernetes.io/max-replicas"
	podTemplateHashLabel   = appsv1.DefaultDeploymentUniqueLabelKey
	revisionHashLabel      = appsv1.ControllerRevisionHashLabelKey
	templateGenerationKey  = "deprecated.daemonset.template.generation"
	templateGenerationPods = "pod-template-generation"
	historyHashLabel       = "controller.kubernetes.io/hash"
	managerHelm            = "helm"
	progressDeadline       = 600
)

// A stalled Deployment has stalledReplicas replicas, so that its two ReplicaSets hold a group's
// pods where the rolling update stops when the new ReplicaSet's pods never become available.
// With the default maxSurge and maxUnavailable of 25% (4 and 4 of 16; MaxSurge rounds up,
// MaxUnavailable down, deployment/util/deployment_util.go), reconcileNewReplicaSet
// (deployment/rolling.go) scales the new ReplicaSet up to 16+4 pods in all (NewRSNewReplicas), and
// reconcileOldReplicaSets scales the old one down while more than 16-4 pods are available: new
// 4, old 12, new 8, and there it stays, 12 available, Available=True.
const (
	stalledReplicas = 16
	stalledOld      = 12
	stalledNew      = groupSize - stalledOld
)

// podState is what the kubelet reports of a pod's app container.
type podState int

const (
	podRunning podState = iota
	// podImagePullBackOff: its image is not in the registry and the kubelet backs off pulling it.
	podImagePullBackOff
	// podCrashLoop: it exits at start and the kubelet backs off restarting it.
	podCrashLoop
)

// member is one pod of a core workload: the template of its revision, what its controller adds
// (name, owner, revision labels, a DaemonSet pod's node), and its state.
type member struct {
	name     string
	owner    metav1.OwnerReference
	template *corev1.PodTemplateSpec
	labels   map[string]string
	// node pins a DaemonSet's pod; "" spreads it as the scheduler would.
	node string
	// statefulSet names the pod's headless Service (initIdentity, statefulset/stateful_set_utils.go).
	subdomain string
	state     podState
}

// helmLabels and helmAnnotations are what Helm puts on the objects of a release.
func helmLabels(gr *group) map[string]string {
	l := gr.selector()
	l["app.kubernetes.io/managed-by"] = "Helm"
	l["helm.sh/chart"] = "shop-service-3.2.1"
	return l
}

func helmAnnotations(gr *group) map[string]string {
	return map[string]string{"meta.helm.sh/release-name": gr.name, "meta.helm.sh/release-namespace": gr.ns}
}

// template is the group's pod template at a release.
func (gr *group) template(release string) *corev1.PodTemplateSpec {
	labels := make(map[string]string, len(gr.labels))
	for k, v := range gr.labels {
		labels[k] = v
	}
	labels["app.kubernetes.io/version"] = release
	return &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: templateAnnotations()},
		Spec: podSpec(*gr, "", appRepo+":"+release)}
}

func controllerRef(kind string, m *metav1.ObjectMeta) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "apps/v1", Kind: kind, Name: m.Name, UID: m.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
}

// withLabel is labels plus one.
func withLabel(labels map[string]string, k, v string) map[string]string {
	out := make(map[string]string, len(labels)+1)
	for lk, lv := range labels {
		out[lk] = lv
	}
	out[k] = v
	return out
}

// write runs one API write with retries and counts it. An object an earlier attempt created
// (AlreadyExists) is read back with get.
func write[T any](ctx context.Context, s *seeder, do func() (*T, error), get func() (*T, error)) (*T, error) {
	var out *T
	err := retry(ctx, func() error {
		o, err := do()
		if err == nil {
			out = o
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	s.created.Add(1)
	if out == nil && get != nil {
		return get()
	}
	return out, nil
}

// workloadAPI is what the seeder uses of a typed client of one kind of apps workload.
type workloadAPI[T any] interface {
	Create(context.Context, *T, metav1.CreateOptions) (*T, error)
	Update(context.Context, *T, metav1.UpdateOptions) (*T, error)
	UpdateStatus(context.Context, *T, metav1.UpdateOptions) (*T, error)
	Get(context.Context, string, metav1.GetOptions) (*T, error)
}

// rollOut creates obj at the template of releases[0] and moves its template to each later
// release in turn (setTemplate), the user's writes; after each, revision does what the controller
// does about the template and returns the object as it left it.
func rollOut[T any](ctx context.Context, s *seeder, api workloadAPI[T], name string, obj *T, releases []string,
	setTemplate func(*T, string), revision func(n int, obj *T) (*T, error)) (*T, error) {
	obj, err := write(ctx, s, func() (*T, error) { return api.Create(ctx, obj, metav1.CreateOptions{FieldManager: managerHelm}) },
		func() (*T, error) { return api.Get(ctx, name, metav1.GetOptions{}) })
	if err != nil {
		return nil, err
	}
	for n, release := range releases {
		if n > 0 {
			setTemplate(obj, release)
			if obj, err = write(ctx, s, func() (*T, error) { return api.Update(ctx, obj, metav1.UpdateOptions{FieldManager: managerHelm}) }, nil); err != nil {
				return nil, fmt.Errorf("move %s to %s: %w", name, release, err)
			}
		}
		if obj, err = revision(n, obj); err != nil {
			return nil, err
		}
	}
	return obj, nil
}

// writeStatus writes obj's status as kube-controller-manager.
func writeStatus[T any](ctx context.Context, s *seeder, api workloadAPI[T], obj *T) error {
	_, err := write(ctx, s, func() (*T, error) { return api.UpdateStatus(ctx, obj, metav1.UpdateOptions{FieldManager: managerKCM}) }, nil)
	return err
}

// createDeployment creates the group's Deployment at revision 1 (and, when stalled, moves its
// template to revision 2), each revision recorded in the controller's annotation, and the
// ReplicaSet of each revision as the controller creates it (getNewReplicaSet,
// deployment/sync.go): the template with its pod-template-hash label added to labels and
// selector, owned by the Deployment, the Deployment's annotations copied with the revision,
// desired-replicas and max-replicas (SetNewReplicaSetAnnotations, deployment/util).
func (s *seeder) createDeployment(ctx context.Context, gr *group) error {
	api := s.kube.AppsV1().Deployments(gr.ns)
	releases, replicas := []string{releaseCurrent}, int32(groupSize)
	if gr.stalled {
		releases, replicas = append(releases, releaseBroken), stalledReplicas
	}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: gr.name, Namespace: gr.ns, Labels: helmLabels(gr), Annotations: helmAnnotations(gr)},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(replicas), Selector: &metav1.LabelSelector{MatchLabels: gr.selector()},
			Template: *gr.template(releases[0]), RevisionHistoryLimit: ptr.To[int32](10), ProgressDeadlineSeconds: ptr.To[int32](progressDeadline),
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
				MaxUnavailable: ptr.To(intstr.FromString("25%")), MaxSurge: ptr.To(intstr.FromString("25%"))}}},
	}
	surge := (replicas + 3) / 4 // 25%, rounded up
	sizes := []int32{groupSize}
	if gr.stalled {
		sizes = []int32{stalledOld, stalledNew}
	}
	var rss []*appsv1.ReplicaSet
	rsAPI := s.kube.AppsV1().ReplicaSets(gr.ns)
	d, err := rollOut(ctx, s, api, gr.name, d, releases, func(d *appsv1.Deployment, release string) { d.Spec.Template = *gr.template(release) },
		func(n int, d *appsv1.Deployment) (*appsv1.Deployment, error) {
			// The controller records the revision through the status subresource, which keeps
			// annotations and, unlike an update, does not bump the generation (getNewReplicaSet,
			// and deploymentStatusStrategy in pkg/registry/apps/deployment/strategy.go).
			rev := strconv.Itoa(n + 1)
			d.Annotations[revisionAnnotation] = rev
			d, err := write(ctx, s, func() (*appsv1.Deployment, error) {
				return api.UpdateStatus(ctx, d, metav1.UpdateOptions{FieldManager: managerKCM})
			}, nil)
			if err != nil {
				return nil, fmt.Errorf("deployment revision: %w", err)
			}
			tmpl := gr.template(releases[n])
			hash := hash10(gr.name + "/" + releases[n])
			tmpl.Labels = withLabel(tmpl.Labels, podTemplateHashLabel, hash)
			annotations := helmAnnotations(gr)
			annotations[revisionAnnotation] = rev
			annotations[desiredReplicas] = strconv.Itoa(int(replicas))
			annotations[maxReplicas] = strconv.Itoa(int(replicas + surge))
			rs := &appsv1.ReplicaSet{
				ObjectMeta: metav1.ObjectMeta{Name: gr.name + "-" + hash, Namespace: gr.ns, Labels: tmpl.Labels, Annotations: annotations,
					OwnerReferences: []metav1.OwnerReference{controllerRef("Deployment", &d.ObjectMeta)}},
				Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To(sizes[n]), Template: *tmpl,
					Selector: &metav1.LabelSelector{MatchLabels: withLabel(gr.selector(), podTemplateHashLabel, hash)}},
			}
			rs, err = write(ctx, s, func() (*appsv1.ReplicaSet, error) {
				return rsAPI.Create(ctx, rs, metav1.CreateOptions{FieldManager: managerKCM})
			}, func() (*appsv1.ReplicaSet, error) { return rsAPI.Get(ctx, rs.Name, metav1.GetOptions{}) })
			if err != nil {
				return nil, fmt.Errorf("replicaset: %w", err)
			}
			rss = append(rss, rs)
			return d, nil
		})
	if err != nil {
		return err
	}
	gr.deployment, gr.replicaSets = d, rss
	// The old ReplicaSet's pods first, as they were created first.
	for k := range groupSize {
		n, state := 0, podRunning
		if k >= int(sizes[0]) {
			n, state = 1, podImagePullBackOff
		}
		rs := rss[n]
		gr.members[k] = member{name: rs.Name + "-" + hash10(fmt.Sprintf("%s-%d", rs.Name, k))[:5], owner: controllerRef("ReplicaSet", &rs.ObjectMeta),
			template: &rs.Spec.Template, state: state}
	}
	return nil
}

// counts is what a controller counts of its pods: active ones (not being deleted), Ready ones
// among them, and those being deleted. minReadySeconds is 0 here, so Ready is available.
type counts struct{ active, ready, terminating int32 }

// count counts the group's members that match.
func (gr *group) count(match func(m *member) bool) counts {
	var c counts
	for k := range gr.members {
		m := &gr.members[k]
		if !match(m) {
			continue
		}
		if stuck := stuckOf(*gr, gr.index*groupSize+k); stuck == stuckFinalizer || stuck == stuckDeadNode {
			c.terminating++
			continue
		}
		c.active++
		if m.state == podRunning {
			c.ready++
		}
	}
	return c
}

// deploymentStatus writes each ReplicaSet's status (calculateStatus,
// replicaset/replica_set_utils.go: replicas are the active pods; terminatingReplicas, on by
// default since 1.35) and then the Deployment's (calculateStatus, deployment/sync.go, with the
// Progressing condition of syncRolloutStatus, deployment/progress.go): a stalled one timed out
// progressing (ProgressDeadlineExceeded) half an hour ago, its rollout having started
// progressDeadline before that.
func (s *seeder) deploymentStatus(ctx context.Context, gr group) error {
	d := gr.deployment
	var total counts
	var specTotal int32
	for _, rs := range gr.replicaSets {
		uid := rs.UID
		c := gr.count(func(m *member) bool { return m.owner.UID == uid })
		rs.Status = appsv1.ReplicaSetStatus{Replicas: c.active, FullyLabeledReplicas: c.active, ReadyReplicas: c.ready, AvailableReplicas: c.ready,
			TerminatingReplicas: ptr.To(c.terminating), ObservedGeneration: rs.Generation}
		if err := writeStatus(ctx, s, s.kube.AppsV1().ReplicaSets(gr.ns), rs); err != nil {
			return fmt.Errorf("replicaset %s status: %w", rs.Name, err)
		}
		total.active, total.ready, total.terminating = total.active+c.active, total.ready+c.ready, total.terminating+c.terminating
		specTotal += *rs.Spec.Replicas
	}
	newRS := gr.replicaSets[len(gr.replicaSets)-1]
	updated := gr.count(func(m *member) bool { return m.owner.UID == newRS.UID }).active
	replicas := *d.Spec.Replicas
	maxUnavailable := replicas / 4 // 25%, rounded down
	created := metav1.NewTime(s.base.Add(-48 * time.Hour))
	available := appsv1.DeploymentCondition{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable",
		Message: "Deployment has minimum availability.", LastUpdateTime: created, LastTransitionTime: created}
	if total.ready < replicas-maxUnavailable {
		available.Status, available.Reason, available.Message = corev1.ConditionFalse, "MinimumReplicasUnavailable", "Deployment does not have minimum availability."
	}
	progressing := appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable",
		Message: fmt.Sprintf("ReplicaSet %q has successfully progressed.", newRS.Name), LastUpdateTime: created, LastTransitionTime: created}
	if gr.stalled {
		timedOut := metav1.NewTime(s.base.Add(-30 * time.Minute))
		progressing.Status, progressing.Reason = corev1.ConditionFalse, "ProgressDeadlineExceeded"
		progressing.Message = fmt.Sprintf("ReplicaSet %q has timed out progressing.", newRS.Name)
		progressing.LastUpdateTime, progressing.LastTransitionTime = timedOut, timedOut
	}
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: total.active, UpdatedReplicas: updated,
		ReadyReplicas: total.ready, AvailableReplicas: total.ready, UnavailableReplicas: max(0, specTotal-total.ready),
		TerminatingReplicas: ptr.To(total.terminating), Conditions: []appsv1.DeploymentCondition{available, progressing}}
	return writeStatus(ctx, s, s.kube.AppsV1().Deployments(gr.ns), d)
}

// revisionData is a ControllerRevision's data as the StatefulSet and DaemonSet controllers store
// it: a patch that replaces the template (getPatch, statefulset/stateful_set_utils.go and
// daemon/update.go).
func revisionData(tmpl *corev1.PodTemplateSpec) (runtime.RawExtension, error) {
	t, err := runtime.DefaultUnstructuredConverter.ToUnstructured(tmpl)
	if err != nil {
		return runtime.RawExtension{}, err
	}
	t["$patch"] = "replace"
	raw, err := json.Marshal(map[string]any{"spec": map[string]any{"template": t}})
	return runtime.RawExtension{Raw: raw}, err
}

// createRevision creates the ControllerRevision of the workload (kind, m) for release, the n-th
// template, with the template's labels (NewControllerRevision, controller/history/controller_history.go:
// named after the workload and the hash, with the hash label, owned by the workload); the
// DaemonSet controller adds its unique label (snapshot, daemon/update.go). It returns the hash.
func (s *seeder) createRevision(ctx context.Context, gr *group, kind string, m *metav1.ObjectMeta, release string, n int,
	tmpl *corev1.PodTemplateSpec) (string, error) {
	hash := hash10(gr.name + "/" + release)[:9]
	labels := tmpl.Labels
	if kind == "DaemonSet" {
		labels = withLabel(labels, revisionHashLabel, hash)
	}
	data, err := revisionData(tmpl)
	if err != nil {
		return "", fmt.Errorf("revision %s data: %w", release, err)
	}
	cr := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Name: gr.name + "-" + hash, Namespace: gr.ns, Labels: withLabel(labels, historyHashLabel, hash),
			OwnerReferences: []metav1.OwnerReference{controllerRef(kind, m)}},
		Data: data, Revision: int64(n + 1),
	}
	api := s.kube.AppsV1().ControllerRevisions(gr.ns)
	_, err = write(ctx, s, func() (*appsv1.ControllerRevision, error) {
		return api.Create(ctx, cr, metav1.CreateOptions{FieldManager: managerKCM})
	}, nil)
	return hash, err
}

// setMember is the revision (its index among the workload's) and state of pod k of a
// StatefulSet or DaemonSet: the last pod of a stalled one is on the second, crash-looping.
func (gr *group) setMember(k int) (int, podState) {
	if gr.stalled && k == groupSize-1 {
		return 1, podCrashLoop
	}
	return 0, podRunning
}

// createStatefulSet creates the group's OrderedReady, RollingUpdate StatefulSet, its template
// moved on once (to releaseBroken) when stalled and, for every other stalled one, once more (to
// releaseFixed), with a ControllerRevision per template. Its pods are name-0 to name-19, each
// labelled with its revision, name and ordinal (initIdentity and setPodRevision,
// statefulset/stateful_set_utils.go). Stalled, the controller deleted the highest ordinal and
// recreated it on releaseBroken, where it crash-loops; it waits for that pod to be Running and
// Ready before going on (processReplica, statefulset/stateful_set_control.go), so the others stay
// on revision 1 whatever the template says next: an update revision the crash-looping pod is
// on, or, after the fix, a third one no pod is on.
func (s *seeder) createStatefulSet(ctx context.Context, gr *group) error {
	api := s.kube.AppsV1().StatefulSets(gr.ns)
	releases := []string{releaseCurrent}
	if gr.stalled {
		releases = append(releases, releaseBroken)
		if gr.ordinal/stalledSetEvery%2 == 1 {
			releases = append(releases, releaseFixed)
		}
	}
	sts := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: gr.name, Namespace: gr.ns, Labels: helmLabels(gr), Annotations: helmAnnotations(gr)},
		Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](groupSize), Selector: &metav1.LabelSelector{MatchLabels: gr.selector()},
			Template: *gr.template(releases[0]), ServiceName: gr.name, PodManagementPolicy: appsv1.OrderedReadyPodManagement,
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](0)}},
			RevisionHistoryLimit: ptr.To[int32](10)},
	}
	var revisions []string
	var templates []*corev1.PodTemplateSpec
	sts, err := rollOut(ctx, s, api, gr.name, sts, releases, func(sts *appsv1.StatefulSet, release string) { sts.Spec.Template = *gr.template(release) },
		func(n int, sts *appsv1.StatefulSet) (*appsv1.StatefulSet, error) {
			tmpl := gr.template(releases[n])
			hash, err := s.createRevision(ctx, gr, "StatefulSet", &sts.ObjectMeta, releases[n], n, tmpl)
			if err != nil {
				return nil, err
			}
			revisions, templates = append(revisions, gr.name+"-"+hash), append(templates, tmpl)
			return sts, nil
		})
	if err != nil {
		return err
	}
	owner := controllerRef("StatefulSet", &sts.ObjectMeta)
	gr.statefulSet, gr.revisions = sts, revisions
	for k := range groupSize {
		n, state := gr.setMember(k)
		name := gr.name + "-" + strconv.Itoa(k)
		gr.members[k] = member{name: name, owner: owner, template: templates[n], state: state, subdomain: sts.Spec.ServiceName,
			labels: map[string]string{revisionHashLabel: revisions[n], appsv1.StatefulSetPodNameLabel: name, appsv1.PodIndexLabel: strconv.Itoa(k)}}
	}
	return nil
}

// statefulSetStatus writes the status the controller computes from the pods (updateStatus and
// computeReplicaStatus, statefulset/stateful_set_control.go): currentRevision stays revision 1
// until every pod is updated.
func (s *seeder) statefulSetStatus(ctx context.Context, gr group) error {
	sts := gr.statefulSet
	update := gr.revisions[len(gr.revisions)-1]
	all := gr.count(func(*member) bool { return true })
	onRev := func(rev string) int32 {
		return gr.count(func(m *member) bool { return m.labels[revisionHashLabel] == rev }).active
	}
	sts.Status = appsv1.StatefulSetStatus{ObservedGeneration: sts.Generation, Replicas: all.active, ReadyReplicas: all.ready,
		AvailableReplicas: all.ready, CurrentReplicas: onRev(gr.revisions[0]), UpdatedReplicas: onRev(update),
		CurrentRevision: gr.revisions[0], UpdateRevision: update, CollisionCount: ptr.To[int32](0)}
	if sts.Status.UpdatedReplicas == sts.Status.Replicas {
		sts.Status.CurrentRevision, sts.Status.CurrentReplicas = update, sts.Status.UpdatedReplicas
	}
	return writeStatus(ctx, s, s.kube.AppsV1().StatefulSets(gr.ns), sts)
}

// poolOf is the node pool a DaemonSet runs on: pools 1 and up, pool 0 holding the dead nodes.
func poolOf(ordinal int) int { return 1 + ordinal%(nodes/groupSize-1) }

// createDaemonSet creates the group's DaemonSet on one node pool (nodeSelector), RollingUpdate
// with maxUnavailable 1, its template moved on to releaseBroken when stalled, with a
// ControllerRevision per template. The apiserver counts the template's generation in the
// deprecated.daemonset.template.generation annotation. Its pods, one per node of the pool, carry
// the revision's hash and generation (CreatePodTemplate, daemon/util/daemonset_util.go), the
// controller's tolerations (AddOrUpdateDaemonPodTolerations) and an affinity to their node
// (ReplaceDaemonSetPodNodeNameNodeAffinity). Stalled, the controller replaced the last node's pod
// with one of the new revision, which crash-loops: with it unavailable maxUnavailable is used up
// and the update goes no further (rollingUpdate, daemon/update.go).
func (s *seeder) createDaemonSet(ctx context.Context, gr *group) error {
	api := s.kube.AppsV1().DaemonSets(gr.ns)
	pool := poolOf(gr.ordinal)
	releases := []string{releaseCurrent}
	if gr.stalled {
		releases = append(releases, releaseBroken)
	}
	dsTemplate := func(release string) *corev1.PodTemplateSpec {
		t := gr.template(release)
		t.Spec.NodeSelector = map[string]string{poolLabel: poolName(pool)}
		t.Spec.Tolerations, t.Spec.TopologySpreadConstraints = nil, nil
		return t
	}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: gr.name, Namespace: gr.ns, Labels: helmLabels(gr), Annotations: helmAnnotations(gr)},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: gr.selector()}, Template: *dsTemplate(releases[0]),
			UpdateStrategy: appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: ptr.To(intstr.FromInt32(1)), MaxSurge: ptr.To(intstr.FromInt32(0))}},
			RevisionHistoryLimit: ptr.To[int32](10)},
	}
	var templates []*corev1.PodTemplateSpec
	var hashes, generations []string
	ds, err := rollOut(ctx, s, api, gr.name, ds, releases, func(ds *appsv1.DaemonSet, release string) { ds.Spec.Template = *dsTemplate(release) },
		func(n int, ds *appsv1.DaemonSet) (*appsv1.DaemonSet, error) {
			tmpl := dsTemplate(releases[n])
			hash, err := s.createRevision(ctx, gr, "DaemonSet", &ds.ObjectMeta, releases[n], n, tmpl)
			if err != nil {
				return nil, err
			}
			// The pods' template: the controller's tolerations, generation and hash.
			gen := ds.Annotations[templateGenerationKey]
			tmpl.Spec.Tolerations = daemonTolerations()
			tmpl.Labels = withLabel(withLabel(tmpl.Labels, templateGenerationPods, gen), revisionHashLabel, hash)
			templates, hashes, generations = append(templates, tmpl), append(hashes, hash), append(generations, gen)
			return ds, nil
		})
	if err != nil {
		return err
	}
	owner := controllerRef("DaemonSet", &ds.ObjectMeta)
	gr.daemonSet, gr.revisions = ds, hashes
	for k := range groupSize {
		n, state := gr.setMember(k)
		gr.members[k] = member{name: gr.name + "-" + hash10(fmt.Sprintf("%s-%d-%s", gr.name, k, generations[n]))[:5], owner: owner,
			template: templates[n], state: state, node: nodeName(pool*groupSize + k)}
	}
	return nil
}

func poolName(pool int) string { return fmt.Sprintf("pool-%02d", pool) }

// daemonTolerations are those AddOrUpdateDaemonPodTolerations (daemon/util/daemonset_util.go)
// adds to every DaemonSet pod that does not use the host's network.
func daemonTolerations() []corev1.Toleration {
	t := func(key string, effect corev1.TaintEffect) corev1.Toleration {
		return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: effect}
	}
	return []corev1.Toleration{t(corev1.TaintNodeNotReady, corev1.TaintEffectNoExecute), t(corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute),
		t(corev1.TaintNodeDiskPressure, corev1.TaintEffectNoSchedule), t(corev1.TaintNodeMemoryPressure, corev1.TaintEffectNoSchedule),
		t(corev1.TaintNodePIDPressure, corev1.TaintEffectNoSchedule), t(corev1.TaintNodeUnschedulable, corev1.TaintEffectNoSchedule)}
}

// daemonSetStatus writes the status the controller computes node by node (updateDaemonSetStatus,
// daemon/daemon_controller.go): every node of the pool should run a pod and runs one; a pod is
// updated when it carries the DaemonSet's template generation or hash (IsPodUpdated, daemon/util).
func (s *seeder) daemonSetStatus(ctx context.Context, gr group) error {
	ds := gr.daemonSet
	all := gr.count(func(*member) bool { return true })
	update := gr.revisions[len(gr.revisions)-1]
	updated := gr.count(func(m *member) bool { return m.template.Labels[revisionHashLabel] == update })
	ds.Status = appsv1.DaemonSetStatus{ObservedGeneration: ds.Generation, DesiredNumberScheduled: groupSize, CurrentNumberScheduled: all.active,
		NumberReady: all.ready, NumberAvailable: all.ready, NumberUnavailable: groupSize - all.ready, UpdatedNumberScheduled: updated.active,
		CollisionCount: ptr.To[int32](0)}
	return writeStatus(ctx, s, s.kube.AppsV1().DaemonSets(gr.ns), ds)
}
