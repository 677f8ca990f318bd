//go:build !linux

package framework

import "syscall"

// sysProcAttr returns no special attributes where Pdeathsig is unavailable.
func sysProcAttr() *syscall.SysProcAttr { return nil }
