package kruise

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Partitions resolve as the v1.9.0 controllers resolve them: a CloneSet's through
// util.CalculatePartitionReplicas (percent rounded up, below 100% never all pods), an Advanced
// DaemonSet's against status.desiredNumberScheduled rounded down (daemonset_update.go).
func TestWorkloadPartition(t *testing.T) {
	tests := []struct {
		name      string
		kind      string
		partition any
		replicas  int64
		want      int32 // -1: none
	}{
		{"cloneset integer", KindCloneSet, int64(2), 3, 2},
		{"cloneset percent rounds up", KindCloneSet, "50%", 3, 2},
		{"cloneset 1% keeps one pod", KindCloneSet, "1%", 10, 1},
		{"cloneset 99% still updates one pod", KindCloneSet, "99%", 3, 2},
		{"cloneset 100% keeps all", KindCloneSet, "100%", 3, 3},
		{"cloneset unparsable counts as none", KindCloneSet, "half", 3, -1},
		{"daemonset percent rounds down", KindDaemonSet, "50%", 3, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := map[string]any{"replicas": tt.replicas, "updateStrategy": map[string]any{"type": UpdateInPlaceIfPossible, "partition": tt.partition}}
			status := map[string]any{}
			if tt.kind == KindDaemonSet {
				spec = map[string]any{"updateStrategy": map[string]any{"type": "RollingUpdate",
					"rollingUpdate": map[string]any{"rollingUpdateType": UpdateInPlaceIfPossible, "partition": tt.partition}}}
				status["desiredNumberScheduled"] = tt.replicas
			}
			w, err := WorkloadFromUnstructured(&unstructured.Unstructured{Object: map[string]any{
				"apiVersion": Group + "/v1alpha1", "kind": tt.kind,
				"metadata": map[string]any{"name": "web", "namespace": "shop"}, "spec": spec, "status": status}})
			if err != nil {
				t.Fatal(err)
			}
			got := int32(-1)
			if w.Partition != nil {
				got = *w.Partition
			}
			if got != tt.want {
				t.Errorf("partition = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestStatefulSetUnorderedUpdate(t *testing.T) {
	for _, unordered := range []bool{false, true} {
		ru := map[string]any{"podUpdatePolicy": UpdateInPlaceIfPossible, "partition": int64(1)}
		if unordered {
			ru["unorderedUpdate"] = map[string]any{}
		}
		w, err := WorkloadFromUnstructured(&unstructured.Unstructured{Object: map[string]any{
			"apiVersion": Group + "/v1beta1", "kind": KindStatefulSet, "metadata": map[string]any{"name": "web"},
			"spec": map[string]any{"updateStrategy": map[string]any{"type": "RollingUpdate", "rollingUpdate": ru}}}})
		if err != nil {
			t.Fatal(err)
		}
		if w.UnorderedUpdate != unordered || w.Partition == nil || *w.Partition != 1 {
			t.Errorf("unordered %v: decoded UnorderedUpdate %v, partition %v", unordered, w.UnorderedUpdate, w.Partition)
		}
	}
}

// An Advanced DaemonSet names its rolling update's kind in rollingUpdate.rollingUpdateType
// (RollingUpdateDaemonSet, apis/apps/v1alpha1/daemonset_types.go, kruise v1.9.0): Standard
// recreates pods, InPlaceIfPossible updates them in place.
func TestDaemonSetUpdateType(t *testing.T) {
	for _, tt := range []struct{ strategy, rollingUpdateType, want string }{
		{"RollingUpdate", "", UpdateReCreate},
		{"RollingUpdate", "Standard", UpdateReCreate},
		{"RollingUpdate", UpdateInPlaceIfPossible, UpdateInPlaceIfPossible},
		{UpdateOnDelete, UpdateInPlaceIfPossible, UpdateOnDelete},
	} {
		w, err := WorkloadFromUnstructured(&unstructured.Unstructured{Object: map[string]any{
			"apiVersion": Group + "/v1alpha1", "kind": KindDaemonSet, "metadata": map[string]any{"name": "agent"},
			"spec": map[string]any{"updateStrategy": map[string]any{"type": tt.strategy,
				"rollingUpdate": map[string]any{"rollingUpdateType": tt.rollingUpdateType, "paused": true}}}}})
		if err != nil {
			t.Fatal(err)
		}
		if w.UpdateType != tt.want || !w.Paused {
			t.Errorf("%s/%q: UpdateType %q paused %v, want %q paused", tt.strategy, tt.rollingUpdateType, w.UpdateType, w.Paused, tt.want)
		}
	}
}
