package checks

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// Fixtures for the OpenKruise checks, shaped the way kruise v1.7+ and the apiserver write them.

var ktNow = time.Date(2026, 6, 12, 12, 0, 0, 0, time.UTC)

func ktAgo(d time.Duration) time.Time { return ktNow.Add(-d) }

func ktMT(d time.Duration) *metav1.Time { t := metav1.NewTime(ktAgo(d)); return &t }

// ktManaged is a managedFields entry: manager, subresource, age and the fieldsV1 JSON.
func ktManaged(manager, subresource string, age time.Duration, fields string) metav1.ManagedFieldsEntry {
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
		Time: ktMT(age), FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}, Subresource: subresource}
}

// ktManager is the kruise-manager Deployment as the Helm chart installs it, with its status.
func ktManager(version string, available int32, args ...string) *appsv1.Deployment {
	one := int32(1)
	labels := map[string]string{"control-plane": "controller-manager"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kruise-system", Name: "kruise-controller-manager", UID: "mgr-uid"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "manager", Image: "openkruise/kruise-manager:" + version, Command: []string{"/manager"},
					Args: append([]string{"--enable-leader-election", "--metrics-addr=:8080", "--leader-election-namespace=kruise-system", "--v=4"}, args...)}},
			}},
		},
		Status: appsv1.DeploymentStatus{Replicas: 1, ReadyReplicas: available, AvailableReplicas: available, ObservedGeneration: 1},
	}
}

const ktHolder = "kruise-controller-manager-7d9f8b6c5-x2x4k_0b6a2c1e-5d1f-4a8e-9d3c-2f7e1b0a9c8d"

func ktLease(renewedAgo time.Duration) *coordinationv1.Lease {
	holder, dur := ktHolder, int32(15)
	renew := metav1.NewMicroTime(ktAgo(renewedAgo))
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kruise-system", Name: "kruise-manager"},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &dur, RenewTime: &renew},
	}
}

// ktCS describes a CloneSet fixture.
type ktCS struct {
	name               string
	replicas           int64
	generation         int64
	lifecycle          map[string]any // spec.lifecycle
	updateType         string
	paused             bool
	partition          any
	status             map[string]any
	specAge, statusAge time.Duration
	created            time.Duration
	deleting           bool
}

// cloneSet builds the CloneSet through the real decoder, from the object kruise and the apiserver store.
func (c ktCS) cloneSet(t *testing.T) *kruise.Workload {
	t.Helper()
	if c.generation == 0 {
		c.generation = 1
	}
	if c.created == 0 {
		c.created = 2 * time.Hour
	}
	labels := map[string]any{"app": c.name}
	strategy := map[string]any{"type": "ReCreate"}
	if c.updateType != "" {
		strategy["type"] = c.updateType
	}
	if c.paused {
		strategy["paused"] = true
	}
	if c.partition != nil {
		strategy["partition"] = c.partition
	}
	spec := map[string]any{
		"replicas":       c.replicas,
		"selector":       map[string]any{"matchLabels": labels},
		"template":       map[string]any{"metadata": map[string]any{"labels": labels}, "spec": map[string]any{"containers": []any{map[string]any{"name": "app", "image": "nginx:1.27"}}}},
		"updateStrategy": strategy,
	}
	if c.lifecycle != nil {
		spec["lifecycle"] = c.lifecycle
	}
	var managed []any
	for _, e := range []metav1.ManagedFieldsEntry{
		ktManaged("kubectl-client-side-apply", "", c.specAge, `{"f:metadata":{"f:annotations":{}},"f:spec":{"f:replicas":{},"f:template":{}}}`),
		ktManaged("kruise-manager", "status", c.statusAge, `{"f:status":{"f:observedGeneration":{},"f:replicas":{}}}`),
	} {
		raw, _ := json.Marshal(e)
		var m map[string]any
		_ = json.Unmarshal(raw, &m)
		managed = append(managed, m)
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps.kruise.io/v1alpha1", "kind": "CloneSet",
		"metadata": map[string]any{
			"namespace": "shop", "name": c.name, "uid": "cs-" + c.name, "generation": c.generation, "resourceVersion": "1000",
			"creationTimestamp": ktAgo(c.created).Format(time.RFC3339), "managedFields": managed,
		},
		"spec":   spec,
		"status": c.status,
	}}
	if c.deleting {
		ts := metav1.NewTime(ktAgo(time.Hour))
		u.SetDeletionTimestamp(&ts)
		u.SetFinalizers([]string{"example.com/cleanup"})
	}
	w, err := kruise.WorkloadFromUnstructured(u)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// ktStatus is a CloneSet status as kruise computes it.
func ktStatus(observedGen, replicas, updated int64, updateRev, currentRev string) map[string]any {
	return map[string]any{"observedGeneration": observedGen, "replicas": replicas, "readyReplicas": replicas, "availableReplicas": replicas,
		"updatedReplicas": updated, "updatedReadyReplicas": updated, "updateRevision": updateRev, "currentRevision": currentRev,
		"labelSelector": "app=web"}
}

