package collect

import (
	"context"
	"net/http"
	"testing"
	"time"
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
