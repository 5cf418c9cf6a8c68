package main

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the worker process of a GPU end when its supervisor does, even when
// the supervisor is killed and cannot ask it to stop: a worker left behind would hold its
// GPU and train beside the next supervisor's.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