// ktPod is a pod a CloneSet created: owner reference, revision and instance labels, lifecycle
// state and its timestamp, field managers.
func ktPod(w *kruise.Workload, name, state string, stateAge time.Duration, revisionHash string) *corev1.Pod {
	yes := true
	p := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace: w.Namespace, Name: name, UID: types.UID("pod-" + name), ResourceVersion: "2000",
			CreationTimestamp: metav1.NewTime(ktAgo(stateAge + time.Second)),
			Labels: map[string]string{"app": w.Name, "controller-revision-hash": revisionHash, "pod-template-hash": revisionHash,
				"apps.kruise.io/cloneset-instance-id": strings.TrimPrefix(name, w.Name+"-"), kruise.LabelLifecycleState: state},
			Annotations: map[string]string{kruise.AnnotationLifecycleTime: ktAgo(stateAge).Format(time.RFC3339)},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Name: w.Name, UID: w.UID,
				Controller: &yes, BlockOwnerDeletion: &yes}},
			ManagedFields: []metav1.ManagedFieldsEntry{ktManaged("kruise-manager", "", stateAge+time.Second,
				`{"f:metadata":{"f:labels":{".":{},"f:app":{},"f:controller-revision-hash":{},"f:lifecycle.apps.kruise.io/state":{}},"f:ownerReferences":{}},"f:spec":{}}`)},
		},
		Spec: corev1.PodSpec{NodeName: "node-1", SchedulerName: "default-scheduler",
			Containers:     []corev1.Container{{Name: "app", Image: "nginx:1.27", Env: []corev1.EnvVar{{Name: "DB_PASSWORD", Value: "hunter2"}}}},
			ReadinessGates: []corev1.PodReadinessGate{{ConditionType: "InPlaceUpdateReady"}, {ConditionType: "KruisePodReady"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}},
	}
	return p
}

// ktHook is what a third-party hook controller does to a pod: add a finalizer or set a label,
// recorded under its own field manager.
func ktHook(p *corev1.Pod, manager string, age time.Duration, finalizers []string, labels map[string]string) {
	var parts []string
	if len(finalizers) > 0 {
		var fs []string
		for _, f := range finalizers {
			fs = append(fs, fmt.Sprintf("%q:{}", "v:"+jsonQuote(f)))
			p.Finalizers = append(p.Finalizers, f)
		}
		parts = append(parts, `"f:finalizers":{".":{},`+strings.Join(fs, ",")+`}`)
	}
	if len(labels) > 0 {
		var ls []string
		for k, v := range labels {
			ls = append(ls, fmt.Sprintf("%q:{}", "f:"+k))
			p.Labels[k] = v
		}
		parts = append(parts, `"f:labels":{`+strings.Join(ls, ",")+`}`)
	}
	p.ManagedFields = append(p.ManagedFields, ktManaged(manager, "", age, `{"f:metadata":{`+strings.Join(parts, ",")+`}}`))
}

func jsonQuote(s string) string { b, _ := json.Marshal(s); return string(b) }

// ktEvent is an event the cloneset-controller records on a CloneSet.
func ktEvent(w *kruise.Workload, typ, reason, msg string, age time.Duration) *corev1.Event {
	return &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.Namespace, Name: fmt.Sprintf("%s.%x", w.Name, age)},
		InvolvedObject: corev1.ObjectReference{APIVersion: "apps.kruise.io/v1alpha1", Kind: "CloneSet", Namespace: w.Namespace,
			Name: w.Name, UID: w.UID},
		Type: typ, Reason: reason, Message: msg, Count: 1,
		Source:         corev1.EventSource{Component: "cloneset-controller"},
		FirstTimestamp: metav1.NewTime(ktAgo(age)), LastTimestamp: metav1.NewTime(ktAgo(age)),
	}
}

// ktEnv is the cluster around the workloads: manager, lease, logs.
type ktEnv struct {
	mgr        *appsv1.Deployment
	lease      *coordinationv1.Lease
	logs       *string
	logsUnread string
}

func ktHealthy(version string, args ...string) ktEnv {
	return ktEnv{mgr: ktManager(version, 1, args...), lease: ktLease(2 * time.Second)}
}

