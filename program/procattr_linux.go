package program

import "syscall"

// procAttr starts a program in its own process group, so that ending it ends every
// process it started; and, on Linux, killed with its worker: a worker SIGKILLed cannot end
// its program, so the kernel does (the program's own children are the program's to end).
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
