package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/testcluster"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// The resize-policy-drift check against real apiservers. No kruise-manager runs: the test writes
// what it would have written (CloneSets and their status, pods with kruise's labels, owner
// references and readiness gates, the InPlaceUpdateReady condition, the FailedUpdatePodInPlace
// event), and performs kruise's in-place update the way kruise < v1.7.0 does: a PUT of the whole
// pod without containers[].resizePolicy, which its Kubernetes 0.26 types cannot hold. Whether the
// apiserver rejects that PUT is the apiserver's own answer, and the event quotes its real error.

const (
	rzCheck = "resize-policy-drift"
	// rzSecretEnv is an env value that must never show up in a report.
	rzSecretEnv = "rz-do-not-print-4242"
	rzKwokNode  = "kwok-node-0"
)

var rzCloneSets = schema.GroupVersionResource{Group: "apps.kruise.io", Version: "v1alpha1", Resource: "clonesets"}

type rzEnv struct {
	c   *testcluster.Cluster
	cs  kubernetes.Interface
	dyn dynamic.Interface
	// kwok is true when a scheduler and kwok run the pods (they reach Running).
	kwok bool
}

// rzCloneSet is a CloneSet and the one pod its controller created.
type rzCloneSet struct {
	ns, name string
	uid      string
	rev1     string
	rev2     string
	pod      *corev1.Pod
}

