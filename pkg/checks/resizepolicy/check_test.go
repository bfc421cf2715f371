package resizepolicy

import (
	"fmt"
	"strings"
	"testing"
)

func TestResizePolicyQuoteEvent(t *testing.T) {
	msg := fmt.Sprintf("failed to update pod p in-place(revision r): "+forbidden, "p")
	got := quoteEvent(msg)
	if want := `failed to update pod p in-place(revision r): Pod "p" is invalid: spec: Forbidden: pod updates may not change fields other than ...`; got != want {
		t.Errorf("quoteEvent = %q, want %q", got, want)
	}
	long := strings.Repeat("x", 1000)
	if got := quoteEvent(long); len(got) > maxQuote+4 {
		t.Errorf("quote not bounded: %d bytes", len(got))
	}
}