func ktSnapshot(e ktEnv, workloads []*kruise.Workload, pods []*corev1.Pod, events []*corev1.Event) *snapshot.Snapshot {
	s := &snapshot.Snapshot{Now: ktNow, Settings: snapshot.DefaultSettings(), Workloads: workloads, Events: events,
		Unread: map[snapshot.Input]error{}, Logs: map[string]string{}}
	for _, p := range pods {
		// The collector lists every pod metadata-only and reads the candidates in full.
		meta := p.ObjectMeta
		s.Pods = append(s.Pods, &meta)
		s.FullPods = append(s.FullPods, p)
	}
	if e.mgr != nil {
		s.Deployments = append(s.Deployments, e.mgr)
	}
	if e.lease != nil {
		s.Leases = append(s.Leases, e.lease)
	}
	if e.logs != nil {
		s.Logs["kruise-system/"+kruise.HolderPod(ktHolder)] = *e.logs
	}
	if e.logsUnread != "" {
		s.Unread[snapshot.InputControllerLogs] = errors.New(e.logsUnread)
	}
	s.Index()
	return s
}

func ktStr(s string) *string { return &s }

// ktExpect asserts a finding's root cause, evidence fragments and fix actions.
func ktExpect(t *testing.T, got []report.Finding, rootCause string, evidence []string, fixes []string) {
	t.Helper()
	if rootCause == "" {
		if len(got) != 0 {
			t.Fatalf("want no finding, got %d: %s / %s\n%s", len(got), got[0].RootCause.ID, got[0].Summary, strings.Join(got[0].RootCause.Evidence, "\n"))
		}
		return
	}
	if len(got) != 1 {
		t.Fatalf("want 1 finding (%s), got %d: %+v", rootCause, len(got), got)
	}
	f := got[0]
	all := strings.Join(f.RootCause.Evidence, "\n")
	if f.RootCause.ID != rootCause {
		t.Fatalf("root cause = %s, want %s\nmessage: %s\nevidence:\n%s", f.RootCause.ID, rootCause, f.RootCause.Message, all)
	}
	for _, e := range evidence {
		if !strings.Contains(all+"\n"+f.RootCause.Message, e) {
			t.Errorf("evidence lacks %q:\n%s\nmessage: %s", e, all, f.RootCause.Message)
		}
	}
	var actions []string
	for _, fx := range f.Fixes {
		actions = append(actions, fx.Action)
	}
	if strings.Join(actions, ",") != strings.Join(fixes, ",") {
		t.Errorf("fixes = %v, want %v", actions, fixes)
	}
	if strings.Contains(all+f.RootCause.Message, "hunter2") {
		t.Errorf("evidence leaks an environment value:\n%s", all)
	}
}

func TestKruiseThreshold(t *testing.T) {
	if got := krThreshold(&snapshot.Snapshot{Scope: snapshot.Scope{MinAgeSet: true}}, 10*time.Minute, 10*time.Minute, 30*time.Second); got != 10*time.Minute {
		t.Errorf("an explicit --min-age equal to the default must be used as given, got %v", got)
	}
	if got := krThreshold(&snapshot.Snapshot{}, 10*time.Minute, 10*time.Minute, 30*time.Second); got != 30*time.Second {
		t.Errorf("default threshold = %v, want the manager's expectation timeout", got)
	}
	if got := krThreshold(&snapshot.Snapshot{}, 0, 10*time.Minute, 30*time.Second); got != 0 {
		t.Errorf("--min-age 0s = %v, want 0", got)
	}
}

func TestKruiseEventMessageDropsPodDump(t *testing.T) {
	msg := `failed to create pod: pods "web-x" is forbidden: exceeded quota: q, pod: {"metadata":{"name":"web-x"},"spec":{"containers":[{"env":[{"name":"DB_PASSWORD","value":"hunter2"}]}]}}`
	got := krEventMessage(msg)
	if strings.Contains(got, "hunter2") || !strings.HasSuffix(got, "exceeded quota: q") {
		t.Errorf("krEventMessage = %q", got)
	}
}

// An unreadable manager leaves the findings in place, with what is known, and the coverage degraded.
func TestKruiseChecksDegradeWithoutTheManager(t *testing.T) {
	w := ktLeakedCS().cloneSet(t)
	p := ktPod(w, "demo-akx2p", kruise.StatePreparingNormal, 30*time.Minute, "5d4f8b7c9")
	s := ktSnapshot(ktEnv{}, []*kruise.Workload{w}, []*corev1.Pod{p}, nil)
	s.Unread[snapshot.InputControllers] = errors.New("forbidden: list apps/deployments in all namespaces")
	findings, cov := Run(s, []Check{StuckPreparingNormal(), ExpectationsUnsatisfied()}, -1)
	if len(findings) != 2 {
		t.Fatalf("want a finding from each check, got %+v", findings)
	}
	for _, f := range findings {
		if !strings.Contains(strings.Join(f.RootCause.Evidence, "\n"), "kruise-manager could not be read (forbidden: list apps/deployments") {
			t.Errorf("%s evidence does not say the manager could not be read:\n%s", f.Check, strings.Join(f.RootCause.Evidence, "\n"))
		}
	}
	if len(cov.Degraded) != 2 || len(cov.Skipped) != 0 {
		t.Errorf("coverage = %+v, want both checks degraded", cov)
	}
}
