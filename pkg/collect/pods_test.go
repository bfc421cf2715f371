package collect

import (
	"testing"
)

func TestMetadataFields(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:containers":{}},"f:status":{"f:podIPs":{}}}`, `{"f:metadata":{"f:labels":{"f:app":{}}}}`},
		{`{"f:status":{"f:phase":{}}}`, `{}`},
		{`not json`, `not json`},
	} {
		if got := string(metadataFields([]byte(tc.in))); got != tc.want {
			t.Errorf("metadataFields(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
}
