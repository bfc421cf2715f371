package main

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestWriteBundle writes the capture's medians, the archive's size and the offline scan against
// the live one, the captures that did not read everything; a capture that failed is a row saying so.
func TestWriteBundle(t *testing.T) {
	capture := func(wall time.Duration) sample {
		return sample{wall: wall, reads: apiReads{requests: 50, bytes: 40e6}}
	}
	ok := result{pods: 1000, scan: []sample{{wall: 4 * time.Second}, {wall: 6 * time.Second}, {wall: 5 * time.Second}}, bundle: bundleResult{
		capture: []sample{capture(10 * time.Second), capture(12 * time.Second), capture(11 * time.Second)}, size: []int64{30e6, 32e6, 31e6},
		offline:  []sample{{wall: time.Second}, {wall: 3 * time.Second}, {wall: 2 * time.Second}},
		captured: scanSummary{byCheck: map[string]int{"stuck-terminating": 2}}, offlineFindings: scanSummary{byCheck: map[string]int{"stuck-terminating": 2}},
		incomplete: []string{"run 1 (stuck-terminating: pods not read)"},
	}}
	failed := result{pods: 2000, bundle: bundleResult{err: "capture -A: exit 1"}}
	var b strings.Builder
	writeBundle(func(f string, a ...any) { fmt.Fprintf(&b, f, a...) }, []result{ok, failed})
	out := b.String()
	for _, want := range []string{
		"| 1000 | 11.0 s | 50 | 40.0 MB | 0 MiB | 31.0 MB | 2.00 s |", "| 5.00 s | 0.400 | stuck-terminating 2; stuck-terminating 2 |",
		"| 2000 | failed: capture -A: exit 1 |",
		"At 1000 pods these captures' scans did not read every input (their archives hold less): run 1 (stuck-terminating: pods not read).",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
}
