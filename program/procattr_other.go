//go:build !linux

package program

import "syscall"

// procAttr starts a program in its own process group, so that ending it ends every
// process it started.
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
