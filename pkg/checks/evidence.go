package checks

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/duration"
)

// Helpers that word evidence the same way in every check.

// Age renders how long ago t was, the way kubectl shows ages ("12m", "3h4m").
func Age(now, t time.Time) string {
	if t.IsZero() {
		return "unknown"
	}
	return duration.HumanDuration(now.Sub(t))
}

// Evidencef formats one evidence line.
func Evidencef(format string, args ...any) string { return fmt.Sprintf(format, args...) }

// Truncate shortens s to n bytes at most, marking the cut.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// EventCount is how many times an event was seen: its count or its series' count, at least once.
func EventCount(e *corev1.Event) int32 {
	n := e.Count
	if e.Series != nil && e.Series.Count > n {
		n = e.Series.Count
	}
	return max(n, 1)
}
