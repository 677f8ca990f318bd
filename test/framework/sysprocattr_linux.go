package framework

import "syscall"

// sysProcAttr makes the kernel kill the shard when the test process dies, so
// a test binary that times out leaves no shard behind.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
