package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/sfsweep/sfsweep/activities"
	"github.com/sfsweep/sfsweep/internal/gpulock"
	"github.com/sfsweep/sfsweep/training/backend"
)

// The GPUs of a machine, for "sfsweep worker -gpus". They are listed by nvidia-smi, so
// that a worker built without the CUDA toolkit's libraries still finds them; the test
// binary lists a stand-in's instead (listGPUs).

// gpu is one GPU of the machine, or one MIG instance of a GPU, that a worker process
// trains on.
type gpu struct {
	// Index is nvidia-smi's index of the GPU, "0"; of a MIG instance, its GPU's index and
	// its own, "0/1".
	Index string
	// UUID names it to CUDA (CUDA_VISIBLE_DEVICES): GPU-… or MIG-….
	UUID string
	// Memory is its memory in bytes.
	Memory int64
}

// name is how messages name the GPU: "GPU 3", "GPU 0/1".
func (g gpu) name() string { return "GPU " + g.Index }

// line is g in the format of nvidia-smi's query (queryGPU), which parseGPUs reads back: how
// a supervising worker tells a worker process its GPU (gpuEnv).
func (g gpu) line() string { return fmt.Sprintf("%s, %s, %d MiB", g.Index, g.UUID, g.Memory>>20) }

// gpuEnv, in a worker process's environment, is the line (gpu.line) of the one GPU it
// trains on: the process admits its trials to that GPU's memory. A supervising worker
// sets it, with CUDA_VISIBLE_DEVICES, for each process it starts.
const gpuEnv = "SFSWEEP_GPU"

// queryGPU are nvidia-smi's arguments that list the GPUs, one a line:
// "0, GPU-8d9…, 81559 MiB".
var queryGPU = []string{"--query-gpu=index,uuid,memory.total", "--format=csv,noheader"}

// listGPUs lists the machine's GPUs. The test binary replaces it with its stand-in.
var listGPUs = nvidiaSMI

// nvidiaSMI lists the GPUs nvidia-smi sees; a GPU split into MIG instances is listed as
// its instances (a CUDA process cannot use the GPU whole then).
func nvidiaSMI(ctx context.Context) ([]gpu, error) {
	out, err := exec.CommandContext(ctx, "nvidia-smi", queryGPU...).Output()
	if err != nil {
		return nil, fmt.Errorf("listing the GPUs: nvidia-smi %s: %w", strings.Join(queryGPU, " "), err)
	}
	gpus, err := parseGPUs(string(out))
	if err != nil {
		return nil, fmt.Errorf("nvidia-smi: %w", err)
	}
	if out, err := exec.CommandContext(ctx, "nvidia-smi", "-L").Output(); err == nil {
		gpus = withMIG(gpus, parseMIG(string(out)))
	}
	return gpus, nil
}

// parseGPUs reads nvidia-smi's query (queryGPU), with or without units.
func parseGPUs(text string) ([]gpu, error) {
	var gpus []gpu
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		l := strings.TrimSpace(sc.Text())
		if l == "" {
			continue
		}
		f := strings.Split(l, ",")
		if len(f) != 3 {
			return nil, fmt.Errorf("line %d: %q: want index, uuid, memory.total", n, l)
		}
		mib, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(f[2]), "MiB")), 10, 64)
		if err != nil || mib <= 0 {
			return nil, fmt.Errorf("line %d: memory.total = %q: want a size in MiB", n, strings.TrimSpace(f[2]))
		}
		gpus = append(gpus, gpu{Index: strings.TrimSpace(f[0]), UUID: strings.TrimSpace(f[1]), Memory: mib << 20})
	}
	return gpus, nil
}

var (
	gpuLine = regexp.MustCompile(`^GPU (\d+): .*\(UUID: (GPU-[^)]+)\)`)
	// a profile: 3g.40gb, 1g.10gb+me (media extensions), or a compute instance's 1c.3g.40gb
	migLine = regexp.MustCompile(`^\s+MIG (?:(\d+)c\.)?(\d+)g\.(\d+)gb(?:\+\w+)?\s+Device\s+(\d+): \(UUID: (MIG-[^)]+)\)`)
)

