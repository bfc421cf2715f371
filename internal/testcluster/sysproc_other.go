//go:build unix && !linux

package testcluster

import "syscall"

// sysProcAttr puts a child in its own process group; only Linux has a parent-death signal.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
