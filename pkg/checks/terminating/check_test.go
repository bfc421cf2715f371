package terminating

import (
	"errors"
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

// TestStuckTerminatingAsksForEveryWorkload: the check asks for the workloads of every namespace
// exactly when something it judges is being deleted, since only then may it look for a
// controller among them (the owner of a finalizer, kwok's Deployment).
func TestStuckTerminatingAsksForEveryWorkload(t *testing.T) {
	declare := func(w checktest.Cluster, edit func(s *snapshot.Snapshot)) bool {
		s := w.Snapshot()
		s.FullPods = nil
		if edit != nil {
			edit(s)
		}
		s.Index()
		return New().(checks.ReadDeclarer).DeclareReads(s).AllControllers
	}
	w := healthy()
	w.Pods = []*corev1.Pod{replicaSetPod("running")}
	if declare(w, nil) {
		t.Errorf("nothing being deleted, yet every workload asked for")
	}
	w.Pods = append(w.Pods, replicaSetPod("deleting", checktest.Deleted(time.Minute, 30)))
	if !declare(w, nil) {
		t.Errorf("a pod being deleted, yet the workloads not asked for")
	}
	w.Pods = []*corev1.Pod{replicaSetPod("running")}
	gone := metav1.NewTime(time.Now())
	if !declare(w, func(s *snapshot.Snapshot) {
		s.Objects = append(s.Objects, snapshot.Object{Kind: "ConfigMap", Namespaced: true, Meta: &metav1.PartialObjectMetadata{
			ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "held", DeletionTimestamp: &gone, Finalizers: []string{"example.com/f"}}}})
	}) {
		t.Errorf("an object being deleted, yet the workloads not asked for")
	}
	if !declare(w, func(s *snapshot.Snapshot) {
		s.Namespaces = append(s.Namespaces, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "retired", DeletionTimestamp: &gone}})
	}) {
		t.Errorf("a namespace being deleted, yet the workloads not asked for")
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
