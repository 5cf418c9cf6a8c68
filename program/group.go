package program

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"syscall"
	"time"
)

// groupPoll is how often ending a program looks at its process group.
const groupPoll = 20 * time.Millisecond

// groupGone bounds the wait, after SIGKILL, for the kernel to remove a group's processes.
const groupGone = 10 * time.Second

// proc is a started program: its process group (the program is its leader) and the result
// of its Wait.
type proc struct {
	pgid   int
	grace  time.Duration
	done   <-chan error
	exited bool
	err    error
}

// end ends the group: SIGTERM to all of it, up to grace for every process to exit, then
// SIGKILL to what is left.
func (p *proc) end() {
	syscall.Kill(-p.pgid, syscall.SIGTERM)
	deadline := time.Now().Add(p.grace)
	for time.Now().Before(deadline) {
		if !p.exited {
			select {
			case p.err = <-p.done:
				p.exited = true
			case <-time.After(groupPoll):
			}
			continue
		}
		if !groupAlive(p.pgid) {
			return
		}
		time.Sleep(groupPoll)
	}
	syscall.Kill(-p.pgid, syscall.SIGKILL)
}

// wait waits for the program to exit and, bounded by groupGone, for its group to be gone.
func (p *proc) wait() {
	if !p.exited {
		p.err = <-p.done
		p.exited = true
	}
	for deadline := time.Now().Add(groupGone); groupAlive(p.pgid) && time.Now().Before(deadline); {
		time.Sleep(groupPoll)
	}
}

// groupAlive reports whether a process of group pgid is still running. kill(2) also finds
// zombies, which only their parent can remove (an orphan's is init, which need not reap
// promptly), so where /proc shows the group they do not count.
func groupAlive(pgid int) bool {
	if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return true
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if g, running := procStat(pid); running && g == pgid {
			return true
		}
	}
	return false
}

// procStat returns the process group of pid and whether it is running (not a zombie),
// from /proc/pid/stat.
func procStat(pid int) (pgid int, running bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	i := bytes.LastIndexByte(b, ')') // the command name may hold spaces and parentheses
	if i < 0 {
		return 0, false
	}
	f := bytes.Fields(b[i+1:]) // state, ppid, pgrp, ...
	if len(f) < 3 {
		return 0, false
	}
	g, err := strconv.Atoi(string(f[2]))
	if err != nil {
		return 0, false
	}
	return g, f[0][0] != 'Z' && f[0][0] != 'X'
}
