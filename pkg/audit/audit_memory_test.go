package audit

import (
	"context"
	"runtime"
	"testing"

	"github.com/workloaddoctor/kubectl-workloaddoctor/pkg/report"
)

// garbageSize stands for a scan's snapshot: memory a cycle allocates and drops once its report
// exists.
const garbageSize = 64 << 20

// sink keeps the garbage reachable until the scan returns, as the collector keeps its snapshot.
var sink []byte

// A cycle leaves neither its garbage in the heap nor the freed pages in the process: the auditor
// idles for its interval at what stays live, and the next cycle starts from there, as a scan does.
func TestCycleReturnsItsMemory(t *testing.T) {
	scan := func(context.Context) (*report.Report, error) {
		sink = make([]byte, garbageSize)
		for i := 0; i < len(sink); i += 4096 {
			sink[i] = 1 // touch every page, so they are resident
		}
		sink = nil
		return newReport(looked), nil
	}
	a, err := New(Options{Scan: scan, Interval: 1, Metrics: NewMetrics()})
	if err != nil {
		t.Fatal(err)
	}
	// A collection right before the cycle, so that none is due while it runs.
	runtime.GC()
	if c := a.RunCycle(context.Background()); c.Failed() {
		t.Fatalf("cycle failed: %v", c.Err)
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if ms.HeapInuse >= garbageSize/2 {
		t.Errorf("heap in use after the cycle is %d MiB: the cycle's %d MiB of garbage is still there", ms.HeapInuse>>20, garbageSize>>20)
	}
	if kept := ms.HeapIdle - ms.HeapReleased; kept >= garbageSize/2 {
		t.Errorf("the process keeps %d MiB of free heap after the cycle: its pages were not returned to the OS", kept>>20)
	}
}
