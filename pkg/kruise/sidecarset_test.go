package kruise

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// The two forms UpdateSidecarSet (pkg/controller/sidecarset/sidecarset_processor.go, kruise
// v1.9.0) logs at V(3); the collector keeps them, the expectation parser skips them.
func TestInFlightLines(t *testing.T) {
	now := time.Date(2026, 6, 12, 12, 0, 0, 0, time.UTC)
	text := `2026-06-12T11:59:58.5Z I0612 11:59:58.123456       1 sidecarset_processor.go:108] "Sidecarset matched pods has some update in flight, will sync later" sidecarSet="mesh" pods=["shop/web-b"]
I0612 11:59:59.000000       1 sidecarset_processor.go:102] "Sidecarset matched pods has some update in flight, will sync later" pod="shop/web-c" duration=3.2
I0612 11:59:59.500000       1 sidecarset_processor.go:120] "SidecarSet was paused" sidecarSet="other"`
	ls := ParseInFlightLogs(text, now)
	if len(ls) != 2 || ls[0].SidecarSet != "mesh" || ls[1].Pod != "shop/web-c" {
		t.Fatalf("parsed %+v", ls)
	}
	if !ls[0].Time.Equal(time.Date(2026, 6, 12, 11, 59, 58, 500000000, time.UTC)) || ls[1].Time.IsZero() {
		t.Errorf("times %v %v", ls[0].Time, ls[1].Time)
	}
	if !IsSidecarSetInFlightLine(ls[0].Line) || IsSidecarSetInFlightLine(`"SidecarSet was paused"`) {
		t.Error("IsSidecarSetInFlightLine keeps the wrong lines")
	}
	if got := ParseExpectationLogs(text, now); len(got) != 0 {
		t.Errorf("expectation parser took %+v", got)
	}
}

func TestSidecarSetStrategy(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": Group + "/v1alpha1", "kind": "SidecarSet",
		"metadata": map[string]any{"name": "mesh", "annotations": map[string]any{AnnotationSidecarHash: "h2"}},
		"spec":     map[string]any{"updateStrategy": map[string]any{"type": "RollingUpdate", "paused": true, "partition": "50%"}},
		"status":   map[string]any{"matchedPods": int64(3), "updatedPods": int64(1), "readyPods": int64(3)}}}
	ss, err := SidecarSetFromUnstructured(u)
	if err != nil {
		t.Fatal(err)
	}
	// 50% of 3 rounds up (util.CalculatePartitionReplicas).
	if !ss.Strategy.Paused || ss.Strategy.Partition == nil || *ss.Strategy.Partition != 2 || ss.Status.UpdatedPods != 1 || ss.Hash() != "h2" {
		t.Errorf("decoded %+v %+v", ss.Strategy, ss.Status)
	}
}
