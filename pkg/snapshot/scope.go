package snapshot

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
)

// InScope reports whether an object's labels match the scan's label selector (always, without
// one). A selector that does not parse matches nothing: the collector already refused it.
func (s Scope) InScope(l map[string]string) bool {
	if s.LabelSelector == "" {
		return true
	}
	sel, err := labels.Parse(s.LabelSelector)
	return err == nil && sel.Matches(labels.Set(l))
}

// PodsComplete reports whether the scan read every pod a workload's own selector selects, so its
// controller's counts can be redone: always without a label selector; with one, only when every
// pod the workload selects is bound to match it, that is when each requirement of the scan's
// selector is decided by a label the workload's selector fixes (matchLabels, or an In
// expression of one value) and holds for that value.
func (s Scope) PodsComplete(w *kruise.Workload) bool {
	if s.LabelSelector == "" {
		return true
	}
	return SelectorImplies(w.Selector, s.LabelSelector)
}

// SelectorImplies reports whether every set of labels the workload selector matches also
// matches the label selector text.
func SelectorImplies(ws *metav1.LabelSelector, selector string) bool {
	sel, err := labels.Parse(selector)
	if err != nil || ws == nil {
		return false
	}
	fixed := map[string]string{}
	for k, v := range ws.MatchLabels {
		fixed[k] = v
	}
	for _, e := range ws.MatchExpressions {
		if e.Operator == metav1.LabelSelectorOpIn && len(e.Values) == 1 {
			if v, ok := fixed[e.Key]; ok && v != e.Values[0] {
				return true // selects nothing: nothing can be cut
			}
			fixed[e.Key] = e.Values[0]
		}
	}
	reqs, _ := sel.Requirements()
	for _, r := range reqs {
		v, ok := fixed[r.Key()]
		if !ok {
			// A key the workload does not fix: some of its pods may carry any value, or none.
			return false
		}
		if !r.Matches(labels.Set{r.Key(): v}) {
			return false
		}
	}
	return true
}

// PodsCut lists the workloads of the snapshot whose pods the label selector may have cut: their
// controllers' counts cannot be redone, so they are not judged on them.
func (s *Snapshot) PodsCut() []*kruise.Workload {
	var out []*kruise.Workload
	for _, w := range s.Workloads {
		if !s.Scope.PodsComplete(w) {
			out = append(out, w)
		}
	}
	return out
}
