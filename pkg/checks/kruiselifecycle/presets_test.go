package kruiselifecycle

import (
	"errors"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/checktest"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// Presets over checktest for the OpenKruise checks, shaped the way kruise v1.7+ and the
// apiserver write them.

// cloneSetCase describes a CloneSet fixture.
type cloneSetCase struct {
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
	// labels are the CloneSet's own labels; spec sets further spec fields by path
	// ("updateStrategy.maxSurge", "scaleStrategy.podsToDelete").
	labels map[string]string
	spec   map[string]any
}

// cloneSet builds the CloneSet through the real decoder, from the object kruise and the apiserver
// store: its spec last written specAge ago, its status statusAge ago.
func (c cloneSetCase) cloneSet(t *testing.T) *kruise.Workload {
	t.Helper()
	if c.generation == 0 {
		c.generation = 1
	}
	if c.created == 0 {
		c.created = 2 * time.Hour
	}
	if c.updateType == "" {
		c.updateType = "ReCreate"
	}
	opts := []checktest.Option{checktest.Replicas(c.replicas), checktest.Generation(c.generation), checktest.CreatedAgo(c.created),
		checktest.UpdateStrategy(c.updateType),
		checktest.ManagedFields(
			checktest.Managed("kubectl-client-side-apply", "", c.specAge, `{"f:metadata":{"f:annotations":{}},"f:spec":{"f:replicas":{},"f:template":{}}}`),
			checktest.Managed("kruise-manager", "status", c.statusAge, `{"f:status":{"f:observedGeneration":{},"f:replicas":{}}}`))}
	if c.status != nil {
		opts = append(opts, checktest.Status(c.status))
	}
	if c.paused {
		opts = append(opts, checktest.Paused())
	}
	if c.partition != nil {
		opts = append(opts, checktest.Partition(c.partition))
	}
	if c.lifecycle != nil {
		opts = append(opts, checktest.LifecycleHooks(c.lifecycle))
	}
	if c.deleting {
		opts = append(opts, checktest.DeletedSince(time.Hour), checktest.Finalizers("", "example.com/cleanup"))
	}
	if c.labels != nil {
		opts = append(opts, checktest.Labels(c.labels))
	}
	for path, v := range c.spec {
		opts = append(opts, checktest.SpecField(v, strings.Split(path, ".")...))
	}
	return checktest.Workload(t, kruise.KindCloneSet, "shop", c.name, opts...)
}

// cloneSetPod is a pod a CloneSet created: owner reference, revision and instance labels,
// lifecycle state and its timestamp, field managers.
func cloneSetPod(w *kruise.Workload, name, state string, stateAge time.Duration, revisionHash string) *corev1.Pod {
	p := checktest.Pod(w.Namespace, name, checktest.CreatedAgo(stateAge+time.Second), checktest.OwnedByWorkload(w), checktest.OnNode("node-1"),
		checktest.Labels(map[string]string{"app": w.Name, "controller-revision-hash": revisionHash, "pod-template-hash": revisionHash,
			"apps.kruise.io/cloneset-instance-id": strings.TrimPrefix(name, w.Name+"-")}),
		checktest.Lifecycle(state, stateAge),
		checktest.ManagedFields(checktest.Managed("kruise-manager", "", stateAge+time.Second,
			`{"f:metadata":{"f:labels":{".":{},"f:app":{},"f:controller-revision-hash":{},"f:lifecycle.apps.kruise.io/state":{}},"f:ownerReferences":{}},"f:spec":{}}`)),
		checktest.Containers(corev1.Container{Name: "app", Image: "nginx:1.27", Env: []corev1.EnvVar{{Name: "DB_PASSWORD", Value: "hunter2"}}}),
		checktest.Conditions(corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}))
	p.Spec.SchedulerName = "default-scheduler"
	p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "InPlaceUpdateReady"}, {ConditionType: "KruisePodReady"}}
	return p
}

// hook is what a third-party hook controller does to a pod: add a finalizer or set a label,
// recorded under its own field manager.
func hook(p *corev1.Pod, manager string, age time.Duration, finalizers []string, labels map[string]string) {
	checktest.SetBy(manager, age, finalizers, labels)(p)
}

// workloadEvent is an event the cloneset-controller records on a CloneSet.
func workloadEvent(w *kruise.Workload, typ, reason, msg string, age time.Duration) *corev1.Event {
	return checktest.Event(checktest.RefTo(w.APIVersion, w.Kind, w), typ, reason, msg,
		checktest.From("cloneset-controller"), checktest.Seen(age, age))
}

// controlPlane is the cluster around the workloads: the kruise-manager, its leader Lease, the
// leader's log (nil: not read) or why it could not be read.
type controlPlane struct {
	mgr        *appsv1.Deployment
	lease      *coordinationv1.Lease
	logs       *string
	logsUnread string
}

func healthy(version string, args ...string) controlPlane {
	return controlPlane{mgr: checktest.KruiseManager(version, 1, args...), lease: checktest.KruiseLeaderLease(2 * time.Second)}
}

func snapshotOf(cp controlPlane, workloads []*kruise.Workload, pods []*corev1.Pod, events []*corev1.Event) *snapshot.Snapshot {
	return clusterOf(cp, workloads, pods, events).Snapshot()
}

func clusterOf(cp controlPlane, workloads []*kruise.Workload, pods []*corev1.Pod, events []*corev1.Event) checktest.Cluster {
	c := checktest.Cluster{Workloads: workloads, Pods: pods, Events: events, Unread: map[snapshot.Input]error{}, Logs: map[string]string{}}
	if cp.mgr != nil {
		c.Deployments = []*appsv1.Deployment{cp.mgr}
	}
	if cp.lease != nil {
		c.Leases = []*coordinationv1.Lease{cp.lease}
	}
	if cp.logs != nil {
		c.Logs["kruise-system/"+kruise.HolderPod(checktest.KruiseHolder)] = *cp.logs
	}
	if cp.logsUnread != "" {
		c.Unread[snapshot.InputControllerLogs] = errors.New(cp.logsUnread)
	}
	return c
}

func text(s string) *string { return &s }

// expect asserts a finding's root cause, evidence fragments and fix actions.
func expect(t *testing.T, got []report.Finding, rootCause string, evidence []string, fixes []string) {
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
