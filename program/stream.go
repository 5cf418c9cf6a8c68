package program

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"time"
)

// tailer reads the metrics file as the program appends to it, line by line: a partial
// last line waits for its newline, except at the end.
type tailer struct {
	a   *Attempt
	f   *os.File
	out *Outcome

	chunk    []byte // read into
	buf      []byte // the partial line
	skipping bool   // in a line refused as too long, until its newline
	lineNo   int

	lastLine   time.Time // when the last line was accepted
	sawVal     bool
	diverged   bool
	divergedAt int
	untilSeen  bool
	untilStep  int
}

// read reads what was appended since the last read; final also takes an unterminated last
// line.
func (t *tailer) read(final bool) {
	for {
		n, err := t.f.Read(t.chunk)
		t.consume(t.chunk[:n])
		if err != nil || n == 0 {
			break
		}
	}
	if final && len(t.buf) > 0 && !t.skipping {
		t.line(t.buf)
	}
	if final {
		t.buf = nil
	}
}

func (t *tailer) consume(b []byte) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		part := b
		if i >= 0 {
			part = b[:i]
		}
		if !t.skipping && len(t.buf)+len(part) > maxMetricsLine {
			t.lineNo++
			t.refuse(fmt.Sprintf("longer than %d bytes", maxMetricsLine), append(t.buf, part[:min(len(part), 200)]...))
			t.buf, t.skipping = t.buf[:0], true
		}
		if !t.skipping {
			t.buf = append(t.buf, part...)
		}
		if i < 0 {
			return
		}
		if !t.skipping {
			t.line(t.buf)
		}
		t.buf, t.skipping = t.buf[:0], false
		b = b[i+1:]
	}
}

// line takes one complete line.
func (t *tailer) line(raw []byte) {
	t.lineNo++
	s := bytes.TrimSpace(raw)
	if len(s) == 0 || t.diverged {
		return
	}
	m, err := ParseMetric(s)
	if err == nil && t.out.Lines > 0 && m.Step < t.out.Last.Step {
		err = fmt.Errorf("step %d goes back (last %d)", m.Step, t.out.Last.Step)
	}
	if err != nil {
		t.refuse(err.Error(), s)
		return
	}
	t.out.Lines++
	t.out.Last = m
	t.lastLine = time.Now()
	t.sawVal = t.sawVal || m.HasVal()
	if t.a.OnMetric != nil {
		t.a.OnMetric(m)
	}
	if !m.Finite() {
		t.diverged, t.divergedAt = true, m.Step
	}
	if t.a.Until > 0 && m.Step >= t.a.Until && m.HasVal() && !t.untilSeen {
		t.untilSeen, t.untilStep = true, m.Step
	}
}

func (t *tailer) refuse(reason string, line []byte) {
	t.out.Refused++
	text := fmt.Sprintf("line %d: %s: %s", t.lineNo, reason, truncate(string(line), 120))
	if len(t.out.RefusedSample) < refusedSample {
		t.out.RefusedSample = append(t.out.RefusedSample, text)
	}
	if t.a.OnRefused != nil {
		t.a.OnRefused(t.out.Refused, text)
	}
}

// stderrPipe copies the program's stderr to its log file and keeps its tail. The pipe is
// ours rather than os/exec's so that Wait returns when the program exits, even while a
// child of it still holds stderr open.
type stderrPipe struct {
	r, w *os.File
	file *os.File
	tail lineTail
	done chan struct{}
}

func startStderr(path string) (*stderrPipe, error) {
	file, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	r, w, err := os.Pipe()
	if err != nil {
		file.Close()
		return nil, err
	}
	s := &stderrPipe{r: r, w: w, file: file, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		buf := make([]byte, 32<<10)
		for {
			n, err := r.Read(buf)
			if n > 0 {
				file.Write(buf[:n])
				s.tail.write(buf[:n])
			}
			if err != nil {
				return
			}
		}
	}()
	return s, nil
}

// started closes our copy of the write end: the pipe ends when the program's group does.
func (s *stderrPipe) started() { s.w.Close() }

// drain waits up to d for the copy to reach the end of the pipe, then stops it.
func (s *stderrPipe) drain(d time.Duration) {
	select {
	case <-s.done:
	case <-time.After(d): // held open by a process that left the group
	}
	s.r.Close()
	<-s.done
}

func (s *stderrPipe) close() {
	s.w.Close()
	s.r.Close()
	<-s.done
	s.file.Close()
}

// lineTail keeps the last stderrLines lines written to it, each cut to stderrLineLen. A
// carriage return starts its line again, as on a terminal, so that a progress bar shows
// as its last state.
type lineTail struct {
	done []string
	cur  []byte
	cut  bool // cur lost bytes past stderrLineLen
	cr   bool // a carriage return came last
}

func (l *lineTail) write(p []byte) {
	for _, c := range p {
		switch {
		case c == '\n':
			l.push()
		case c == '\r':
			l.cr = true
		default:
			if l.cr {
				l.cur, l.cut, l.cr = l.cur[:0], false, false
			}
			if len(l.cur) < stderrLineLen {
				l.cur = append(l.cur, c)
			} else {
				l.cut = true
			}
		}
	}
}

func (l *lineTail) push() {
	s := string(l.cur)
	if l.cut {
		s = strings.ToValidUTF8(s, "") + "..." // the cut may split a character
	}
	l.done = append(l.done, s)
	if len(l.done) > stderrLines {
		l.done = l.done[len(l.done)-stderrLines:]
	}
	l.cur, l.cut, l.cr = l.cur[:0], false, false
}

// lines is the tail, with an unterminated last line.
func (l *lineTail) lines() []string {
	if len(l.cur) > 0 {
		l.push()
	}
	return append([]string(nil), l.done...)
}
