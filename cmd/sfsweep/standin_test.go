package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/sfsweep/sfsweep/training/backend"
	"github.com/sfsweep/sfsweep/training/model"
)

// The stand-in GPUs of the test binary: the cpu engine under the cuda name (standInCUDAEnv),
// on a machine of simulated GPUs (standInGPUsEnv), each with its own memory. A worker
// process of one stand-in GPU (gpuEnv) holds its engines' memory on it as a GPU would:
// an engine that does not fit fails to allocate, with a *backend.OutOfMemoryError, and every
// engine made and closed is logged with what the device holds then.

// standInGPUsEnv lists the stand-in machine's GPUs in the format of nvidia-smi's query
// (queryGPU): "sfsweep worker -gpus" finds them there. Without standInCUDAEnv the process
// is a build without the cuda engine on a machine with GPUs.
const standInGPUsEnv = "SFSWEEP_TEST_STAND_IN_GPUS"

// standInGateEnv, set with standInGPUsEnv, is a directory in which a stand-in engine
// leaves a file when it is made (engine-<pid>-<n>) and whose first Forward waits until the
// file gateOpen is there: a test sees which engines are live at once, and holds them
// training, without depending on how fast they train.
const standInGateEnv = "SFSWEEP_TEST_STAND_IN_GATE"

// gateOpen is the file of the gate directory that lets the stand-in engines train.
const gateOpen = "open"

// gateFault is the file of the gate directory that faults a stand-in GPU: the next Backward
// of one of its engines takes the file and fails with a *backend.DeviceFaultError, and from
// then on every Forward, Backward and new engine of that process fails the same way, as a
// sticky CUDA error leaves a context.
const gateFault = "fault"

// standInFaulted is the line a worker process of a stand-in GPU logs when its device faults.
const standInFaulted = "stand-in gpu: device fault"

// Lines a worker process of a stand-in GPU logs when an engine is made or closed:
// "<event> <engines live> engines, <bytes held> of <total> bytes".
const (
	standInMade   = "stand-in gpu: engine made:"
	standInClosed = "stand-in gpu: engine closed:"
)

// registerStandIn installs the stand-ins in a re-executed test binary.
func registerStandIn() {
	childEnv = append(childEnv, reexecEnv+"=1")
	if os.Getenv(standInGPUsEnv) != "" {
		listGPUs = func(context.Context) ([]gpu, error) { return parseGPUs(os.Getenv(standInGPUsEnv)) }
	}
	if os.Getenv(standInCUDAEnv) != "1" {
		return // the GPUs, if any, of a build without the cuda engine
	}
	backend.RegisterNeed("cuda", standInNeed)
	var dev *standInDevice
	if env := os.Getenv(gpuEnv); env != "" {
		gpus, err := parseGPUs(env)
		if err != nil || len(gpus) != 1 {
			panic(fmt.Sprintf("%s = %q: %v", gpuEnv, env, err))
		}
		dev = &standInDevice{total: gpus[0].Memory, used: backend.ContextBytes}
	}
	backend.Register("cuda", func(cfg model.Config, batch, seqLen int) (backend.Engine, error) {
		if dev == nil {
			return backend.New("cpu", cfg, batch, seqLen)
		}
		return dev.open(cfg, batch, seqLen)
	})
}

// standInNeed is what a stand-in engine holds on its device: as the cuda engine, the
// parameters, gradients, two optimizer and two average vectors, and the activations of a
// micro-batch.
func standInNeed(cfg model.Config, batch, seqLen int) int64 {
	acts := int64(batch*seqLen) * int64(16*cfg.Dim*cfg.Layers+2*cfg.Vocab)
	return 4 * (6*int64(cfg.NumParams()) + acts)
}

// standInDevice is the memory of one stand-in GPU: its size and what the process holds.
type standInDevice struct {
	mu          sync.Mutex
	total, used int64
	live, made  int
	fault       error // the device fault every call fails with once the device faulted
}

// faulted returns the device's fault, taking the gate's fault file if it is there.
func (d *standInDevice) faulted(gate string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.fault == nil && gate != "" && os.Remove(filepath.Join(gate, gateFault)) == nil {
		d.fault = &backend.DeviceFaultError{Backend: "cuda", Err: fmt.Errorf("CUDA_ERROR_ILLEGAL_ADDRESS (stand-in)")}
		fmt.Fprintf(os.Stderr, "%s: pid %d\n", standInFaulted, os.Getpid())
	}
	return d.fault
}

func (d *standInDevice) open(cfg model.Config, batch, seqLen int) (backend.Engine, error) {
	need := standInNeed(cfg, batch, seqLen) + backend.WorkspaceBytes
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.fault != nil {
		return nil, d.fault
	}
	if d.used+need > d.total {
		return nil, &backend.OutOfMemoryError{Backend: "cuda", Need: need, Total: d.total, Free: d.total - d.used,
			What: "a stand-in engine", Err: fmt.Errorf("CUDA_ERROR_OUT_OF_MEMORY")}
	}
	e, err := backend.New("cpu", cfg, batch, seqLen)
	if err != nil {
		return nil, err
	}
	d.used += need
	d.live++
	d.made++
	fmt.Fprintf(os.Stderr, "%s %d engines, %d of %d bytes\n", standInMade, d.live, d.used, d.total)
	se := &standInEngine{HostEngine: e.(backend.HostEngine), dev: d, need: need, gate: os.Getenv(standInGateEnv)}
	se.faults = se.gate
	if se.gate != "" {
		name := filepath.Join(se.gate, fmt.Sprintf("engine-%d-%d", os.Getpid(), d.made))
		if err := os.WriteFile(name, nil, 0o644); err != nil {
			return nil, err
		}
	}
	return se, nil
}

// Forward waits, the first time, for the gate to open; on a faulted device it fails.
func (e *standInEngine) Forward(tokens, targets []int32) (float64, error) {
	if err := e.dev.faulted(""); err != nil {
		return 0, err
	}
	for e.gate != "" {
		if _, err := os.Stat(filepath.Join(e.gate, gateOpen)); err == nil {
			e.gate = ""
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	return e.HostEngine.Forward(tokens, targets)
}

// Backward faults the device where the gate holds the fault file, and fails on a faulted
// device.
func (e *standInEngine) Backward() error {
	if err := e.dev.faulted(e.faults); err != nil {
		return err
	}
	return e.HostEngine.Backward()
}

// standInEngine is a cpu engine that holds need bytes of its stand-in device until closed.
type standInEngine struct {
	backend.HostEngine
	dev    *standInDevice
	need   int64
	gate   string // the gate's directory until it opened
	faults string // the gate's directory, where a fault file faults the device
	closed sync.Once
}

func (e *standInEngine) Close() error {
	e.closed.Do(func() {
		d := e.dev
		d.mu.Lock()
		defer d.mu.Unlock()
		d.used -= e.need
		d.live--
		fmt.Fprintf(os.Stderr, "%s %d engines, %d of %d bytes\n", standInClosed, d.live, d.used, d.total)
	})
	return e.HostEngine.Close()
}
