package terminating

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/internal/checktest"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/checks"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

func TestStuckTerminatingPodCandidates(t *testing.T) {
	w := healthy()
	deleting := replicaSetPod("deleting", checktest.Deleted(time.Minute, 30))
	preparing := cloneSetPod()
	running := replicaSetPod("running")
	w.Pods = []*corev1.Pod{deleting, preparing, running}
	s := w.Snapshot()
	s.FullPods = nil // the collector asks on the metadata-only snapshot
	s.Index()
	got := New().(checks.ReadDeclarer).DeclareReads(s).PodsDue(s)
	if len(got) != 2 || got[0] != deleting.UID || got[1] != preparing.UID {
		t.Errorf("pods declared = %v, want %s and %s", got, deleting.UID, preparing.UID)
	}
}

// TestStuckTerminatingAsksForWorkloads: on a snapshot whose controllers' workloads were read
// only near a one-namespace scope, the check says what it searches every namespace's workloads
// for exactly when a verdict rests on that search (a finalizer's owner looked up by field
// manager or the known-finalizer table, kwok's controller for a pod whose grace period never
// ended), and asks nothing for a pod on a node that stopped heartbeating (kube-controller-manager
// v1.37.1 leaves such a pod Terminating: pkg/controller/podgc/gc_controller.go gcTerminating
// only force-deletes once the node carries the out-of-service taint), nor for an object with
// nothing to look its owner up by. Once the collector holds the matches, nothing is asked again.
func TestStuckTerminatingAsksForWorkloads(t *testing.T) {
	asks := func(w checktest.Cluster, edit func(s *snapshot.Snapshot)) (first, again []string) {
		s := w.Snapshot()
		if edit != nil {
			edit(s)
		}
		s.ControllersNear = true
		s.Index()
		New().Run(s, time.Minute)
		qs := s.AskedWorkloads()
		for _, q := range qs {
			first = append(first, q.String())
		}
		s.HoldWorkloads(qs...)
		New().Run(s, time.Minute)
		for _, q := range s.AskedWorkloads() {
			again = append(again, q.String())
		}
		return first, again
	}
	deadNode := func(w *checktest.Cluster) {
		w.Nodes = append(w.Nodes, checktest.Node("node-b", checktest.Ready(corev1.ConditionUnknown, 14*time.Minute)))
		w.NodeLeases = append(w.NodeLeases, checktest.NodeLease("node-b", 15*time.Minute))
	}
	heldBy := func(manager string) func(s *snapshot.Snapshot) {
		return func(s *snapshot.Snapshot) {
			s.Objects = append(s.Objects, deletedObject(widgetsGVR, "Widget", "shop", "held", 20*time.Minute, manager, "example.com/cleanup"))
		}
	}
	// kwok's row in the known-finalizer table: its Deployment's name, its image's repository.
	kwokController := []string{"named kwok-controller", "running image kwok"}
	cases := []struct {
		name  string
		world func() checktest.Cluster
		edit  func(s *snapshot.Snapshot)
		want  []string
	}{
		{name: "nothing being deleted", world: func() checktest.Cluster {
			w := healthy()
			w.Pods = []*corev1.Pod{replicaSetPod("running")}
			return w
		}},
		{name: "pod Terminating on a node that stopped heartbeating", world: func() checktest.Cluster {
			w := healthy()
			deadNode(&w)
			w.Pods = []*corev1.Pod{replicaSetPod("target", checktest.OnNode("node-b"), checktest.Deleted(8*time.Minute, 30))}
			return w
		}},
		{name: "pod whose grace period ran out on a Ready node: is kwok's controller its kubelet?", want: kwokController, world: func() checktest.Cluster {
			w := healthy()
			w.Pods = []*corev1.Pod{replicaSetPod("target", checktest.Deleted(8*time.Minute, 30))}
			return w
		}},
		{name: "object held by a finalizer a controller added", world: healthy, edit: heldBy("cleanup-operator"),
			want: []string{"named cleanup-operator", "with container cleanup-operator"}},
		{name: "object held by a finalizer kubectl added: nothing to look its owner up by", world: healthy, edit: heldBy("kubectl-edit")},
		{name: "object held by kwok's finalizer: its controller searched by name and image", world: healthy, want: kwokController,
			edit: func(s *snapshot.Snapshot) {
				s.Objects = append(s.Objects, deletedObject(widgetsGVR, "Widget", "shop", "held", 20*time.Minute, "kubectl-edit", kwokFinalizer))
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			first, again := asks(c.world(), c.edit)
			if !slices.Equal(first, c.want) {
				t.Errorf("searched every namespace's workloads for %q, want %q", first, c.want)
			}
			if len(again) > 0 {
				t.Errorf("with the matches held, searched again for %q", again)
			}
		})
	}
	// Read in full already (a scan of every namespace): nothing to ask for.
	w := healthy()
	s := w.Snapshot()
	heldBy("cleanup-operator")(s)
	s.Index()
	New().Run(s, time.Minute)
	if qs := s.AskedWorkloads(); len(qs) > 0 {
		t.Errorf("every namespace's workloads were read, yet searched for %v", qs)
	}
}

