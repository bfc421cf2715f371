package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestFleetReportRoundTrip(t *testing.T) {
	a := &Report{Metadata: Metadata{Context: "prod-a", ClusterID: "uid-a", ServerVersion: "v1.37.1"},
		Findings: []Finding{{Check: "stuck-terminating", Severity: SeverityError, Object: ObjectRef{APIVersion: "v1", Kind: "Pod", Namespace: "shop", Name: "web-0", UID: "pod-a"}}}}
	b := &Report{Metadata: Metadata{Context: "prod-b", ClusterID: "uid-b"},
		Findings: []Finding{{Check: "stuck-terminating", Severity: SeverityWarning, Object: ObjectRef{APIVersion: "v1", Kind: "Pod", Namespace: "shop", Name: "web-0", UID: "pod-b"}}}}
	a.Normalize()
	b.Normalize()
	var f FleetReport
	f.Add(ClusterResult{Context: "prod-b", Status: ClusterScanned}, b)
	f.Add(ClusterResult{Context: "prod-c", Status: ClusterUnreachable, Error: "connection refused"}, nil)
	f.Add(ClusterResult{Context: "prod-a", Status: ClusterScanned}, a)
	f.Normalize()
	if f.Summary.Total != 2 || f.Summary.Error != 1 || f.Clusters[0].Context != "prod-a" || f.Findings[0].Context != "prod-a" {
		t.Fatalf("normalized fleet: %+v", f)
	}
	data, err := json.Marshal(&f)
	if err != nil {
		t.Fatal(err)
	}
	// A finding's fields sit beside its context, not under a nested key.
	if !strings.Contains(string(data), `{"context":"prod-a","id":"`+a.Findings[0].ID+`"`) {
		t.Errorf("finding not flattened: %s", data)
	}
	rep, fleet, err := ReadDocument("-", bytes.NewReader(data))
	if err != nil || rep != nil || fleet == nil {
		t.Fatalf("ReadDocument: %v, %v, %v", rep, fleet, err)
	}
	got, err := fleet.ContextReport("prod-b")
	if err != nil {
		t.Fatal(err)
	}
	if got.Metadata.ClusterID != "uid-b" || got.Metadata.Context != "prod-b" || len(got.Findings) != 1 || got.Findings[0].Object.UID != "pod-b" || got.Summary.Warning != 1 {
		t.Errorf("prod-b's report: %+v", got)
	}
	if _, err := fleet.ContextReport("prod-c"); err == nil || !strings.Contains(err.Error(), "not scanned") {
		t.Errorf("unreachable context: %v", err)
	}
	if _, err := fleet.ContextReport("prod-z"); err == nil {
		t.Error("unknown context gave a report")
	}
	// A plain Report still reads as one.
	plain, _ := json.Marshal(a)
	if rep, fleet, err := ReadDocument("-", bytes.NewReader(plain)); err != nil || rep == nil || fleet != nil || rep.Metadata.ClusterID != "uid-a" {
		t.Errorf("plain report: %v %v %v", rep, fleet, err)
	}
}
