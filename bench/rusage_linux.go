package main

import (
	"os"
	"syscall"
)

// maxRSS is the child's peak resident set size in bytes (Linux reports ru_maxrss in KiB).
func maxRSS(ps *os.ProcessState) int64 {
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		return ru.Maxrss * 1024
	}
	return 0
}
