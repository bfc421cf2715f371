package kruiseenv

import (
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// OwnedPods returns the pods whose controller is w and whose labels match w's selector, by
// name. A selector that cannot be parsed does not filter: the controller reference decides.
func OwnedPods(s *snapshot.Snapshot, w *kruise.Workload) []*metav1.ObjectMeta {
	var sel labels.Selector
	if w.Selector != nil {
		if parsed, err := metav1.LabelSelectorAsSelector(w.Selector); err == nil {
			sel = parsed
		}
	}
	var out []*metav1.ObjectMeta
	for _, p := range s.PodsOwnedBy(w.UID) {
		ref := snapshot.ControllerOf(p)
		if ref == nil || ref.UID != w.UID || p.Namespace != w.Namespace {
			continue
		}
		if sel != nil && !sel.Matches(labels.Set(p.Labels)) {
			continue
		}
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