// TestResizePolicyDrift runs on the default control plane (v1.37.1), which does not default
// resizePolicy and may not change it on a pod. A scheduler, kwok and the kube-controller-manager
// (the disruption controller sets PodDisruptionBudget status) run, so pods are Running and the
// eviction `fix` sends is judged for real.
func TestResizePolicyDrift(t *testing.T) {
	t.Parallel()
	pluginBinary(t)
	c := testcluster.Start(t, testcluster.Options{ControllerManager: true, Scheduler: true,
		Kwok: &testcluster.KwokOptions{ManageAllNodes: true}})
	c.InstallCRDs(t)
	e := &rzEnv{c: c, cs: c.Clientset(), dyn: c.Dynamic(), kwok: true}
	if _, err := e.cs.CoreV1().Nodes().Create(t.Context(), kwokNode(rzKwokNode), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create node: %v", err)
	}
	e.manager(t, "v1.6.3")

	// The pods were created while the control plane ran v1.32 with InPlacePodVerticalScaling on,
	// which stored resizePolicy NotRequired for the requested cpu and memory; the CloneSet
	// templates never set it. v1.37 keeps what was stored.
	stored := []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.NotRequired},
		{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.NotRequired}}

	var dropped report.Finding
	var web *rzCloneSet
	t.Run("kruise < v1.7.0 drops resizePolicy and v1.37 rejects the in-place update", func(t *testing.T) {
		web = e.cloneSet(t, e.namespace(t, "rz-drops"), "web", nil, stored)
		err := e.inPlaceUpdateV16(t, web)
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "pod updates may not change fields other than") {
			t.Fatalf("kruise v1.6 in-place update on v1.37: err = %v, want the apiserver's Forbidden", err)
		}
		e.failedInPlace(t, web, err)

		r, code := rzReport(t, pluginOn(c.Kubeconfig).scan(t, rzArgs(web.ns)...))
		if code != 2 {
			t.Errorf("scan exit = %d, want 2 (an error finding)", code)
		}
		dropped = rzFinding(t, r, web.pod.Name, "kruise-drops-resize-policy")
		rzEvidence(t, dropped,
			"apiserver v1.37.1 (from /version) does not default resizePolicy",
			"openkruise/kruise-manager:v1.6.3 (v1.6.3)",
			"container app: pod resizePolicy cpu=NotRequired,memory=NotRequired; template unset",
			"inferred: apiserver v1.37.1 does not default resizePolicy, so an update without the field changes every container that carries it: app",
			"event FailedUpdatePodInPlace on cloneset/web at ",
			fmt.Sprintf(`"failed to update pod %s in-place(revision %s): Pod \"%s\" is invalid: spec: Forbidden: pod updates may not change fields other than ..."; the apiserver's diff changes ResizePolicy`,
				web.pod.Name, web.rev2, web.pod.Name),
			"cloneset/web condition FailedUpdate",
			"pod condition InPlaceUpdateReady=False (reason StartInPlaceUpdate)",
			fmt.Sprintf("pod is on revision %s; cloneset/web is rolling out updateRevision %s", web.rev1, web.rev2),
		)
		if dropped.Severity != report.SeverityError || len(dropped.Fixes) != 1 || dropped.Fixes[0].Action != "evict-pod" {
			t.Errorf("severity %s, fixes %+v; want error with evict-pod", dropped.Severity, dropped.Fixes)
		}
		if !strings.Contains(dropped.RootCause.Message, "Upgrade kruise to >= v1.7.0") {
			t.Errorf("message does not say to upgrade kruise: %s", dropped.RootCause.Message)
		}
		if dropped.Owner == nil || dropped.Owner.Kind != "CloneSet" || dropped.Owner.UID != web.uid {
			t.Errorf("owner = %+v, want the CloneSet", dropped.Owner)
		}
	})

	t.Run("fix evicts the pod", func(t *testing.T) {
		if dropped.ID == "" {
			t.Skip("no finding to fix: the scan subtest failed")
		}
		// A single replica: only evicted when the action is named (the budget test covers the refusal).
		res := fixOne(t, c.Kubeconfig, 0, "applied", "-n", web.ns, "--min-age", "0s", "--yes", "--action", "evict-pod", dropped.ID)
		if res.Action != "evict-pod" || res.Object.UID != string(web.pod.UID) {
			t.Errorf("fix result = %+v", res)
		}
		eventually(t, time.Minute, "evicted pod "+web.pod.Name+" to be gone", func(ctx context.Context) (bool, error) {
			p, err := e.cs.CoreV1().Pods(web.ns).Get(ctx, web.pod.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			return err == nil && p.UID != web.pod.UID, err
		})
	})

	t.Run("a PodDisruptionBudget that forbids the eviction is reported", func(t *testing.T) {
		api := e.cloneSet(t, e.namespace(t, "rz-pdb"), "api", nil, stored)
		err := e.inPlaceUpdateV16(t, api)
		if !apierrors.IsInvalid(err) {
			t.Fatalf("kruise v1.6 in-place update: err = %v, want Invalid", err)
		}
		e.failedInPlace(t, api, err)
		e.pdb(t, api, 1)

		r, _ := rzReport(t, pluginOn(c.Kubeconfig).scan(t, rzArgs(api.ns)...))
		f := rzFinding(t, r, api.pod.Name, "kruise-drops-resize-policy")
		res := fixOne(t, c.Kubeconfig, 3, "refused", "-n", api.ns, "--min-age", "0s", "--yes", "--action", "evict-pod", f.ID)
		if !strings.Contains(res.Reason, "disruption budget") {
			t.Errorf("refusal reason %q does not name the disruption budget", res.Reason)
		}
		p, err := e.cs.CoreV1().Pods(api.ns).Get(t.Context(), api.pod.Name, metav1.GetOptions{})
		if err != nil || p.UID != api.pod.UID || p.DeletionTimestamp != nil {
			t.Errorf("guarded pod should be untouched: %v %+v", err, p.ObjectMeta)
		}
	})

	t.Run("a pod written after the saved report is refused, not evicted", func(t *testing.T) {
		jobs := e.cloneSet(t, e.namespace(t, "rz-changed"), "jobs", nil, stored)
		err := e.inPlaceUpdateV16(t, jobs)
		if !apierrors.IsInvalid(err) {
			t.Fatalf("kruise v1.6 in-place update: err = %v, want Invalid", err)
		}
		e.failedInPlace(t, jobs, err)
		r, _ := rzReport(t, pluginOn(c.Kubeconfig).scan(t, rzArgs(jobs.ns)...))
		rzFinding(t, r, jobs.pod.Name, "kruise-drops-resize-policy")
		saved, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		reportFile := filepath.Join(t.TempDir(), "report.json")
		if err := os.WriteFile(reportFile, saved, 0o600); err != nil {
			t.Fatal(err)
		}
		// Someone labels the pod between the scan and the fix.
		if _, err := e.cs.CoreV1().Pods(jobs.ns).Patch(t.Context(), jobs.pod.Name, types.MergePatchType,
			[]byte(`{"metadata":{"labels":{"triage":"in-progress"}}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		res := fixOne(t, c.Kubeconfig, 3, "refused", "--from-report", reportFile, "--yes", "--action", "evict-pod")
		if res.Action != "evict-pod" || !strings.Contains(res.Reason, "changed since the plan") {
			t.Errorf("fix result = %+v", res)
		}
		p, err := e.cs.CoreV1().Pods(jobs.ns).Get(t.Context(), jobs.pod.Name, metav1.GetOptions{})
		if err != nil || p.UID != jobs.pod.UID || p.DeletionTimestamp != nil {
			t.Errorf("changed pod should be untouched: %v %+v", err, p.ObjectMeta)
		}
	})

	t.Run("after upgrading kruise to v1.7.0 the same pods are fine", func(t *testing.T) {
		e.manager(t, "v1.7.0")
		r, code := rzReport(t, pluginOn(c.Kubeconfig).scan(t, rzArgs("rz-pdb")...))
		if code != 0 {
			t.Errorf("scan exit = %d, want 0", code)
		}
		for _, f := range r.Findings {
			t.Errorf("unexpected finding %s (%s): %s", f.RootCause.ID, f.Object.Name, strings.Join(f.RootCause.Evidence, "\n"))
		}
	})

	t.Run("pods a partition keeps on the old revision are judged against that revision", func(t *testing.T) {
		e.partitionedCloneSet(t)
	})
}

// TestResizePolicyDriftDefaultingAPIServer runs on the v1.32.2 apiserver with
// InPlacePodVerticalScaling on, which defaults resizePolicy on pods (not on templates) and
// re-defaults it on every pod update.
func TestResizePolicyDriftDefaultingAPIServer(t *testing.T) {
	t.Parallel()
	pluginBinary(t)
	tools, err := testcluster.ToolsDir()
	if err != nil {
		t.Fatal(err)
	}
	c := testcluster.Start(t, testcluster.Options{
		APIServerBinary: filepath.Join(tools, "v1.32.2", "kube-apiserver"),
		FeatureGates:    "InPlacePodVerticalScaling=true",
	})
	c.InstallCRDs(t)
	e := &rzEnv{c: c, cs: c.Clientset(), dyn: c.Dynamic()}
	e.manager(t, "v1.7.0")

	defaulted := []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.NotRequired},
		{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.NotRequired}}
	var web, pinned *rzCloneSet
	t.Run("the apiserver defaults resizePolicy on pods of a template without it", func(t *testing.T) {
		web = e.cloneSet(t, e.namespace(t, "rz-default"), "web", nil, nil)
		if got := web.pod.Spec.Containers[0].ResizePolicy; !reflect.DeepEqual(got, defaulted) {
			t.Fatalf("v1.32.2 stored resizePolicy %+v for a pod created without it, want %+v", got, defaulted)
		}
	})

	t.Run("kruise v1.7.0: benign-defaulting", func(t *testing.T) {
		r, code := rzReport(t, pluginOn(c.Kubeconfig).scan(t, rzArgs(web.ns)...))
		if code != 0 {
			t.Errorf("scan exit = %d, want 0 (info only)", code)
		}
		f := rzFinding(t, r, web.pod.Name, "benign-defaulting")
		rzEvidence(t, f,
			"apiserver v1.32.2 (from /version) defaults resizePolicy on pods when InPlacePodVerticalScaling is on",
			"InPlacePodVerticalScaling inferred on for apiserver v1.32.2",
			"container app: pod resizePolicy cpu=NotRequired,memory=NotRequired; template unset; defaulted cpu,memory=NotRequired",
			"kruise-manager v1.7.0 keeps resizePolicy on in-place updates (>= v1.7.0)",
		)
		if f.Severity != report.SeverityInfo || len(f.Fixes) != 0 {
			t.Errorf("severity %s, fixes %+v; want info without fixes", f.Severity, f.Fixes)
		}
	})

	// A CloneSet whose template asks memory to restart on resize; its pod was created while
	// kruise v1.7.0 ran, so it carries the template's policy plus the apiserver's cpu default.
	t.Run("a pod created from a template with resizePolicy keeps it, plus the defaults", func(t *testing.T) {
		tpl := []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer}}
		pinned = e.cloneSet(t, e.namespace(t, "rz-pinned"), "db", tpl, tpl)
		want := []corev1.ContainerResizePolicy{{ResourceName: corev1.ResourceMemory, RestartPolicy: corev1.RestartContainer},
			{ResourceName: corev1.ResourceCPU, RestartPolicy: corev1.NotRequired}}
		if got := pinned.pod.Spec.Containers[0].ResizePolicy; !reflect.DeepEqual(got, want) {
			t.Fatalf("stored resizePolicy %+v, want %+v", got, want)
		}
	})

	// kruise is rolled back to v1.6.3 (say, after a failed upgrade).
	e.manager(t, "v1.6.3")

	t.Run("kruise v1.6.3: a policy the apiserver does not re-default is rejected", func(t *testing.T) {
		if pinned == nil {
			t.Skip("no pinned CloneSet")
		}
		err := e.inPlaceUpdateV16(t, pinned)
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "pod updates may not change fields other than") {
			t.Fatalf("kruise v1.6 in-place update on v1.32: err = %v, want the apiserver's Forbidden", err)
		}
		e.failedInPlace(t, pinned, err)
		r, code := rzReport(t, pluginOn(c.Kubeconfig).scan(t, rzArgs(pinned.ns)...))
		if code != 2 {
			t.Errorf("scan exit = %d, want 2", code)
		}
		f := rzFinding(t, r, pinned.pod.Name, "kruise-drops-resize-policy")
		rzEvidence(t, f,
			"openkruise/kruise-manager:v1.6.3 (v1.6.3)",
			"container app: pod resizePolicy cpu=NotRequired,memory=RestartContainer; template memory=RestartContainer",
			"inferred: apiserver v1.32.2 re-defaults only NotRequired for requested cpu, then memory, so an update without the field changes these containers' lists: app",
			"event FailedUpdatePodInPlace on cloneset/db",
			"the apiserver's diff changes ResizePolicy",
			"pod condition InPlaceUpdateReady=False (reason StartInPlaceUpdate)",
		)
	})

	t.Run("kruise v1.6.3: a defaulted pod is re-defaulted by the apiserver, the update passes", func(t *testing.T) {
		if web == nil {
			t.Skip("no defaulted CloneSet")
		}
		if err := e.inPlaceUpdateV16(t, web); err != nil {
			t.Fatalf("kruise v1.6 in-place update of a defaulted pod on v1.32: %v", err)
		}
		p, err := e.cs.CoreV1().Pods(web.ns).Get(t.Context(), web.pod.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Spec.Containers[0]; got.Image != rzImage(2) || !reflect.DeepEqual(got.ResizePolicy, defaulted) {
			t.Fatalf("after the update: image %s resizePolicy %+v, want %s and the re-defaulted %+v", got.Image, got.ResizePolicy, rzImage(2), defaulted)
		}
		r, code := rzReport(t, pluginOn(c.Kubeconfig).scan(t, rzArgs(web.ns)...))
		if code != 0 {
			t.Errorf("scan exit = %d, want 0", code)
		}
		f := rzFinding(t, r, web.pod.Name, "benign-defaulting")
		rzEvidence(t, f, "kruise-manager v1.6.3 drops resizePolicy on in-place updates, but this apiserver re-defaults the same list, so they pass; upgrade kruise to >= v1.7.0 before the apiserver to >= v1.33")
	})
}

func rzImage(n int) string { return fmt.Sprintf("registry.example/web:%d.0", n) }

func (e *rzEnv) namespace(t *testing.T, name string) string {
	t.Helper()
	createNamespace(t, e.c, name)
	return name
}

// manager creates or upgrades the kruise-manager Deployment the way the Helm chart installs it.
func (e *rzEnv) manager(t *testing.T, version string) {
	t.Helper()
	ctx := t.Context()
	const ns, name = "kruise-system", "kruise-controller-manager"
	image := "openkruise/kruise-manager:" + version
	d, err := e.cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
	if err == nil {
		d.Spec.Template.Spec.Containers[0].Image = image
		if _, err := e.cs.AppsV1().Deployments(ns).Update(ctx, d, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("set kruise-manager image %s: %v", image, err)
		}
		return
	}
	if !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	if _, err := e.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	labels := map[string]string{"control-plane": "controller-manager"}
	replicas := int32(2)
	_, err = e.cs.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Image: image,
					Args: []string{"--enable-leader-election", "--leader-election-namespace=kruise-system", "--metrics-addr=:8080", "--health-probe-addr=:8000"}}}}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create kruise-manager: %v", err)
	}
}

// cloneSet creates an InPlaceIfPossible CloneSet whose template's container sets tplPolicy, and
// the pod its controller created with podPolicy (nil: as kruise v1.6 writes it, without the
// field, leaving the apiserver to default it). It returns after the pod runs, when kwok runs.
func (e *rzEnv) cloneSet(t *testing.T, ns, name string, tplPolicy, podPolicy []corev1.ContainerResizePolicy) *rzCloneSet {
	t.Helper()
	ctx := t.Context()
	hash := utilrand.String(9)
	s := &rzCloneSet{ns: ns, name: name, rev1: name + "-" + hash, rev2: name + "-" + utilrand.String(9)}
	tpl := rzPodSpec(rzImage(1), tplPolicy)
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{
			"replicas":       int64(1),
			"selector":       map[string]any{"matchLabels": map[string]any{"app": name}},
			"updateStrategy": map[string]any{"type": "InPlaceIfPossible"},
			"template":       map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": name}}, "spec": rzUnstructured(t, &tpl)},
		},
	}}
	created, err := e.dyn.Resource(rzCloneSets).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{FieldManager: "kubectl-client-side-apply"})
	if err != nil {
		t.Fatalf("create CloneSet: %v", err)
	}
	s.uid = string(created.GetUID())
	e.cloneSetStatus(t, s, 1, s.rev1, s.rev1, nil)

	id := utilrand.String(5)
	ctrl := true
	spec := rzPodSpec(rzImage(1), podPolicy)
	spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "InPlaceUpdateReady"}, {ConditionType: "KruisePodReady"}}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name + "-" + id, Namespace: ns,
			Labels: map[string]string{"app": name, "controller-revision-hash": s.rev1, "pod-template-hash": hash,
				"apps.kruise.io/cloneset-instance-id": id, "lifecycle.apps.kruise.io/state": "Normal"},
			Annotations: map[string]string{"lifecycle.apps.kruise.io/timestamp": time.Now().UTC().Format(time.RFC3339)},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: name,
				UID: created.GetUID(), Controller: &ctrl, BlockOwnerDeletion: &ctrl}},
		},
		Spec: spec,
	}
	if s.pod, err = e.cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{FieldManager: "kruise-manager"}); err != nil {
		t.Fatalf("create pod: %v", err)
	}
	if e.kwok {
		eventually(t, time.Minute, "pod "+s.pod.Name+" running", func(ctx context.Context) (bool, error) {
			p, err := e.cs.CoreV1().Pods(ns).Get(ctx, s.pod.Name, metav1.GetOptions{})
			return err == nil && p.Status.Phase == corev1.PodRunning, err
		})
	}
	// kruise marks the pod ready for in-place updates and its pod-readiness controller sets KruisePodReady.
	s.pod = e.podConditions(t, s, corev1.PodCondition{Type: "InPlaceUpdateReady", Status: corev1.ConditionTrue},
		corev1.PodCondition{Type: "KruisePodReady", Status: corev1.ConditionTrue})
	return s
}

// rzPodSpec is the workload's pod spec: one container requesting cpu and memory, placed on kwok nodes.
func rzPodSpec(image string, pol []corev1.ContainerResizePolicy) corev1.PodSpec {
	return corev1.PodSpec{
		NodeSelector: map[string]string{"type": "kwok"},
		Tolerations:  []corev1.Toleration{{Key: "kwok.x-k8s.io/node", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
		Containers: []corev1.Container{{
			Name: "app", Image: image, ResizePolicy: pol,
			Env: []corev1.EnvVar{{Name: "API_TOKEN", Value: rzSecretEnv}},
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")}},
		}},
	}
}

func rzUnstructured(t *testing.T, obj any) map[string]any {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// cloneSetStatus writes the CloneSet status through the status subresource, as its controller does.
func (e *rzEnv) cloneSetStatus(t *testing.T, s *rzCloneSet, generation int64, current, update string, conditions []any) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		u, err := e.dyn.Resource(rzCloneSets).Namespace(s.ns).Get(t.Context(), s.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		updated := int64(1)
		if current != update {
			updated = 0
		}
		status := map[string]any{"observedGeneration": generation, "replicas": int64(1), "readyReplicas": int64(1),
			"availableReplicas": int64(1), "updatedReplicas": updated, "updatedReadyReplicas": updated,
			"currentRevision": current, "updateRevision": update, "collisionCount": int64(0), "labelSelector": "app=" + s.name}
		if conditions != nil {
			status["conditions"] = conditions
		}
		u.Object["status"] = status
		_, err = e.dyn.Resource(rzCloneSets).Namespace(s.ns).UpdateStatus(t.Context(), u, metav1.UpdateOptions{FieldManager: "kruise-manager"})
		return err
	})
	if err != nil {
		t.Fatalf("update CloneSet status: %v", err)
	}
}

// podConditions sets conditions on the pod's status, keeping the others (kwok's).
func (e *rzEnv) podConditions(t *testing.T, s *rzCloneSet, conds ...corev1.PodCondition) *corev1.Pod {
	t.Helper()
	var out *corev1.Pod
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, err := e.cs.CoreV1().Pods(s.ns).Get(t.Context(), s.pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, c := range conds {
			c.LastTransitionTime = metav1.Now()
			replaced := false
			for i := range p.Status.Conditions {
				if p.Status.Conditions[i].Type == c.Type {
					p.Status.Conditions[i], replaced = c, true
				}
			}
			if !replaced {
				p.Status.Conditions = append(p.Status.Conditions, c)
			}
		}
		out, err = e.cs.CoreV1().Pods(s.ns).UpdateStatus(t.Context(), p, metav1.UpdateOptions{FieldManager: "kruise-manager"})
		return err
	})
	if err != nil {
		t.Fatalf("update pod conditions: %v", err)
	}
	return out
}

// inPlaceUpdateV16 changes the template's image (a new revision), then updates the pod in place
// as kruise-manager < v1.7.0 does: InPlaceUpdateReady=False first, then a PUT of the whole pod
// with the new image, revision label and in-place state annotation, read into Kubernetes 0.26
// types that have no resizePolicy. It returns the apiserver's answer to the PUT.
func (e *rzEnv) inPlaceUpdateV16(t *testing.T, s *rzCloneSet) error {
	t.Helper()
	ctx := t.Context()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		u, err := e.dyn.Resource(rzCloneSets).Namespace(s.ns).Get(ctx, s.name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cs, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
		cs[0].(map[string]any)["image"] = rzImage(2)
		if err := unstructured.SetNestedSlice(u.Object, cs, "spec", "template", "spec", "containers"); err != nil {
			return err
		}
		_, err = e.dyn.Resource(rzCloneSets).Namespace(s.ns).Update(ctx, u, metav1.UpdateOptions{FieldManager: "kubectl-edit"})
		return err
	})
	if err != nil {
		t.Fatalf("update CloneSet image: %v", err)
	}
	e.cloneSetStatus(t, s, 2, s.rev1, s.rev2, nil)
	s.pod = e.podConditions(t, s, corev1.PodCondition{Type: "InPlaceUpdateReady", Status: corev1.ConditionFalse, Reason: "StartInPlaceUpdate"})

	p, err := e.cs.CoreV1().Pods(s.ns).Get(ctx, s.pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range p.Spec.Containers {
		p.Spec.Containers[i].ResizePolicy = nil // not in kruise v1.6's API types
	}
	p.Spec.Containers[0].Image = rzImage(2)
	p.Labels["controller-revision-hash"] = s.rev2
	state, _ := json.Marshal(map[string]any{"revision": s.rev2, "updateTimestamp": time.Now().UTC().Format(time.RFC3339),
		"lastContainerStatuses": map[string]any{"app": map[string]any{"imageID": ""}}})
	p.Annotations["apps.kruise.io/inplace-update-state"] = string(state)
	_, err = e.cs.CoreV1().Pods(s.ns).Update(ctx, p, metav1.UpdateOptions{FieldManager: "kruise-manager"})
	return err
}

// failedInPlace records a rejected in-place update as kruise does: a Warning event on the
// CloneSet from cloneset-controller, and the CloneSet's FailedUpdate condition.
func (e *rzEnv) failedInPlace(t *testing.T, s *rzCloneSet, updateErr error) {
	t.Helper()
	now := metav1.Now()
	ev := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", s.name, now.UnixNano()), Namespace: s.ns},
		InvolvedObject: corev1.ObjectReference{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet",
			Namespace: s.ns, Name: s.name, UID: s.pod.OwnerReferences[0].UID},
		Reason: "FailedUpdatePodInPlace", Type: corev1.EventTypeWarning, Count: 1,
		Message:        fmt.Sprintf("failed to update pod %s in-place(revision %v): %v", s.pod.Name, s.rev2, updateErr),
		Source:         corev1.EventSource{Component: "cloneset-controller"},
		FirstTimestamp: now, LastTimestamp: now,
	}
	if _, err := e.cs.CoreV1().Events(s.ns).Create(t.Context(), ev, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create event: %v", err)
	}
	e.cloneSetStatus(t, s, 2, s.rev1, s.rev2, []any{map[string]any{"type": "FailedUpdate", "status": "True",
		"lastTransitionTime": now.UTC().Format(time.RFC3339), "message": updateErr.Error()}})
}

// pdb creates a policy/v1 PodDisruptionBudget over the CloneSet's pods and waits until the
// disruption controller has processed it.
func (e *rzEnv) pdb(t *testing.T, s *rzCloneSet, minAvailable int) {
	t.Helper()
	min := intstr.FromInt32(int32(minAvailable))
	_, err := e.cs.PolicyV1().PodDisruptionBudgets(s.ns).Create(t.Context(), &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: s.name, Namespace: s.ns},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &min,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": s.name}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create PodDisruptionBudget: %v", err)
	}
	eventually(t, time.Minute, "PodDisruptionBudget status", func(ctx context.Context) (bool, error) {
		p, err := e.cs.PolicyV1().PodDisruptionBudgets(s.ns).Get(ctx, s.name, metav1.GetOptions{})
		return err == nil && p.Status.ObservedGeneration == p.Generation && p.Status.ExpectedPods == 1, err
	})
}

// rzArgs are the scan arguments of the resize check in namespace ns.
func rzArgs(ns string) []string {
	return []string{"-n", ns, "--checks", rzCheck, "--min-age", "0s", "-o", "json"}
}

// rzReport is the report of a resize scan and its exit code, after checking it found or not
// (exit 0 or 2), read everything, and shows no env value.
func rzReport(t *testing.T, scanned *pluginRun) (*report.Report, int) {
	t.Helper()
	r := scanned.wantFindingsOrNone().agreed() // scanned is now the scan that agreed
	if strings.Contains(scanned.stdout, rzSecretEnv) {
		t.Errorf("the report shows an env value:\n%s", scanned.stdout)
	}
	if !r.Coverage.Complete {
		t.Errorf("coverage incomplete: %+v", r.Coverage)
	}
	return r, scanned.code
}

func rzFinding(t *testing.T, r *report.Report, pod, rootCause string) report.Finding {
	t.Helper()
	for _, f := range r.Findings {
		if f.Check == rzCheck && f.Object.Name == pod {
			if f.RootCause.ID != rootCause {
				t.Fatalf("pod %s: root cause %s, want %s\nevidence:\n%s", pod, f.RootCause.ID, rootCause, strings.Join(f.RootCause.Evidence, "\n"))
			}
			return f
		}
	}
	t.Fatalf("no %s finding for pod %s in %+v", rzCheck, pod, r.Findings)
	return report.Finding{}
}

func rzEvidence(t *testing.T, f report.Finding, want ...string) {
	t.Helper()
	all := strings.Join(f.RootCause.Evidence, "\n")
	for _, w := range want {
		if !strings.Contains(all, w) {
			t.Errorf("evidence lacks %q:\n%s", w, all)
		}
	}
}
