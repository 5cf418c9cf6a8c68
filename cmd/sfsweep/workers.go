package main

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/sfsweep/sfsweep/activities"
	"github.com/sfsweep/sfsweep/training/backend"
	"github.com/sfsweep/sfsweep/workflows"
)

// workerRoles says what a worker process serves: the cpu role (workflows, planning,
// tables) and the training of trials on the devices listed (the gpu role), each on the
// task queue of its device. A device may lack an engine in this build: a GPU of a build
// without the cuda engine, where only program trainers train (programOnly).
type workerRoles struct {
	cpu     bool
	devices []string
	// node is how many GPUs of one node the worker owns for trials of several (gpus: N,
	// Activities.Node): it polls the queues of 2 to node GPUs; 0 or 1, none.
	node int
}

func (r workerRoles) String() string {
	var parts []string
	if r.cpu {
		parts = append(parts, "queue "+workflows.QueueCPU)
	}
	for _, route := range backend.Routes(r.devices) {
		parts = append(parts, "queue "+workflows.TrainQueue(route))
	}
	if r.node > 1 {
		parts = append(parts, fmt.Sprintf("the trials of 2 to %d GPUs of program trainers with a launcher", r.node))
	}
	for _, d := range r.devices {
		if programOnly(d) {
			parts = append(parts, "program trainers on "+d)
		}
	}
	return strings.Join(parts, ", ")
}

// programOnly reports whether device d is one this build has no engine on: a worker trains
// only program trainers' trials there.
func programOnly(d string) bool { return !slices.Contains(backend.Devices(), d) }

// parseRoles reads worker's -queue and -devices: a device this build has no backend for
// is refused, naming the flag, but for a GPU of a build without the cuda engine in a
// worker process given one (gpuEnv), which trains program trainers there.
func parseRoles(queue, devices string) (workerRoles, error) {
	var r workerRoles
	switch queue {
	case "cpu", "gpu", "all":
	default:
		return r, &usageError{msg: fmt.Sprintf("-queue = %q: must be gpu, cpu or all", queue)}
	}
	r.cpu = queue != "gpu"
	if queue == "cpu" {
		return r, nil
	}
	have := backend.Devices()
	for d := range strings.SplitSeq(devices, ",") {
		d = strings.TrimSpace(d)
		if d == "" || slices.Contains(r.devices, d) {
			continue
		}
		if !slices.Contains(have, d) && (d != backend.DeviceCUDA || os.Getenv(gpuEnv) == "" && os.Getenv(nodeEnv) == "") {
			return r, &usageError{msg: fmt.Sprintf("-devices = %q: this build has no backend on device %q (it has %s: backends %s); %s",
				devices, d, strings.Join(have, ", "), strings.Join(backend.Names(), ", "), buildHint(d))}
		}
		r.devices = append(r.devices, d)
	}
	if len(r.devices) == 0 {
		return r, &usageError{msg: fmt.Sprintf("-devices = %q: name at least one device of %s", devices, strings.Join(have, ", "))}
	}
	return r, nil
}

// buildHint says how to get a build with a backend on device d.
func buildHint(d string) string {
	for _, b := range backend.Catalog() {
		if b.Device == d && b.Build != "" {
			return "to train on it, " + b.Build
		}
	}
	return "no backend of sfsweep runs on it"
}

// startWorkers starts the workers of roles: a cpu worker, and for training a worker on
// the task queue of each route of its devices (backend.Routes: each device, and each
// arithmetic with a queue of its own; slots activities at once each, so trials on different
// devices do not wait for one another), one on the queue of each of the program trainers
// the activities run on each device (workflows.TrainerQueue, slots at once as well) and on
// each count of the node's GPUs for those with a launcher (Trainers.NodeQueues), and one
// on workflows.QueueGPU, the queue of sweeps planned before trials were routed by
// device. It returns a function that stops them.
func startWorkers(c client.Client, acts *activities.Activities, roles workerRoles, slots int) (func(), error) {
	var ws []worker.Worker
	var once sync.Once
	stop := func() { // once: a device fault stops the workers before the process's end does
		once.Do(func() {
			for _, w := range slices.Backward(ws) {
				w.Stop()
			}
		})
	}
	start := func(queue string, opt worker.Options, register func(worker.Registry)) error {
		w := worker.New(c, queue, opt)
		register(w)
		if err := w.Start(); err != nil {
			stop()
			return fmt.Errorf("worker of task queue %s: %w", queue, err)
		}
		ws = append(ws, w)
		return nil
	}
	if roles.cpu {
		if err := start(workflows.QueueCPU, worker.Options{}, acts.RegisterCPU); err != nil {
			return nil, err
		}
	}
	if len(roles.devices) > 0 {
		var queues []string
		routes := backend.Routes(roles.devices)
		if len(routes) > 0 {
			queues = append(queues, workflows.QueueGPU) // of engine trials only
		}
		for _, route := range routes {
			queues = append(queues, workflows.TrainQueue(route))
		}
		trainers, err := acts.Trainers.Queues(roles.devices)
		if err != nil {
			return nil, err
		}
		for _, q := range append(queues, trainers...) {
			if err := start(q, worker.Options{MaxConcurrentActivityExecutionSize: slots}, acts.RegisterGPU); err != nil {
				return nil, err
			}
		}
	}
	node, err := acts.Trainers.NodeQueues(backend.DeviceCUDA, roles.node)
	if err != nil {
		return nil, err
	}
	for _, q := range node {
		if err := start(q, worker.Options{MaxConcurrentActivityExecutionSize: slots}, acts.RegisterGPU); err != nil {
			return nil, err
		}
	}
	return stop, nil
}

// faultStop stops a process's workers after a device fault, which has lost the process's
// device context: its handler, the activities' OnDeviceFault, stops them polling at once,
// so that the process takes no other attempt, and calls end with the fault two seconds
// later, once the faulted attempt's failure has reached the server.
type faultStop struct {
	mu   sync.Mutex
	stop func() // the workers' stop, once they started
}

// started records the function that stops the process's workers.
func (f *faultStop) started(stop func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stop = stop
}

// handler is the OnDeviceFault that ends the process through end.
func (f *faultStop) handler(end func(error)) func(error) {
	return func(err error) {
		f.mu.Lock()
		stop := f.stop
		f.mu.Unlock()
		if stop != nil {
			go stop()
		}
		time.AfterFunc(2*time.Second, func() { end(err) })
	}
}
