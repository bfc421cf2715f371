package collect

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/kruise"
	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/snapshot"
)

// stubTransport answers every request with the given Date header.
type stubTransport struct{ date string }

func (s stubTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	h := http.Header{}
	if s.date != "" {
		h.Set("Date", s.date)
	}
	return &http.Response{StatusCode: http.StatusOK, Header: h, Body: http.NoBody, Request: req}, nil
}

func TestRecordServerDate(t *testing.T) {
	at := time.Date(2026, 6, 12, 12, 0, 7, 0, time.UTC)
	send := func(date string, record bool) time.Time {
		var d ServerDate
		ctx := context.Background()
		if record {
			ctx = WithServerDate(ctx, &d)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://apiserver/apis/coordination.k8s.io/v1/namespaces/kruise-system/leases/kruise-manager", nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := RecordServerDate(stubTransport{date: date}).RoundTrip(req); err != nil {
			t.Fatal(err)
		}
		return d.Time()
	}
	if got := send(at.Format(http.TimeFormat), true); !got.Equal(at) {
		t.Errorf("recorded %v, want the Date header %v", got, at)
	}
	if got := send("", true); !got.IsZero() {
		t.Errorf("recorded %v from a response without Date", got)
	}
	if got := send(at.Format(http.TimeFormat), false); !got.IsZero() {
		t.Errorf("recorded %v for a request that did not ask", got)
	}
}

func TestCollectReadsTheLeaderLeaseTwice(t *testing.T) {
	c := newFakeCluster(t, manager(true)...)
	s := collect(t, c, Options{Scope: snapshot.Scope{Namespace: "shop"}}, snapshot.InputControllers)
	reads := s.LeaseReads["kruise-system/"+kruise.DefaultLeaderElectionID]
	if len(reads) != 2 || len(s.Leases) != 1 {
		t.Fatalf("%d reads of the leader Lease and %d Leases in the snapshot, want 2 and 1", len(reads), len(s.Leases))
	}
	if reads[1].Elapsed < reads[0].Elapsed {
		t.Errorf("the second read (%s) is before the first (%s)", reads[1].Elapsed, reads[0].Elapsed)
	}
	gets := 0
	for _, a := range c.kube.Actions() {
		if a.Matches("get", "leases") {
			gets++
		}
	}
	if gets != 2 {
		t.Errorf("%d GETs of the Lease, want 2", gets)
	}
	if len(unread(s)) != 0 {
		t.Errorf("unread = %v", unread(s))
	}

	// No Lease: no leader took it. Nothing is read again and nothing is unread.
	objs := manager(true)
	c = newFakeCluster(t, objs[0], objs[2])
	s = collect(t, c, Options{Scope: snapshot.Scope{Namespace: "shop"}}, snapshot.InputControllers)
	if len(s.LeaseReads) != 0 || len(s.Leases) != 0 || len(unread(s)) != 0 {
		t.Errorf("without a Lease: reads %v, leases %d, unread %v", s.LeaseReads, len(s.Leases), unread(s))
	}
}
