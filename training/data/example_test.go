package data_test

import (
	"fmt"

	"github.com/sfsweep/sfsweep/training/data"
)

// A validation split of 1,000 tokens holds 15 windows of 64 tokens; asking for the paper's
// 3,200 gives those 15, in batches of 8 rows.
func ExampleWindows() {
	val := make([]uint16, 1000)
	w, err := data.Windows(val, 64, 3200)
	if err != nil {
		panic(err)
	}
	tokens, targets := make([]int32, 8*64), make([]int32, 8*64)
	for i := range w.Batches(8) {
		fmt.Printf("batch %d: %d rows\n", i, w.Fill(i, tokens, targets))
	}
	fmt.Printf("%d of %d windows (capped: %v)\n", w.N, w.Requested, w.Capped())
	// Output:
	// batch 0: 8 rows
	// batch 1: 7 rows
	// 15 of 3200 windows (capped: true)
}

// A sampler computes any step's batch directly, so a resumed run reads what it would have.
func ExampleSampler_Fill() {
	train := make([]uint16, 10000)
	for i := range train {
		train[i] = uint16(i % 257)
	}
	s, err := data.NewSampler(train, 128, 1234)
	if err != nil {
		panic(err)
	}
	x, y := make([]int32, 4*128), make([]int32, 4*128)
	s.Fill(1000, 0, x, y) // step 1000, micro-batch 0, without steps 0..999
	fmt.Println(x[1] == y[0], s.Offset(1000, 0, 0) < len(train)-128)
	// Output: true true
}