// parseMIG reads the MIG instances of "nvidia-smi -L". An instance's memory is that of
// its profile's name (3g.40gb: 40 GB), which is at most what it has. Compute instances
// (1c.3g.40gb) share their GPU instance's memory, so each is given the share of its
// slices (1 of 3: 13.3 GB), which all of them together do not exceed.
func parseMIG(text string) []gpu {
	var out []gpu
	parent := ""
	for l := range strings.Lines(text) {
		if m := gpuLine.FindStringSubmatch(l); m != nil {
			parent = m[1]
		} else if m := migLine.FindStringSubmatch(l); m != nil && parent != "" {
			g, _ := strconv.ParseInt(m[2], 10, 64)
			gb, _ := strconv.ParseInt(m[3], 10, 64)
			mem := gb * 1e9
			if c, _ := strconv.ParseInt(m[1], 10, 64); c > 0 && g > 0 {
				mem = mem * min(c, g) / g
			}
			out = append(out, gpu{Index: parent + "/" + m[4], UUID: m[5], Memory: mem})
		}
	}
	return out
}

// withMIG replaces each GPU that has MIG instances by its instances.
func withMIG(gpus, mig []gpu) []gpu {
	var out []gpu
	for _, g := range gpus {
		n := len(out)
		for _, m := range mig {
			if strings.HasPrefix(m.Index, g.Index+"/") {
				out = append(out, m)
			}
		}
		if len(out) == n {
			out = append(out, g)
		}
	}
	return out
}

// selectGPUs returns the GPUs of -gpus among those the machine has: all of them, or those
// listed by index or UUID, in the order given.
func selectGPUs(flag string, have []gpu) ([]gpu, error) {
	if len(have) == 0 {
		return nil, &usageError{msg: fmt.Sprintf("-gpus = %q: this machine has no GPU (nvidia-smi lists none)", flag)}
	}
	if flag == "all" {
		return have, nil
	}
	var out []gpu
	for want := range strings.SplitSeq(flag, ",") {
		want = strings.TrimSpace(want)
		i := slices.IndexFunc(have, func(g gpu) bool { return g.Index == want || g.UUID == want })
		if i < 0 {
			ids := make([]string, len(have))
			for j, g := range have {
				ids[j] = g.Index + " (" + g.UUID + ")"
			}
			return nil, &usageError{msg: fmt.Sprintf("-gpus = %q: no GPU %q on this machine; it has %s", flag, want, strings.Join(ids, ", "))}
		}
		if !slices.Contains(out, have[i]) {
			out = append(out, have[i])
		}
	}
	return out, nil
}

// spread deals slots trials over n GPUs, the first GPUs taking one more when they do not
// divide evenly; 0 slots is one a GPU.
func spread(slots, n int) ([]int, error) {
	if slots == 0 {
		slots = n
	}
	if slots < n {
		return nil, &usageError{msg: fmt.Sprintf("-slots = %d: fewer than the %d GPUs of -gpus (each GPU trains at least one trial)", slots, n)}
	}
	out := make([]int, n)
	for i := range out {
		out[i] = slots / n
		if i < slots%n {
			out[i]++
		}
	}
	return out, nil
}

// workerGPU is the ledger of the one GPU a worker process trains on, from gpuEnv; nil
// when the environment names none.
func workerGPU(env string) (*backend.Ledger, error) {
	if env == "" {
		return nil, nil
	}
	gpus, err := parseGPUs(env)
	if err == nil && len(gpus) != 1 {
		err = fmt.Errorf("%d GPUs", len(gpus))
	}
	if err != nil {
		return nil, &usageError{msg: fmt.Sprintf("%s = %q: want one GPU as \"index, uuid, memory MiB\": %v", gpuEnv, env, err)}
	}
	l := backend.NewLedger(gpus[0].name(), gpus[0].Memory)
	l.ShareWith(gpulock.GPU{Dir: gpulock.Dir(), UUID: gpus[0].UUID}.Share) // against the node's process
	return l, nil
}

