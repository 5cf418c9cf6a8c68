package par

import (
	"sync/atomic"
	"testing"
)

func TestForCoversEachIndexOnce(t *testing.T) {
	for _, workers := range []int{1, 2, 3, 8} {
		p := NewPool(workers)
		for _, n := range []int{0, 1, 31, 32, 33, 1000, 4097} {
			hits := make([]int32, n)
			p.For(n, 1, func(lo, hi int) {
				for i := lo; i < hi; i++ {
					atomic.AddInt32(&hits[i], 1)
				}
			})
			for i, h := range hits {
				if h != 1 {
					t.Fatalf("workers=%d n=%d: index %d visited %d times", workers, n, i, h)
				}
			}
		}
		p.Close()
	}
}

func TestForRangesAreAligned(t *testing.T) {
	p := NewPool(3)
	defer p.Close()
	var bad atomic.Int32
	p.For(1000, 1, func(lo, hi int) {
		if lo%Align != 0 {
			bad.Add(1)
		}
	})
	if bad.Load() != 0 {
		t.Fatalf("%d ranges start off a %d-element boundary", bad.Load(), Align)
	}
}

func TestForAllocatesNothing(t *testing.T) {
	p := NewPool(2)
	defer p.Close()
	buf := make([]float32, 1<<16)
	k := &kernel{buf: buf}
	fn := k.run // made once, as callers are expected to do
	allocs := testing.AllocsPerRun(100, func() { p.For(len(buf), 1, fn) })
	if allocs != 0 {
		t.Fatalf("For allocated %.1f times per call, want 0", allocs)
	}
}

type kernel struct{ buf []float32 }

func (k *kernel) run(lo, hi int) {
	for i := lo; i < hi; i++ {
		k.buf[i]++
	}
}
