package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// watchMemory cancels ctx when the machine's available memory drops below min: the control plane,
// kubectl and the scan share it with whatever else runs there, and the benchmark would rather stop
// than push the machine into the OOM killer.
func watchMemory(ctx context.Context, min int64) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if avail := memAvailable(); avail > 0 && avail < min {
					cancel(fmt.Errorf("stopped: only %s of memory left available on the machine", mib(avail)))
					return
				}
			}
		}
	}()
	return ctx, func() { close(done); cancel(nil) }
}

// memAvailable is MemAvailable from /proc/meminfo in bytes, 0 if unknown.
func memAvailable() int64 {
	raw, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemAvailable:" {
			kib, _ := strconv.ParseInt(f[1], 10, 64)
			return kib << 10
		}
	}
	return 0
}
