package testcluster

import "syscall"

// sysProcAttr puts a child in its own process group (so stopping it also stops anything it forks)
// and has the kernel SIGKILL it when its parent thread dies, so a killed test binary leaks nothing.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
