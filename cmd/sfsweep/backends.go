package main

// The training backends this binary carries: the one place that imports them. Each
// registers itself with training/backend; a worker serves the devices of the backends
// registered (backend.Devices). training/cuda is empty without the cuda build tag, so the
// default build carries the cpu backend alone, and a build with -tags cuda carries cuda,
// cuda-tf32, cuda-bf16 and cuda-bf16-flash too.
import (
	_ "github.com/sfsweep/sfsweep/training/cuda"
	_ "github.com/sfsweep/sfsweep/training/native"
)
