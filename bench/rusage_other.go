//go:build !linux

package main

import "os"

// maxRSS is unknown off Linux: ru_maxrss is in bytes on macOS and absent elsewhere.
func maxRSS(*os.ProcessState) int64 { return 0 }
