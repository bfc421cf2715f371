package main

import (
	"fmt"
	"math"
	"strings"
)

// writeAudit writes the auditor's section of the results: its memory against the scan's and the
// 300 MiB target, its growth over the cycles, and each cycle's cost to the apiserver against one
// scan's.
func writeAudit(b *strings.Builder, results []result) {
	w := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	var measured []result
	for _, r := range results {
		if len(r.audit.cycles) > 0 {
			measured = append(measured, r)
		}
	}
	if len(measured) == 0 {
		return
	}
	a0 := measured[0].audit
	w("\n## The auditor (`audit -A --interval %s --reports none`, %d cycles)\n\n", a0.interval, len(a0.cycles))
	w("The plugin's `audit` command runs as a child process against the same cluster after the scans, until it has logged %d cycles; "+
		"after each cycle's log line the benchmark reads the child's RSS (`/proc/PID/status` VmRSS) and its heap in use and goroutines "+
		"(`go_memstats_heap_inuse_bytes`, `go_memstats_heap_alloc_bytes`, `go_goroutines` on its /metrics); the auditor collects its garbage and returns it to the OS before that line, "+
		"so when the cycle is shorter than the interval the heap sampled is what stays live between cycles, the figure that shows growth. Peak RSS is the child's whole life, from the OS (`wait4`). "+
		"Requests per cycle, from the apiserver's metrics: the reads (GET, LIST, WATCH) between the ends of cycle 1 and cycle %d divided by %d (the target's figure; "+
		"the writes in that time are not the auditor's, which writes nothing with `--reports none`, but the control plane's own, and are shown apart; "+
		"less the control plane's own reads in that time, such as the Lease read before each renewal, at the rate counted in the %s before the child started, "+
		"and judged rounded to whole requests), "+
		"and from the child's start to its end divided by %d (startup included); and the auditor's own count of each cycle's requests (median). "+
		"The scan's is the median above. CPU per cycle is the child's CPU time (user and system, from `wait4`) over its whole life divided by %d.\n\n",
		len(a0.cycles), len(a0.cycles), len(a0.cycles)-1, quietWindow, len(a0.cycles), len(a0.cycles))
	w("| pods | scan: peak RSS | audit: peak RSS | audit / scan | audit < 300 MiB | heap in use, cycle 2 -> %d | heap allocated, cycle 2 -> %d | goroutines, cycle 2 -> %d | "+
		"reads per cycle (apiserver) | control plane's own reads per second | writes in that time (not the auditor's) | requests per cycle, startup included | auditor's count per cycle | scan: requests | per cycle / scan (target <= 1) | cycle wall (median) | CPU per cycle | scan: CPU | failed cycles |\n", len(a0.cycles), len(a0.cycles), len(a0.cycles))
	w("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range measured {
		a := r.audit
		n := len(a.cycles)
		second, last := a.cycles[min(1, n-1)], a.cycles[n-1]
		scanRSS, scanReq := median(r.scan, rssOf), median(r.scan, reqOf)
		withStartup := float64(a.reads.requests) / float64(n)
		perCycle := withStartup
		if n > 1 {
			// Less the control plane's own reads in that time (and the benchmark's scrape at
			// the first cycle's end), at the rate measured before the child started.
			own := a.background * a.steadyTime.Seconds()
			perCycle = (float64(a.steady.requests-a.steady.writes-1) - own) / float64(n-1)
		}
		own := median(a.cycles, func(c auditCycle) float64 { return float64(c.requests) })
		failed := 0
		for _, c := range a.cycles {
			if c.failed {
				failed++
			}
		}
		w("| %d | %s | %s | %.2f | %s | %s -> %s (%+.0f%%) | %s -> %s | %.0f -> %.0f | %.1f | %.2f | %d | %.1f | %.0f | %.0f | %.2f %s | %s | %s | %s | %d |\n", r.pods,
			mib(int64(scanRSS)), mib(a.peakRSS), ratio(float64(a.peakRSS), scanRSS), verdict(a.peakRSS < 300<<20),
			mib(int64(second.heap)), mib(int64(last.heap)), 100*(ratio(last.heap, second.heap)-1), mib(int64(second.alloc)), mib(int64(last.alloc)),
			second.goroutines, last.goroutines,
			perCycle, a.background, a.steady.writes, withStartup, own, scanReq, ratio(perCycle, scanReq), verdict(math.Round(perCycle) <= scanReq),
			secs(median(a.cycles, func(c auditCycle) float64 { return c.duration.Seconds() })),
			secs(a.cpu.Seconds()/float64(n)), secs(median(r.scan, cpuOf)), failed)
	}
	last := measured[len(measured)-1]
	w("\nEach cycle at %d pods (samples taken right after the cycle's log line; with a cycle longer than the interval the next one has already begun):\n\n", last.pods)
	w("| cycle | wall | requests (auditor's count) | RSS | heap in use | heap allocated | goroutines |\n|---:|---:|---:|---:|---:|---:|---:|\n")
	for i, c := range last.audit.cycles {
		w("| %d | %s | %d | %s | %s | %s | %.0f |\n", i+1, secs(c.duration.Seconds()), c.requests, mib(c.rss), mib(int64(c.heap)), mib(int64(c.alloc)), c.goroutines)
	}
}