// nodeEnv, in a worker process's environment, is the lines (gpu.line) of the GPUs of the
// node's process: the process a supervising worker starts beside those of each GPU, which
// trains the trials of several GPUs (gpus: N), taking them whole (gpulock) from the
// processes of their GPUs.
const nodeEnv = "SFSWEEP_NODE_GPUS"

// workerNode is the node's GPUs from nodeEnv, for the trials of several GPUs; nil when the
// environment names none.
func workerNode(env string) ([]activities.NodeGPU, error) {
	if env == "" {
		return nil, nil
	}
	gpus, err := parseGPUs(env)
	if err == nil && len(gpus) < 2 {
		err = fmt.Errorf("%d GPUs", len(gpus))
	}
	if err != nil {
		return nil, &usageError{msg: fmt.Sprintf("%s = %q: want two GPUs or more, a line each as \"index, uuid, memory MiB\": %v", nodeEnv, env, err)}
	}
	node := make([]activities.NodeGPU, len(gpus))
	for i, g := range gpus {
		node[i] = activities.NodeGPU{Ledger: backend.NewLedger(g.name(), g.Memory), UUID: g.UUID, Take: gpulock.GPU{Dir: gpulock.Dir(), UUID: g.UUID}.Take}
	}
	return node, nil
}

// runGPU is the ledger of the GPU that "sfsweep run" trains on, so that its -slots trials
// are packed by memory as a worker's are, and the CUDA_VISIBLE_DEVICES its programs get
// (visible: the GPU's UUID; "", the process's own): the GPU of gpuEnv when it is set; else,
// when cuda is among devices, the GPU that is the engine's device 0 (the first of
// CUDA_VISIBLE_DEVICES, or GPU 0) as nvidia-smi lists it. When that GPU cannot be found it
// says why on stderr and returns nil: trials then start unadmitted, as before.
func runGPU(ctx context.Context, devices []string, stderr io.Writer) (ledger *backend.Ledger, visible string, err error) {
	if env := os.Getenv(gpuEnv); env != "" {
		l, err := workerGPU(env)
		return l, "", err
	}
	if !slices.Contains(devices, backend.DeviceCUDA) {
		return nil, "", nil
	}
	first := "0"
	if v, ok := os.LookupEnv("CUDA_VISIBLE_DEVICES"); ok {
		first, _, _ = strings.Cut(v, ",")
		first = strings.TrimSpace(first)
	}
	have, err := listGPUs(ctx)
	if err == nil {
		var sel []gpu
		if sel, err = selectGPUs(first, have); err == nil {
			return backend.NewLedger(sel[0].name(), sel[0].Memory), sel[0].UUID, nil
		}
	}
	fmt.Fprintf(stderr, "run: trials on cuda are not admitted by GPU memory: no GPU %q (CUDA_VISIBLE_DEVICES): %v\n", first, err)
	return nil, "", nil
}

// runNode is the node "sfsweep run" gives trials of n GPUs (gpus: n): the GPUs of
// CUDA_VISIBLE_DEVICES, or all nvidia-smi lists, in that order. Fewer than n is an error
// that says how many there are: such a trial would wait for ever.
func runNode(ctx context.Context, n int) ([]activities.NodeGPU, error) {
	have, err := listGPUs(ctx)
	if err != nil {
		return nil, err
	}
	sel := have
	if v, ok := os.LookupEnv("CUDA_VISIBLE_DEVICES"); ok {
		if sel, err = selectGPUs(v, have); err != nil {
			return nil, fmt.Errorf("CUDA_VISIBLE_DEVICES: %w", err)
		}
	}
	if len(sel) < n {
		return nil, fmt.Errorf("gpus = %d: this machine has %d GPUs that nvidia-smi lists (and CUDA_VISIBLE_DEVICES selects)", n, len(sel))
	}
	node := make([]activities.NodeGPU, len(sel))
	for i, g := range sel {
		node[i] = activities.NodeGPU{Ledger: backend.NewLedger(g.name(), g.Memory), UUID: g.UUID}
	}
	return node, nil
}
