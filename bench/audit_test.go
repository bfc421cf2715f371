package main

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// The auditor's lines are written by slog's JSON handler, as pkg/cmd sets it up.
func TestParseCycleLine(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	log.Info("serving", slog.String("metrics", "127.0.0.1:1"))
	log.Info("scan", slog.Duration("duration", 1500*time.Millisecond), slog.Int64("requests", 42), slog.Int("findings", 3))
	log.Error("scan failed; keeping the last good outputs", slog.Duration("duration", time.Second), slog.Int64("requests", 7))
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("want 3 lines, got %q", lines)
	}
	if _, ok := parseCycleLine(lines[0]); ok {
		t.Errorf("the serving line was taken for a cycle")
	}
	c, ok := parseCycleLine(lines[1])
	if !ok || c.duration != 1500*time.Millisecond || c.requests != 42 || c.failed {
		t.Errorf("good cycle: got %+v, %v", c, ok)
	}
	c, ok = parseCycleLine(lines[2])
	if !ok || !c.failed || c.requests != 7 || c.duration != time.Second {
		t.Errorf("failed cycle: got %+v, %v", c, ok)
	}
	if _, ok := parseCycleLine("not json"); ok {
		t.Errorf("a line that is not JSON was taken for a cycle")
	}
}
