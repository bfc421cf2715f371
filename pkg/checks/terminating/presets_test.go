package terminating

import (
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/checktest"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// Presets over checktest: the pods, objects and clusters these cases start from, shaped the way
// the apiserver, the kubelet, kube-controller-manager, kwok, OpenKruise and Cluster API write them.

// replicaSetPod is a running pod of a ReplicaSet on node-a, as the scheduler and kubelet leave it.
func replicaSetPod(name string, opts ...checktest.Option) *corev1.Pod {
	grace := int64(30)
	p := checktest.Pod("shop", name, append([]checktest.Option{
		checktest.Labels(map[string]string{"app": "web", "pod-template-hash": "6d4cf56db6"}),
		checktest.OwnedBy("apps/v1", "ReplicaSet", "web-6d4cf56db6", "uid-rs-web"),
		checktest.ManagedFields(specManaged("kube-controller-manager")),
		checktest.OnNode("node-a"),
		checktest.Containers(corev1.Container{Name: "app", Image: "nginx:1.27"}),
		checktest.Volumes(corev1.Volume{Name: "kube-api-access-x7k2p", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{}}}),
		checktest.Running(),
	}, opts...)...)
	p.Spec.TerminationGracePeriodSeconds = &grace
	return p
}

// specManaged is a managedFields entry that owns spec fields only, as the creator of an object has.
func specManaged(manager string) metav1.ManagedFieldsEntry {
	return checktest.Managed(manager, "", time.Hour, `{"f:spec":{"f:containers":{}}}`)
}

// statefulSetPod makes the pod a StatefulSet's.
func statefulSetPod() checktest.Option {
	return checktest.OwnedBy("apps/v1", "StatefulSet", "db", "uid-sts-db")
}

// cloneSetPod is a CloneSet pod in PreparingDelete since 20 minutes.
func cloneSetPod(opts ...checktest.Option) *corev1.Pod {
	p := replicaSetPod("cart-x8k2q", opts...)
	p.Labels = map[string]string{"app": "cart", "apps.kruise.io/cloneset-instance-id": "x8k2q", "controller-revision-hash": "cart-7b9c"}
	checktest.Lifecycle(kruise.StatePreparingDelete, 20*time.Minute)(p)
	checktest.OwnedBy("apps.kruise.io/v1alpha1", "CloneSet", "cart", "uid-cs-cart")(p)
	return p
}

// cloneSet is the CloneSet of cloneSetPod, with a preDelete hook.
func cloneSet(t *testing.T, preDelete map[string]any) *kruise.Workload {
	return checktest.Workload(t, kruise.KindCloneSet, "shop", "cart", checktest.UID("uid-cs-cart"), checktest.Generation(3),
		checktest.Replicas(2), checktest.LifecycleHooks(map[string]any{"preDelete": preDelete}))
}

func readyNode(name string) *corev1.Node {
	return checktest.Node(name, checktest.Ready(corev1.ConditionTrue, 48*time.Hour))
}

func kwokNode(name string, ready corev1.ConditionStatus, since time.Duration) *corev1.Node {
	return checktest.Node(name, checktest.Ready(ready, since), checktest.Kwok())
}

// healthy is a cluster with one Ready node whose kubelet heartbeats.
func healthy() checktest.Cluster {
	return checktest.Cluster{
		Nodes:      []*corev1.Node{readyNode("node-a")},
		NodeLeases: []*coordinationv1.Lease{checktest.NodeLease("node-a", 4*time.Second)},
	}
}

// eventAbout is an event with the count and times client-go's recorder gives a repeated one.
func eventAbout(involved corev1.ObjectReference, typ, reason, component, msg string, count int32, lastAgo time.Duration) *corev1.Event {
	return checktest.Event(involved, typ, reason, msg, checktest.From(component), checktest.Count(count), checktest.Seen(lastAgo+time.Hour, lastAgo))
}

// deletedObject is an object of another resource being deleted past dueAgo, held by finalizers
// that manager added.
func deletedObject(gvr schema.GroupVersionResource, kind, ns, name string, dueAgo time.Duration, manager string, fins ...string) snapshot.Object {
	return checktest.Object(gvr, kind, ns, name, checktest.Deleted(dueAgo, 0), checktest.Finalizers(manager, fins...))
}

func objectRef(o snapshot.Object) corev1.ObjectReference {
	return checktest.RefTo(o.APIVersion(), o.Kind, o.Meta)
}

var (
	widgetsGVR     = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	machinesGVR    = schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta1", Resource: "machines"}
	machineSetsGVR = schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta1", Resource: "machinesets"}
	clustersGVR    = schema.GroupVersionResource{Group: "cluster.x-k8s.io", Version: "v1beta1", Resource: "clusters"}
	deploymentsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	argoAppsGVR    = schema.GroupVersionResource{Group: "argoproj.io", Version: "v1alpha1", Resource: "applications"}
)

