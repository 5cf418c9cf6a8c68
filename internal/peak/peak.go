// Package peak measures the machine's fp32 arithmetic peak: the fused multiply-adds per
// second its cores sustain with every SIMD lane busy, the ceiling against which a kernel's
// speed is a fraction.
//
// The measurement is a loop of independent fused multiply-adds written in assembly (24
// AVX-512 accumulators of 16 lanes, or 12 AVX2 accumulators of 8 lanes: more than an FMA's
// latency times the FMA units of any current x86 core, so no multiply-add waits for
// another), run on as many OS threads as the caller's kernel uses, best of three. It
// counts 2 FLOPs per lane per multiply-add, per second of CPU time each thread got (on
// Linux; wall time elsewhere): other work on a shared machine takes time from the loop,
// not speed, so it lowers the figure little. A datasheet figure is not used: turbo, the
// number of FMA units and a virtual machine's share of a core all vary.
//
// It measures nothing where there is no such loop (not amd64, no FMA, -tags purego).
package peak

import (
	"runtime"
	"sync"
	"time"
)

// Peak is a measured fp32 peak.
type Peak struct {
	GFLOPS  float64 `json:"gflops"`  // all threads together
	ISA     string  `json:"isa"`     // the loop's instructions: "avx512" or "avx2"
	Threads int     `json:"threads"` // OS threads the loop ran on at once
}

// loop is one assembly loop: each iteration does fmas independent multiply-adds of lanes
// float32 lanes, acc += a·b, and run stores the accumulators in acc (fmas·lanes values).
type loop struct {
	isa         string
	fmas, lanes int
	run         func(n int, ab *[2]float32, acc []float32)
}

// flopsPerIter is the FLOPs of one iteration: a multiply and an add per lane per FMA.
func (l loop) flopsPerIter() float64 { return float64(2 * l.fmas * l.lanes) }

// Measure returns the fp32 peak of threads OS threads running the widest FMA loop this CPU
// has, each for about a tenth of a second, best of three; false where there is none.
func Measure(threads int) (Peak, bool) {
	ls := loops()
	if len(ls) == 0 || threads < 1 {
		return Peak{}, false
	}
	l := ls[0]
	n := iterations(l, 100*time.Millisecond)
	best := 0.0
	for range 3 {
		best = max(best, float64(n)*l.flopsPerIter()*runAll(l, n, threads)/1e9)
	}
	return Peak{GFLOPS: best, ISA: l.isa, Threads: threads}, true
}

// iterations returns the iterations of l that take about d on one thread.
func iterations(l loop, d time.Duration) int {
	acc := make([]float32, l.fmas*l.lanes)
	ab := [2]float32{1, 1}
	n := 1 << 14
	for {
		start := time.Now()
		l.run(n, &ab, acc)
		took := time.Since(start)
		if took >= d/8 || n >= 1<<40 {
			return max(1, int(float64(n)*float64(d)/float64(took)))
		}
		n *= 4
	}
}

// runAll runs n iterations of l on each of threads OS threads started together, and
// returns the sum over the threads of 1/(the CPU time each took): the runs per second of
// them all.
func runAll(l loop, n, threads int) float64 {
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	rates := make([]float64, threads)
	ready.Add(threads)
	done.Add(threads)
	for i := range threads {
		go func() {
			defer done.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			acc := make([]float32, l.fmas*l.lanes)
			ab := [2]float32{1, 1}
			ready.Done()
			<-start
			t0 := threadTime()
			l.run(n, &ab, acc)
			rates[i] = 1 / (threadTime() - t0).Seconds()
		}()
	}
	ready.Wait()
	close(start)
	done.Wait()
	sum := 0.0
	for _, r := range rates {
		sum += r
	}
	return sum
}
