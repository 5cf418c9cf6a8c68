package main

import (
	"bytes"
	"testing"

	"github.com/sfsweep/sfsweep/sweepclient"
	"github.com/sfsweep/sfsweep/workflows"
)

// status prints one line per GPU in use, by worker process, with its trials and memory;
// trials off a GPU add none.
func TestPrintGPUs(t *testing.T) {
	g0 := &workflows.GPUMemory{Name: "GPU 0", Total: 80 << 30, Reserved: 70 << 30, Free: 9 << 30, Trials: 2, Waiting: 1}
	g1 := &workflows.GPUMemory{Name: "GPU 1", Total: 80 << 30, Reserved: 1 << 30, Free: 78 << 30, Trials: 1}
	trials := []sweepclient.TrialState{
		{ID: "c", State: sweepclient.TrialAdmitting, Worker: "12@node-a@", GPU: g0},
		{ID: "d", State: sweepclient.TrialTraining, Worker: "13@node-a@", GPU: g1},
		{ID: "a", State: sweepclient.TrialTraining, Worker: "12@node-a@", GPU: g0},
		{ID: "b", State: sweepclient.TrialTraining, Worker: "12@node-a@", GPU: g0},
		{ID: "e", State: sweepclient.TrialTraining, Worker: "7@cpu-box@"},
		{ID: "f", State: sweepclient.TrialTraining, Worker: "14@node-b@", GPU: g1},
	}
	var b bytes.Buffer
	printGPUs(&b, trials)
	want := `  GPU 0 (worker 12@node-a): 2 trial(s) admitted, 1 waiting; 70.00 GiB reserved, 9.00 GiB free of 80.00 GiB; training a, b; waiting c
  GPU 1 (worker 13@node-a): 1 trial(s) admitted, 0 waiting; 1.00 GiB reserved, 78.00 GiB free of 80.00 GiB; training d
  GPU 1 (worker 14@node-b): 1 trial(s) admitted, 0 waiting; 1.00 GiB reserved, 78.00 GiB free of 80.00 GiB; training f
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}
