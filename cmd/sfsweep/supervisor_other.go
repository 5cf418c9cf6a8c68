//go:build !linux

package main

import "os/exec"

// dieWithParent does nothing where the system cannot end a process with its parent.
func dieWithParent(*exec.Cmd) {}