func TestStuckTerminatingFinalizerManagers(t *testing.T) {
	p := replicaSetPod("p")
	p.ManagedFields = []metav1.ManagedFieldsEntry{
		specManaged("kube-controller-manager"),
		checktest.Managed("agent-a", "", time.Minute, checktest.MetadataFields([]string{"example.com/a"}, nil)),
		checktest.Managed("agent-b", "", time.Minute, checktest.MetadataFields([]string{"example.com/b", `odd.example.com/"quoted"`}, nil)),
		{Manager: "broken", FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{not json`)}},
		{Manager: "status-writer", Subresource: "status", FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{}}`)}},
	}
	for fin, want := range map[string]string{
		"example.com/a": "agent-a", "example.com/b": "agent-b", `odd.example.com/"quoted"`: "agent-b", "example.com/none": "",
	} {
		got := strings.Join(managerNames(finalizerManagers(p, fin)), ",")
		if got != want {
			t.Errorf("managers of %s = %q, want %q", fin, got, want)
		}
	}
}

func TestStuckTerminatingCoverageAndIDs(t *testing.T) {
	w := healthy()
	w.Pods = []*corev1.Pod{
		replicaSetPod("a", checktest.OnNode("gone"), checktest.Deleted(time.Hour, 30)),
		replicaSetPod("b", checktest.OnNode("gone"), checktest.Deleted(time.Hour, 30)),
	}
	w.Unread = map[snapshot.Input]error{snapshot.InputControllers: errors.New("forbidden: list apps/deployments")}
	s := w.Snapshot()
	fs, cov := checks.Run(s, []checks.Check{New()}, -1)
	if len(fs) != 2 || len(cov.Degraded) != 1 || cov.Degraded[0].Check != ID || len(cov.Skipped) != 0 {
		t.Fatalf("findings %d, coverage %+v", len(fs), cov)
	}
	again, _ := checks.Run(s, []checks.Check{New()}, -1)
	if fs[0].ID != again[0].ID || fs[0].ID == fs[1].ID {
		t.Errorf("IDs not stable or not distinct: %s %s %s", fs[0].ID, again[0].ID, fs[1].ID)
	}
	for _, f := range fs {
		if f.Node != "gone" || f.Object.ResourceVersion == "" || f.Owner == nil || f.Owner.Kind != "ReplicaSet" {
			t.Errorf("finding %+v lacks node, resourceVersion or owner", f)
		}
	}
	w.Unread = map[snapshot.Input]error{snapshot.InputPods: errors.New("forbidden: list pods")}
	if _, cov := checks.Run(w.Snapshot(), []checks.Check{New()}, -1); len(cov.Skipped) != 1 {
		t.Errorf("pods Unread: coverage %+v, want the check skipped", cov)
	}
}
