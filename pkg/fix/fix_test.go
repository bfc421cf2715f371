package fix

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

func TestFinalizerPatch(t *testing.T) {
	b, err := FinalizerPatch("uid-1", "42", 1, "example.com/cleanup")
	if err != nil {
		t.Fatal(err)
	}
	var ops []map[string]any
	if err := json.Unmarshal(b, &ops); err != nil {
		t.Fatal(err)
	}
	want := []map[string]any{
		{"op": "test", "path": "/metadata/uid", "value": "uid-1"},
		{"op": "test", "path": "/metadata/resourceVersion", "value": "42"},
		{"op": "test", "path": "/metadata/finalizers/1", "value": "example.com/cleanup"},
		{"op": "remove", "path": "/metadata/finalizers/1"},
	}
	if !reflect.DeepEqual(ops, want) {
		t.Errorf("patch = %s", b)
	}
}

func TestRequeuePatch(t *testing.T) {
	b, err := RequeuePatch("uid-1", "2026-01-02T03:04:05.000000006Z")
	if err != nil {
		t.Fatal(err)
	}
	want := `{"metadata":{"annotations":{"workloaddoctor.io/requeued-at":"2026-01-02T03:04:05.000000006Z"},"uid":"uid-1"}}`
	if string(b) != want {
		t.Errorf("patch = %s, want %s", b, want)
	}
}

func TestWriteFailure(t *testing.T) {
	ref := pod("ns", "p", "u", "1")
	gr := schema.GroupResource{Resource: "pods"}
	tests := []struct {
		err  error
		want Status
	}{
		{apierrors.NewConflict(gr, "p", errors.New("the object has been modified")), StatusRefused},
		{apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "p", nil), StatusRefused},
		{apierrors.NewGenericServerResponse(422, "patch", gr, "p", "testing value /metadata/resourceVersion failed", 0, false), StatusRefused},
		{apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0), StatusRefused},
		{apierrors.NewNotFound(gr, "p"), StatusAlreadyResolved},
		{apierrors.NewForbidden(gr, "p", errors.New("no")), StatusFailed},
		{errors.New("connection refused"), StatusFailed},
	}
	for _, tc := range tests {
		if got := WriteFailure("patch", ref, tc.err); got.Status != tc.want || got.Reason == "" {
			t.Errorf("WriteFailure(%v) = %+v, want %s", tc.err, got, tc.want)
		}
	}
}

func TestResultsDocumentAndSummary(t *testing.T) {
	rs := []Result{{Status: StatusApplied}, {Status: StatusAlreadyResolved}, {Status: StatusDryRun}}
	if !AllOK(rs) {
		t.Error("applied, already-resolved and dry-run must exit 0")
	}
	rs = append(rs, Result{Status: StatusRefused}, Result{Status: StatusFailed})
	if AllOK(rs) {
		t.Error("refused or failed must exit 3")
	}
	doc := NewDocument(DocumentMeta{DryRun: DryRunNone}, rs)
	want := Summary{Total: 5, Applied: 1, AlreadyResolved: 1, Refused: 1, Failed: 1, DryRun: 1}
	if doc.Summary != want || doc.Kind != ResultKind || doc.APIVersion != report.APIVersion {
		t.Errorf("document = %+v", doc)
	}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), `"findings":null`) {
		t.Errorf("findings must be [] not null: %s", b)
	}
}

func TestEventMessage(t *testing.T) {
	r := &Result{Action: "remove-finalizer", Status: StatusApplied, Reason: strings.Repeat("x", 2000), Findings: []string{"wd-1"}}
	if msg := eventMessage(r, "alice"); len(msg) > maxEventMessage || !strings.HasPrefix(msg, "kubectl-workloaddoctor fix remove-finalizer applied by alice: ") {
		t.Errorf("message (%d bytes) = %.80q", len(msg), msg)
	}
	if got := eventNameBase("Web-7"); got != "web-7." {
		t.Errorf("eventNameBase = %q", got)
	}
}

func TestParseDryRun(t *testing.T) {
	for in, want := range map[string]DryRun{"": DryRunNone, "none": DryRunNone, "client": DryRunClient, "server": DryRunServer} {
		if got, err := ParseDryRun(in); err != nil || got != want {
			t.Errorf("ParseDryRun(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParseDryRun("true"); err == nil {
		t.Error("ParseDryRun(true): want an error")
	}
}
