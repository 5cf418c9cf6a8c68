//go:build unix

package main

import (
	"os"
	"syscall"
)

// execSelf replaces this process with a fresh one of the same program, arguments and
// environment (and childEnv): its open files close (Go opens them close-on-exec) and its device context
// goes with it.
func execSelf() error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	return syscall.Exec(exe, os.Args, append(os.Environ(), childEnv...))
}
