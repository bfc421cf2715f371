package terminating

import (
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/checktest"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// The owner of a finalizer runs as whatever workload its install chose: a controller named after
// its field manager is looked for among Deployments, StatefulSets and DaemonSets alike.
func TestStuckTerminatingOwnerWorkloadKinds(t *testing.T) {
	cases := []struct {
		name  string
		world checktest.Cluster
		want  want
	}{
		{name: "owner runs as a DaemonSet named like its field manager",
			world: checktest.Cluster{Objects: []snapshot.Object{deletedObject(widgetsGVR, "Widget", "shop", "target", 20*time.Minute, "node-agent", "agent.example.com/drain")},
				DaemonSets: []*appsv1.DaemonSet{checktest.DaemonSet("agents", "node-agent", "agent", "example/node-agent:1.2", 3, 3)}},
			want: want{rootCause: RootCauseFinalizerOwnerNotActing, evidence: []string{"named like the field manager: DaemonSet agents/node-agent: 3/3 available"},
				message: []string{"runs but has not removed it"}}},
		{name: "owner runs as a StatefulSet with a container named like its field manager, none available",
			world: checktest.Cluster{Objects: []snapshot.Object{deletedObject(widgetsGVR, "Widget", "shop", "target", 20*time.Minute, "widget-operator", "example.com/protect")},
				StatefulSets: []*appsv1.StatefulSet{checktest.StatefulSet("widgets", "widgets", "widget-operator", "example/widgets:2.0", 1, 0)}},
			want: want{rootCause: RootCauseFinalizerOwnerNotActing, evidence: []string{"StatefulSet widgets/widgets: 0/1 available"},
				message: []string{"has no available replica"}}},
		{name: "control-plane writer of an unknown finalizer: built in, no fix",
			world: checktest.Cluster{Objects: []snapshot.Object{deletedObject(widgetsGVR, "Widget", "shop", "target", 20*time.Minute, "kube-controller-manager", "example.com/protect")}},
			want:  want{rootCause: RootCauseFinalizerOwnerNotActing, evidence: []string{"kube-controller-manager is a control-plane component"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			expect(t, New().Run(c.world.Snapshot(), 5*time.Minute), "target", c.want)
		})
	}
}

// When the cluster-wide workload lists are refused (RBAC that allows a few namespaces), the
// collector lists those namespaces and says so in Limits; the check then claims no owner missing,
// and the scan's coverage carries the note.
func TestStuckTerminatingPartialControllerSearch(t *testing.T) {
	note := "controllers (Deployments, StatefulSets, DaemonSets) searched only in namespaces kube-system (forbidden: list apps/deployments in all namespaces)"
	w := checktest.Cluster{
		Objects:              []snapshot.Object{machine("target", "prod", 30*time.Minute)},
		Clusters:             []*unstructured.Unstructured{checktest.ClusterAPICluster("fleet", "prod", false)},
		ControllerNamespaces: []string{"kube-system"},
		Limits:               map[snapshot.Input]string{snapshot.InputControllers: note},
	}
	fs, cov := checks.Run(w.Snapshot(), []checks.Check{New()}, -1)
	expect(t, fs, "target", want{rootCause: RootCauseFinalizerOwnerNotActing,
		evidence: []string{"no Deployment capi-system/capi-controller-manager, no Deployment running image cluster-api-controller among the Deployments, StatefulSets and DaemonSets of namespaces kube-system only"}})
	noted := false
	for _, n := range cov.Notes {
		noted = noted || (n.Check == ID && n.Reason == note)
	}
	if !noted || len(cov.Skipped)+len(cov.Degraded) != 0 {
		t.Errorf("coverage %+v: want the partial search noted, coverage still complete", cov)
	}
}

// capiLogLine is a line of the Cluster API controller's log as `kubectl logs --timestamps` returns
// it: controller-runtime's reconcileHandler (pkg/internal/controller/controller.go) logs the
// reconciler's error as "Reconciler error" with the values its LogConstructor set (controller,
// controllerGroup, controllerKind, <Kind>=namespace/name, namespace, name, reconcileID), in klog's
// text format, which cluster-api's main.go sets up through component-base logs.
func capiLogLine(at time.Duration, controller, kind, ns, name string) string {
	err := fmt.Sprintf("failed to patch %s %s/%s: %s.cluster.x-k8s.io %q is invalid: metadata.finalizers: Forbidden: "+
		"no new finalizers can be added if the object is being deleted, found new finalizers []string{\"machine.cluster.x-k8s.io\"}", kind, ns, name, kind, name)
	ts := checktest.Ago(at)
	return fmt.Sprintf("%s E%s       1 controller.go:316] \"Reconciler error\" err=%q controller=%q controllerGroup=\"cluster.x-k8s.io\" controllerKind=%q %s=\"%s/%s\" namespace=%q name=%q reconcileID=\"4f0c7d1e-9b1a-4c55-8a1e-2a6b4c3d2e1f\"",
		ts.Format(time.RFC3339Nano), ts.Format("0102 15:04:05.000000"), err, controller, kind, kind, ns, name, ns, name)
}

func TestParseRefusal(t *testing.T) {
	text := capiLogLine(time.Minute, "machine", "Machine", "fleet", "m-2")
	// --logging-format=json: the same values as JSON fields.
	jsonLine := checktest.Ago(2*time.Minute).Format(time.RFC3339Nano) + ` {"ts":1781265480000.1,"caller":"controller/controller.go:316","msg":"Reconciler error",` +
		`"controller":"machineset","controllerGroup":"cluster.x-k8s.io","controllerKind":"MachineSet","MachineSet":{"name":"ms-1","namespace":"fleet"},` +
		`"namespace":"fleet","name":"ms-1","reconcileID":"x","err":"MachineSet.cluster.x-k8s.io \"ms-1\" is invalid: metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted"}`
	// A line without the request's fields is matched on the apiserver's message.
	bare := checktest.Ago(3*time.Minute).Format(time.RFC3339Nano) + ` E0612 11:57:00.000000 1 x.go:1] Machine.cluster.x-k8s.io "m-3" is invalid: metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted`
	cases := []struct {
		line                              string
		ok                                bool
		controller, kind, namespace, name string
		about                             [4]string
	}{
		{text, true, "machine", "Machine", "fleet", "m-2", [4]string{"Machine", "cluster.x-k8s.io", "fleet", "m-2"}},
		{jsonLine, true, "machineset", "MachineSet", "fleet", "ms-1", [4]string{"MachineSet", "cluster.x-k8s.io", "fleet", "ms-1"}},
		{bare, true, "", "", "", "", [4]string{"Machine", "cluster.x-k8s.io", "fleet", "m-3"}},
		{"2026-06-12T11:00:00Z I0612 reconciled Machine fleet/m-2", false, "", "", "", "", [4]string{}},
		{"not-a-time " + strings.SplitN(text, " ", 2)[1], false, "", "", "", "", [4]string{}},
	}
	for i, c := range cases {
		r, ok := parseRefusal(c.line)
		if ok != c.ok {
			t.Errorf("case %d: ok = %v, want %v", i, ok, c.ok)
			continue
		}
		if !ok {
			continue
		}
		if r.controller != c.controller || r.kind != c.kind || r.namespace != c.namespace || r.name != c.name || r.at.IsZero() {
			t.Errorf("case %d: parsed %+v", i, r)
		}
		if !r.about(c.about[0], c.about[1], c.about[2], c.about[3]) || r.about(c.about[0], c.about[1], c.about[2], "other") {
			t.Errorf("case %d: about() does not match only %v: %+v", i, c.about, r)
		}
		if !strings.Contains(r.err, "no new finalizers") {
			t.Errorf("case %d: err = %q", i, r.err)
		}
	}
}

// The Cluster API controllers log the refused re-add and record no Event (docs/domain.md,
// "Cluster API finalizer race"): the leader's log is the first source.
func TestStuckTerminatingReaddFromControllerLog(t *testing.T) {
	capi := func(version string) []*appsv1.Deployment {
		return []*appsv1.Deployment{checktest.Deployment("capi-system", "capi-controller-manager", "manager",
			"registry.k8s.io/cluster-api/cluster-api-controller:"+version, 1, 1)}
	}
	log := func(lines ...string) *snapshot.ControllerLog {
		return &snapshot.ControllerLog{Namespace: "capi-system", Pod: "capi-controller-manager-6d8f9c7b5-q2w7x", Container: "manager",
			Since: 30 * time.Minute, LimitBytes: 8 << 20, Lines: lines}
	}
	world := func(version string, l *snapshot.ControllerLog, events ...*corev1.Event) checktest.Cluster {
		return checktest.Cluster{Objects: []snapshot.Object{machine("target", "prod", 30*time.Minute)},
			Clusters:    []*unstructured.Unstructured{checktest.ClusterAPICluster("fleet", "prod", false)},
			Deployments: capi(version), ClusterAPILog: l, Events: events}
	}
	m := machine("target", "prod", 30*time.Minute)
	readd := "Machine.cluster.x-k8s.io \"target\" is invalid: metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted"
	cases := []struct {
		name  string
		world checktest.Cluster
		want  want
	}{
		{name: "v1.10.2 logs the refusal: race, the fix is clusterctl's",
			world: world("v1.10.2", log(capiLogLine(5*time.Minute, "machine", "Machine", "fleet", "target"),
				capiLogLine(2*time.Minute, "machine", "Machine", "fleet", "target"),
				capiLogLine(time.Minute, "machine", "Machine", "fleet", "other"))),
			want: want{rootCause: RootCauseFinalizerReaddRace, summary: []string{"controller machine keeps re-adding a finalizer (2 refused)"},
				evidence: []string{"2 refused finalizer update(s) in the log of capi-system/capi-controller-manager-6d8f9c7b5-q2w7x (container manager, last 30m0s, at most 8388608 bytes read), controller machine, last 2m ago",
					"Cluster API v1.10.2 (Deployment capi-system/capi-controller-manager): controllers >= v1.9.0 can re-add"},
				message: []string{"clusterctl v1.9.5 and v1.10.0", "does not record which clusterctl"},
				noEvid:  []string{"upgrade"},
				refs:    []string{"kubernetes-sigs/cluster-api#11814", "kubernetes-sigs/cluster-api#11286"}}},
		{name: "log and Warning events both counted",
			world: world("v1.9.4", log(capiLogLine(time.Minute, "machine", "Machine", "fleet", "target")),
				eventAbout(objectRef(m), corev1.EventTypeWarning, "ReconcileError", "provider-manager", readd, 4, time.Minute)),
			want: want{rootCause: RootCauseFinalizerReaddRace, summary: []string{"(5 refused)"},
				evidence: []string{"1 refused finalizer update(s) in the log", "4 Warning event(s) ReconcileError from provider-manager"}}},
		{name: "v1.8.5 controllers do not re-add: the evidence says so",
			world: world("v1.8.5", log(capiLogLine(time.Minute, "machine", "Machine", "fleet", "target"))),
			want: want{rootCause: RootCauseFinalizerReaddRace,
				evidence: []string{"Cluster API v1.8.5 (Deployment capi-system/capi-controller-manager) is older than v1.9.0"},
				message:  []string{"does not have the clusterctl move race"}}},
		{name: "near miss: the log names only another Machine",
			world: world("v1.10.2", log(capiLogLine(time.Minute, "machine", "Machine", "fleet", "other"))),
			want:  want{rootCause: RootCauseFinalizerOwnerNotActing, evidence: []string{"Deployment capi-system/capi-controller-manager: 1/1 available"}}},
		{name: "near miss: the log names a MachineSet of the same name",
			world: world("v1.10.2", log(capiLogLine(time.Minute, "machineset", "MachineSet", "fleet", "target"))),
			want:  want{rootCause: RootCauseFinalizerOwnerNotActing}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			expect(t, New().Run(c.world.Snapshot(), 5*time.Minute), "target", c.want)
		})
	}
}
