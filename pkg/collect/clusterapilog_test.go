package collect

import (
	"fmt"
	"strings"
	"testing"
)

func TestRefusedFinalizerLinesKeepsOnlyRefusalsNewestFirst(t *testing.T) {
	var in strings.Builder
	for i := range maxCAPILines + 20 {
		fmt.Fprintf(&in, "2026-06-12T11:00:%02dZ I0612 reconciling Machine fleet/m-%d\n", i%60, i)
		fmt.Fprintf(&in, "2026-06-12T11:00:%02dZ E0612 \"Reconciler error\" err=\"Machine.cluster.x-k8s.io \\\"m-%d\\\" is invalid: "+
			"metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted\"\n", i%60, i)
	}
	lines, err := refusedFinalizerLines(strings.NewReader(in.String()))
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != maxCAPILines || !strings.Contains(lines[0], `m-20\`) || !strings.Contains(lines[len(lines)-1], fmt.Sprintf(`m-%d\`, maxCAPILines+19)) {
		t.Fatalf("kept %d lines, first %q, last %q", len(lines), lines[0], lines[len(lines)-1])
	}
	for _, l := range lines {
		if strings.Contains(l, "reconciling") {
			t.Fatalf("kept a line without the refusal: %q", l)
		}
	}
}
