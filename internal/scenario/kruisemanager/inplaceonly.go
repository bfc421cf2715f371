package kruisemanager

import (
	"fmt"
	"reflect"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
)

// inPlaceOnlyRefusal is the error an InPlaceOnly CloneSet's rollout stops with at the first pod
// whose update cannot be made in place (cloneset_update.go updatePod in kruise v1.9.0: "find Pod
// %s update strategy is InPlaceOnly but can not update in-place"), or "" when there is none. The
// stand-in updates no pod in place, and knows one change kruise cannot make in place: a
// container's resizePolicy (inplace_update_defaults.go defaultCalculateInPlaceUpdateSpec allows
// only images, resources and metadata). Pods are taken in name order, the partition honoured.
func inPlaceOnlyRefusal(w *kruise.Workload, active []*corev1.Pod, updateRevision string) string {
	if w.UpdateType != kruise.UpdateInPlaceOnly || w.Paused {
		return ""
	}
	var waiting []*corev1.Pod
	for _, p := range active {
		if p.Labels["controller-revision-hash"] != updateRevision {
			waiting = append(waiting, p)
		}
	}
	if w.Partition != nil && len(waiting) <= int(*w.Partition) {
		return ""
	}
	for _, p := range waiting {
		if !sameResizePolicies(p.Spec.Containers, w.Template.Spec.Containers) {
			return fmt.Sprintf("find Pod %s update strategy is InPlaceOnly but can not update in-place", p.Name)
		}
	}
	return ""
}

func sameResizePolicies(pod, tpl []corev1.Container) bool {
	want := map[string][]corev1.ContainerResizePolicy{}
	for _, c := range tpl {
		want[c.Name] = c.ResizePolicy
	}
	for _, c := range pod {
		if !reflect.DeepEqual(c.ResizePolicy, want[c.Name]) {
			return false
		}
	}
	return true
}

// setFailedUpdate sets the FailedUpdate condition in a status' conditions as kruise's
// SetCloneSetCondition does: one condition per type, its transition time kept while the message
// stays the same.
func setFailedUpdate(conds any, msg string) []any {
	list, _ := conds.([]any)
	out := make([]any, 0, len(list)+1)
	now := time.Now().UTC().Format(time.RFC3339)
	for _, c := range list {
		m, ok := c.(map[string]any)
		if !ok || m["type"] != "FailedUpdate" {
			out = append(out, c)
			continue
		}
		if m["message"] == msg && m["status"] == "True" {
			now, _ = m["lastTransitionTime"].(string)
		}
	}
	return append(out, map[string]any{"type": "FailedUpdate", "status": "True", "lastTransitionTime": now, "message": msg})
}
