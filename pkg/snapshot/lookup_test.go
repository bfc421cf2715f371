package snapshot

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
)

func TestOwnedPods(t *testing.T) {
	yes, no := true, false
	w := &kruise.Workload{}
	w.UID, w.Namespace = "w", "ns"
	w.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	pod := func(name, ns, app string, controller *bool) *metav1.ObjectMeta {
		return &metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID(name), Labels: map[string]string{"app": app},
			OwnerReferences: []metav1.OwnerReference{{UID: "w", Controller: controller}}}
	}
	s := &Snapshot{Pods: []*metav1.ObjectMeta{
		pod("c", "ns", "web", &yes), pod("a", "ns", "web", &yes), pod("other-app", "ns", "db", &yes),
		pod("other-ns", "elsewhere", "web", &yes), pod("not-controller", "ns", "web", &no),
	}}
	s.Index()
	names := func(ms []*metav1.ObjectMeta) []string {
		var out []string
		for _, m := range ms {
			out = append(out, m.Name)
		}
		return out
	}
	if got := names(s.ControlledPods("w")); len(got) != 4 || got[0] != "c" || got[3] != "other-ns" {
		t.Errorf("ControlledPods = %v, want the four the reference controls, in listing order", got)
	}
	if got := names(s.OwnedPods(w)); len(got) != 2 || got[0] != "a" || got[1] != "c" {
		t.Errorf("OwnedPods = %v, want [a c]", got)
	}
}