func machine(name, cluster string, dueAgo time.Duration) snapshot.Object {
	o := deletedObject(machinesGVR, "Machine", "fleet", name, dueAgo, "manager", "machine.cluster.x-k8s.io")
	o.Meta.Labels = map[string]string{"cluster.x-k8s.io/cluster-name": cluster}
	return o
}

// terminatingNamespace is a namespace being deleted past dueAgo, with the conditions the
// namespace controller sets.
func terminatingNamespace(name string, dueAgo time.Duration, conds ...checktest.Option) *corev1.Namespace {
	return checktest.Namespace(name, append([]checktest.Option{checktest.DeletedSince(dueAgo)}, conds...)...)
}

// want is what a case expects of the finding about its target object.
type want struct {
	rootCause string // "" expects no finding about the target
	summary   []string
	message   []string
	evidence  []string
	noEvid    []string
	fixes     []string // "action" or "action:finalizer", in order
	risks     []report.Risk
	refs      []string
	noRefs    []string
	node      string
}

func find(fs []report.Finding, name string) (report.Finding, int) {
	var out report.Finding
	n := 0
	for _, f := range fs {
		if f.Object.Name == name {
			out = f
			n++
		}
	}
	return out, n
}

func expect(t *testing.T, fs []report.Finding, target string, want want) {
	t.Helper()
	f, n := find(fs, target)
	if want.rootCause == "" {
		if n != 0 {
			t.Fatalf("want no finding about %s, got %s: %s\n%s", target, f.RootCause.ID, f.Summary, strings.Join(f.RootCause.Evidence, "\n"))
		}
		return
	}
	if n != 1 {
		t.Fatalf("want 1 finding about %s, got %d (all: %v)", target, n, fs)
	}
	if f.Check != ID || f.RootCause.ID != want.rootCause {
		t.Fatalf("finding = %s/%s, want %s/%s\nsummary: %s\nmessage: %s\nevidence:\n%s", f.Check, f.RootCause.ID, ID,
			want.rootCause, f.Summary, f.RootCause.Message, strings.Join(f.RootCause.Evidence, "\n"))
	}
	ev := strings.Join(f.RootCause.Evidence, "\n")
	for _, s := range want.evidence {
		if !strings.Contains(ev, s) {
			t.Errorf("evidence lacks %q:\n%s", s, ev)
		}
	}
	for _, s := range want.noEvid {
		if strings.Contains(ev, s) {
			t.Errorf("evidence has %q, it should not:\n%s", s, ev)
		}
	}
	for _, s := range want.summary {
		if !strings.Contains(f.Summary, s) {
			t.Errorf("summary %q lacks %q", f.Summary, s)
		}
	}
	for _, s := range want.message {
		if !strings.Contains(f.RootCause.Message, s) {
			t.Errorf("message %q lacks %q", f.RootCause.Message, s)
		}
	}
	var got []string
	for _, fx := range f.Fixes {
		s := fx.Action
		if fin := fx.Params["finalizer"]; fin != "" {
			s += ":" + fin
		}
		got = append(got, s)
		if fx.Description == "" || fx.Risk == "" {
			t.Errorf("fix %s lacks description or risk: %+v", s, fx)
		}
	}
	if strings.Join(got, ",") != strings.Join(want.fixes, ",") {
		t.Errorf("fixes = %v, want %v", got, want.fixes)
	}
	for i, r := range want.risks {
		if i < len(f.Fixes) && f.Fixes[i].Risk != r {
			t.Errorf("fix %d risk = %s, want %s (%s)", i, f.Fixes[i].Risk, r, f.Fixes[i].Description)
		}
	}
	refs := strings.Join(f.RootCause.References, ",")
	for _, r := range want.refs {
		if !strings.Contains(refs, r) {
			t.Errorf("references %v lack %s", f.RootCause.References, r)
		}
	}
	for _, r := range want.noRefs {
		if strings.Contains(refs, r) {
			t.Errorf("references %v have %s", f.RootCause.References, r)
		}
	}
	if f.Node != want.node {
		t.Errorf("node = %q, want %q", f.Node, want.node)
	}
	if f.Summary == "" || f.RootCause.Message == "" || len(f.RootCause.Evidence) == 0 {
		t.Errorf("finding lacks summary, message or evidence: %+v", f)
	}
	if f.RootCause.Evidence[0] == "" || !strings.HasPrefix(f.RootCause.Evidence[0], "deletionTimestamp") && f.Object.Kind != "Pod" {
		t.Errorf("first evidence line %q is not the deletion", f.RootCause.Evidence[0])
	}
}
