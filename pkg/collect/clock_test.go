package collect

import (
	"context"
	"net/http"
	"testing"
	"time"
)

// A scan's Now follows the apiserver's Date when the local clock is off by more than the
// header's precision, and stays local otherwise.
func TestServerDateNow(t *testing.T) {
	answer := func(d *ServerDate, date time.Time) {
		t.Helper()
		req, err := http.NewRequestWithContext(WithServerDate(context.Background(), d), http.MethodGet, "https://apiserver/api/v1/pods", nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := RecordServerDate(stubTransport{date: date.UTC().Format(http.TimeFormat)}).RoundTrip(req); err != nil {
			t.Fatal(err)
		}
	}
	server := time.Now().Truncate(time.Second)
	for _, tc := range []struct {
		name       string
		local      time.Time
		wantOffset time.Duration
	}{
		{"local clock an hour ahead", server.Add(time.Hour), -time.Hour},
		{"local clock ten minutes behind", server.Add(-10 * time.Minute), 10 * time.Minute},
		{"agreeing to the second", server.Add(300 * time.Millisecond), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var d ServerDate
			answer(&d, server)
			now, offset := d.Now(tc.local)
			if (tc.wantOffset == 0) != (offset == 0) || (offset-tc.wantOffset).Abs() > 2*time.Second {
				t.Errorf("offset %v, want %v", offset, tc.wantOffset)
			}
			want := tc.local
			if tc.wantOffset != 0 {
				want = server
			}
			if diff := now.Sub(want); diff < -2*time.Second || diff > 2*time.Second {
				t.Errorf("now %v, want about %v", now, want)
			}
		})
	}
	t.Run("no Date: the local clock", func(t *testing.T) {
		var d ServerDate
		local := server.Add(time.Hour)
		if now, offset := d.Now(local); !now.Equal(local) || offset != 0 {
			t.Errorf("got %v %v, want the local clock and no offset", now, offset)
		}
	})
}
