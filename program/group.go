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

// proc is a started program: its process group (the program is its leader), the result
// of its Wait, and the processes it started that left its group.
type proc struct {
	pgid   int
	grace  time.Duration
	done   <-chan error
	exited bool
	err    error
	// strays are the program's descendants in a session or group of their own (torch ≥ 2
	// starts each rank of torchrun so), by pid, with their start times: a signal to the
	// group misses them, and once their parent is gone no parent links them to the
	// program, so they are kept from when they were first seen (watch).
	strays map[int]uint64
}

// watch records the program's descendants outside its group. Run calls it every poll, so
// that a process that leaves the group is known before its parent can exit.
func (p *proc) watch() {
	for pid, start := range descendants(p.pgid, p.pgid, p.strays) {
		if p.strays == nil {
			p.strays = map[int]uint64{}
		}
		p.strays[pid] = start
	}
}

// alive reports whether a process of the group, or a stray, is still running.
func (p *proc) alive() bool {
	if groupAlive(p.pgid) {
		return true
	}
	for pid, start := range p.strays {
		if s, running := procStart(pid); running && s == start {
			return true
		}
	}
	return false
}

// signal sends sig to the group and to every stray still running as the process seen.
func (p *proc) signal(sig syscall.Signal) {
	syscall.Kill(-p.pgid, sig)
	for pid, start := range p.strays {
		if s, running := procStart(pid); running && s == start {
			syscall.Kill(pid, sig)
		}
	}
}

// end ends the group and its strays: SIGTERM to all of it, up to grace for every process
// to exit, then SIGKILL to what is left.
func (p *proc) end() {
	p.watch()
	p.signal(syscall.SIGTERM)
	deadline := time.Now().Add(p.grace)
	for time.Now().Before(deadline) {
		if !p.exited {
			p.watch() // a rank started as its launcher was ending
			select {
			case p.err = <-p.done:
				p.exited = true
			case <-time.After(groupPoll):
			}
			continue
		}
		if !p.alive() {
			return
		}
		time.Sleep(groupPoll)
	}
	p.watch()
	p.signal(syscall.SIGKILL)
}

// wait waits for the program to exit and, bounded by groupGone, for its group and strays
// to be gone.
func (p *proc) wait() {
	if !p.exited {
		p.err = <-p.done
		p.exited = true
	}
	for deadline := time.Now().Add(groupGone); p.alive() && time.Now().Before(deadline); {
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
	st, ok := readStat(pid)
	return st.pgid, ok && st.running
}

// procStart returns the start time of pid (in clock ticks since boot, which tells it
// from a later process given the same pid) and whether it is running.
func procStart(pid int) (start uint64, running bool) {
	st, ok := readStat(pid)
	return st.start, ok && st.running
}

// stat is what /proc/pid/stat says of a process.
type stat struct {
	ppid, pgid int
	start      uint64
	running    bool // not a zombie
}

func readStat(pid int) (stat, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return stat{}, false
	}
	i := bytes.LastIndexByte(b, ')') // the command name may hold spaces and parentheses
	if i < 0 {
		return stat{}, false
	}
	f := bytes.Fields(b[i+1:]) // state, ppid, pgrp, session, ..., starttime (the 20th)
	if len(f) < 20 {
		return stat{}, false
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	pgid, err2 := strconv.Atoi(string(f[2]))
	start, err3 := strconv.ParseUint(string(f[19]), 10, 64)
	if err1 != nil || err2 != nil || err3 != nil {
		return stat{}, false
	}
	return stat{ppid: ppid, pgid: pgid, start: start, running: f[0][0] != 'Z' && f[0][0] != 'X'}, true
}

// descendants are the running processes outside group pgid that descend from root or
// from a process of known (a pid and its start time), by pid with their start times,
// from /proc; none where there is no /proc.
func descendants(root, pgid int, known map[int]uint64) map[int]uint64 {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	stats := map[int]stat{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := readStat(pid); ok && st.running {
			stats[pid] = st
			children[st.ppid] = append(children[st.ppid], pid)
		}
	}
	queue := []int{root}
	for pid, start := range known {
		if st, ok := stats[pid]; ok && st.start == start {
			queue = append(queue, pid)
		}
	}
	out := map[int]uint64{}
	seen := map[int]bool{}
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		if seen[pid] {
			continue
		}
		seen[pid] = true
		if st, ok := stats[pid]; ok && pid != root && st.pgid != pgid {
			out[pid] = st.start
		}
		queue = append(queue, children[pid]...)
	}
	return out
}
