package resizepolicy

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/checktest"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// Presets over checktest: in-place workloads and the pods the kruise CloneSet controller creates.

const (
	oldRev = "web-6b8d7f9c4"
	newRev = "web-7c9f5d8b6"
)

// The apiserver's real message for a pod update that drops resizePolicy (v1.37.1), as kruise quotes
// it in FailedUpdatePodInPlace; the diff after the first line is never shown in evidence.
const forbidden = "Pod \"%s\" is invalid: spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`," +

	"`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations)," +
	"`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)\n" +
	"@@ -119,12 +119,7 @@\n   \"Env\": [{\"Name\": \"SECRET_TOKEN\", \"Value\": \"s3cr3t\"}],\n-   \"ResizePolicy\": [\n+   \"ResizePolicy\": null,"

// appContainer is the workload's container: requests cpu and memory, like most production containers.
func appContainer(image string, pol []corev1.ContainerResizePolicy) corev1.Container {
	return corev1.Container{Name: "app", Image: image, ResizePolicy: pol, Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")}}}
}

// inPlaceWorkload is a CloneSet (or Advanced StatefulSet) "web" updating pods by updateType, in
// the middle of a rollout from oldRev to newRev.
func inPlaceWorkload(t *testing.T, kind, updateType string, tpl []corev1.Container) *kruise.Workload {
	return checktest.Workload(t, kind, "shop", "web", checktest.Generation(2), checktest.CreatedAgo(48*time.Hour),
		checktest.Template(tpl...), checktest.UpdateStrategy(updateType),
		checktest.Status(map[string]any{"observedGeneration": int64(2), "replicas": int64(1), "updateRevision": newRev,
			"currentRevision": oldRev, "labelSelector": "app=web"}))
}

// workloadPod is a pod the kruise CloneSet controller created: controller reference with UID,
// revision and instance labels, lifecycle state, the InPlaceUpdateReady readiness gate.
func workloadPod(w *kruise.Workload, name, revision string, age time.Duration, cs ...corev1.Container) *corev1.Pod {
	p := checktest.Pod(w.Namespace, name, checktest.CreatedAgo(age), checktest.OwnedByWorkload(w), checktest.OnNode("node-1"),
		checktest.Containers(cs...), checktest.Labels(map[string]string{"app": "web", "controller-revision-hash": revision,
			"apps.kruise.io/cloneset-instance-id": strings.TrimPrefix(name, "web-"), kruise.LabelLifecycleState: kruise.StateNormal}))
	p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: kruise.ConditionInPlaceReady}}
	return p
}

// startedInPlace marks the pod the way kruise does before its in-place update PUT.
func startedInPlace(p *corev1.Pod, ago time.Duration) *corev1.Pod {
	checktest.Conditions(corev1.PodCondition{Type: kruise.ConditionInPlaceReady, Status: corev1.ConditionFalse,
		Reason: "StartInPlaceUpdate", LastTransitionTime: metav1.NewTime(checktest.Ago(ago))})(p)
	return p
}

// failedInPlace is kruise's event for a rejected in-place update, on the workload.
func failedInPlace(w *kruise.Workload, pod string, ago time.Duration, count int32) *corev1.Event {
	return checktest.Event(checktest.RefTo(w.APIVersion, w.Kind, w), corev1.EventTypeWarning, "FailedUpdatePodInPlace",
		fmt.Sprintf("failed to update pod %s in-place(revision %s): "+forbidden, pod, newRev, pod),
		checktest.From("cloneset-controller"), checktest.Count(count), checktest.Seen(ago, time.Minute))
}

// scene is a case's cluster: apiserver version, kruise-manager version ("" for none) and objects.
type scene struct {
	server     string
	manager    string
	workloads  []*kruise.Workload
	pods       []*corev1.Pod
	events     []*corev1.Event
	sidecars   []*kruise.SidecarSet
	revisions  []*appsv1.ControllerRevision
	metaOnly   bool
	unreadSets bool
}

// snapshot builds what the collector would: every pod metadata-only, the candidates in full.
func (c scene) snapshot() *snapshot.Snapshot {
	cl := checktest.Cluster{ServerVersion: c.server, Workloads: c.workloads, Events: c.events, SidecarSets: c.sidecars}
	if c.manager != "" {
		cl.Deployments = []*appsv1.Deployment{checktest.KruiseManager(c.manager, 1)}
	}
	if c.unreadSets {
		cl.Unread = map[snapshot.Input]error{snapshot.InputSidecarSets: fmt.Errorf("forbidden: list apps.kruise.io/sidecarsets")}
	}
	if c.metaOnly {
		cl.MetaOnlyPods = c.pods
	} else {
		cl.Pods = c.pods
	}
	s := cl.Snapshot()
	s.Revisions = c.revisions
	return s
}

// controllerRevision is the ControllerRevision kruise records for a workload's template (CloneSet
// revision getPatch, Advanced StatefulSet getPatch in v1.9.0): owned by the workload, labelled
// with the template's labels, the template stored as a patch that replaces spec.template.
// metaOnly drops the data, as a metadata-only read does.
func controllerRevision(t *testing.T, w *kruise.Workload, name string, ago time.Duration, metaOnly bool, cs ...corev1.Container) *appsv1.ControllerRevision {
	t.Helper()
	tpl := map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "web"}},
		"spec": map[string]any{"containers": checktest.ToUnstructured(cs...)}, "$patch": "replace"}
	data, err := json.Marshal(map[string]any{"spec": map[string]any{"template": tpl}})
	if err != nil {
		t.Fatal(err)
	}
	ctrl := true
	cr := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.Namespace, Name: name, CreationTimestamp: metav1.NewTime(checktest.Ago(ago)),
			Labels:          map[string]string{"app": "web"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: w.APIVersion, Kind: w.Kind, Name: w.Name, UID: w.UID, Controller: &ctrl}}},
		Data:     runtime.RawExtension{Raw: data},
		Revision: 1,
	}
	if metaOnly {
		cr.Data = runtime.RawExtension{}
	}
	return cr
}
