package kruisemanager

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
)

func progressWorkload(t *testing.T, deadline any, paused bool) *kruise.Workload {
	t.Helper()
	spec := map[string]any{"replicas": int64(2), "selector": map[string]any{"matchLabels": map[string]any{"app": "x"}},
		"updateStrategy": map[string]any{"paused": paused}}
	if deadline != nil {
		spec["progressDeadlineSeconds"] = deadline
	}
	w, err := kruise.WorkloadFromUnstructured(&unstructured.Unstructured{Object: map[string]any{
		"apiVersion": kruise.Group + "/v1alpha1", "kind": kruise.KindCloneSet,
		"metadata": map[string]any{"namespace": "ns", "name": "x"}, "spec": spec}})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// The stand-in's Progressing condition follows calculateProgressingStatus
// (pkg/controller/cloneset/cloneset_status.go, v1.9.0) step by step.
func TestProgressingCondition(t *testing.T) {
	now := time.Date(2026, 6, 12, 12, 0, 0, 0, time.UTC)
	w := progressWorkload(t, int64(30), false)
	reason := func(conds []any) string { return conds[len(conds)-1].(map[string]any)["reason"].(string) }
	rolling := progressCounts{replicas: 2, updated: 1, updatedAvailable: 0, expectedUpdated: 2, currentRevision: "x-1", updateRevision: "x-2"}

	// No condition yet: progressing, looked at again once the deadline passes.
	conds, requeue := progressing(w, w.ProgressDeadlineSeconds, nil, rolling, now)
	if reason(conds) != ReasonUpdated || requeue != 31*time.Second {
		t.Fatalf("got %s, requeue %s", reason(conds), requeue)
	}
	// Unchanged 31s later: the kept lastUpdateTime is past the deadline.
	conds, _ = progressing(w, w.ProgressDeadlineSeconds, conds, rolling, now.Add(31*time.Second))
	if c := conds[0].(map[string]any); c["reason"] != ReasonDeadlineExceeded || c["status"] != "False" {
		t.Fatalf("got %v", c)
	}
	// Once exceeded it stays so while the rollout is not done.
	conds, _ = progressing(w, w.ProgressDeadlineSeconds, conds, rolling, now.Add(32*time.Second))
	if reason(conds) != ReasonDeadlineExceeded {
		t.Fatalf("got %s", reason(conds))
	}
	done := progressCounts{replicas: 2, updated: 2, updatedAvailable: 2, expectedUpdated: 2, currentRevision: "x-2", updateRevision: "x-2"}
	if conds, _ = progressing(w, w.ProgressDeadlineSeconds, conds, done, now.Add(40*time.Second)); reason(conds) != ReasonAvailable {
		t.Fatalf("got %s", reason(conds))
	}
	// Paused: True/CloneSetPaused however long it waits.
	pw := progressWorkload(t, int64(30), true)
	if conds, _ = progressing(pw, pw.ProgressDeadlineSeconds, conds, rolling, now.Add(time.Hour)); reason(conds) != ReasonPaused {
		t.Fatalf("got %s", reason(conds))
	}
	// Without progressDeadlineSeconds the condition is removed, other conditions kept.
	nw := progressWorkload(t, nil, false)
	other := map[string]any{"type": "FailedUpdate", "status": "True"}
	if conds, _ = progressing(nw, nw.ProgressDeadlineSeconds, []any{other, conds[0]}, rolling, now); len(conds) != 1 || conds[0].(map[string]any)["type"] != "FailedUpdate" {
		t.Fatalf("got %v", conds)
	}
}
