package backend

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/sfsweep/sfsweep/training/model"
)

// Info describes a backend sfsweep has, whether or not this build carries it.
type Info struct {
	// Name is the backend's name in a config or manifest (backend: cuda).
	Name string
	// Family is the engine that runs the backend: the backends of one family are one
	// engine at different precisions, and a config picks one by its precision.
	Family string
	// Device is what the backend computes on. Trials are routed to workers by device: a
	// worker serves the devices of the backends its build carries.
	Device string
	// Summary says in a few words what the backend is.
	Summary string
	// Build says how to build a binary that carries the backend; "" for every build.
	Build string
	// Precision is the precision of the engine's matrix products, which the family's
	// engine receives when it is made.
	Precision Precision
	// Arithmetic names the engine's floating-point arithmetic, with a version: two
	// engines of one arithmetic give the same bits from the same inputs. For the cpu
	// family that holds whatever machine they run on (AVX-512, AVX2, portable Go). For the
	// cuda family it holds on one kind of GPU with one toolkit: cuBLAS promises the same
	// bits only for the same architecture, SM count and library version (an H100 SXM and
	// an H100 PCIe differ), and the PTX generator's libdevice is part of the arithmetic
	// (docs/gpu.md, "What the bits depend on"). A kernel change that alters any result
	// bumps the version.
	Arithmetic string
	// Route names the task queue of the backend's trials (RouteOf) when it is not its
	// device's: a backend added to a family that workers already serve by device (a new
	// arithmetic) has a queue of its own, so that a worker of an older build, which lacks
	// it, never takes its trials, and they wait for a worker that has it.
	Route string
}

// RouteOf is the routing key of b's trials: b.Route, else its device. A worker serves the
// routes of the backends its build carries (Routes).
func RouteOf(b Info) string { return cmp.Or(b.Route, b.Device) }

// Precision is the precision of an engine's matrix products: what a config asks for
// (precision: bf16) and what the engine is made to compute.
type Precision string

// The precisions of matrix products.
const (
	// FP32 is float32 operands and accumulation.
	FP32 Precision = "fp32"
	// TF32 rounds the operands to TF32's 10-bit mantissa on tensor cores and accumulates
	// in float32.
	TF32 Precision = "tf32"
	// BF16 is bfloat16 operands with float32 accumulation, float32 outputs and float32
	// master weights, as torch.autocast with dtype bfloat16.
	BF16 Precision = "bf16"
)

// Precisions lists the precisions of matrix products a config may ask for.
var Precisions = []Precision{FP32, TF32, BF16}

// Default is the backend of a config or manifest that names none: the native engine,
// which every build carries.
const Default = "cpu"

// Devices a backend runs on.
const (
	DeviceCPU  = "cpu"
	DeviceCUDA = "cuda"
)

const cudaBuild = "build sfsweep with -tags cuda against the CUDA toolkit (docs/gpu.md) and run it on a machine with an NVIDIA driver"

// catalog lists every backend of sfsweep, built in or not: the one place that says which
// backend names exist, what they run on and how to get them.
var catalog = []Info{
	// cpu-fp32/2: AVX-512, AVX2 and the portable loops give the same bits (the AVX2
	// reductions in 16 lanes, the portable loops fused); /1 differed between them.
	{Name: "cpu", Family: "cpu", Device: DeviceCPU, Summary: "the native engine: pure Go and assembly", Precision: FP32, Arithmetic: "cpu-fp32/2"},
	{Name: "cuda", Family: "cuda", Device: DeviceCUDA, Summary: "NVIDIA GPU, float32 GEMMs", Build: cudaBuild, Precision: FP32, Arithmetic: "cuda-fp32/1"},
	{Name: "cuda-tf32", Family: "cuda", Device: DeviceCUDA, Summary: "NVIDIA GPU, TF32 tensor-core GEMMs", Build: cudaBuild, Precision: TF32, Arithmetic: "cuda-tf32/1"},
	{Name: "cuda-bf16", Family: "cuda", Device: DeviceCUDA, Summary: "NVIDIA GPU, bf16 tensor-core GEMMs with float32 master weights (as torch.autocast)", Build: cudaBuild, Precision: BF16, Arithmetic: "cuda-bf16/1"},
	// The candidate bf16 arithmetic: cuda-bf16 with deterministic flash attention and the
	// one-pass cross-entropy, which change its bits within a tolerance; a trial names it to
	// run it, as no environment variable changes a trial's bits.
	{Name: "cuda-bf16-flash", Family: "cuda", Device: DeviceCUDA, Summary: "NVIDIA GPU, cuda-bf16 with deterministic flash attention and a one-pass cross-entropy", Build: cudaBuild, Precision: BF16, Arithmetic: "cuda-bf16-flash/1", Route: "cuda-bf16-flash"},
}

// Resolve returns the backend that runs name's engine (Default's when name is "") at
// precision p: name itself when p is "" or name's own, else the backend of name's family
// with precision p that routes by device (cuda and bf16: cuda-bf16). A backend with a
// route of its own, an arithmetic, is named to be run, at its own precision: another is
// an error, not another arithmetic. The error says which precisions the family has.
func Resolve(name string, p Precision) (string, error) {
	b, ok := Lookup(cmp.Or(name, Default))
	if !ok {
		return "", Check(name)
	}
	if p == "" || p == b.Precision {
		return b.Name, nil
	}
	if b.Route != "" { // an arithmetic of its own: another precision is another backend
		return "", fmt.Errorf("precision = %q: backend %s is an arithmetic of its own, in %s only; name the backend of that precision instead", p, b.Name, b.Precision)
	}
	var have []string
	for _, c := range Family(b.Family) {
		if c.Route != "" {
			continue // an arithmetic of its own, which a config names
		}
		if c.Precision == p {
			return c.Name, nil
		}
		have = append(have, string(c.Precision))
	}
	return "", fmt.Errorf("precision = %q: backend %s has no such precision; it has %s", p, b.Name, strings.Join(have, ", "))
}

// Family lists the catalog's backends of a family, in the catalog's order: the backends an
// engine registers, one for each of its precisions.
func Family(family string) []Info {
	var out []Info
	for _, b := range catalog {
		if b.Family == family {
			out = append(out, b)
		}
	}
	return out
}

// sameArithmetic declares arithmetics that give the same bits although their names
// differ (a version bumped for a change that turned out to alter no result): resuming a
// checkpoint of one on the other is allowed. Each entry maps a name to the one it equals.
var sameArithmetic = map[string]string{}

// SameArithmetic tells whether engines of arithmetics a and b give the same bits.
func SameArithmetic(a, b string) bool {
	return a == b || sameArithmetic[a] == b || sameArithmetic[b] == a
}

// Catalog lists every backend sfsweep has, whether this build carries it or not.
func Catalog() []Info { return slices.Clone(catalog) }

// Lookup returns the catalog entry of a backend name.
func Lookup(name string) (Info, bool) {
	i := slices.IndexFunc(catalog, func(b Info) bool { return b.Name == name })
	if i < 0 {
		return Info{}, false
	}
	return catalog[i], true
}

// Factory makes an engine for cfg on micro-batches of batch sequences of seqLen tokens.
type Factory func(cfg model.Config, batch, seqLen int) (Engine, error)

var (
	mu        sync.Mutex
	factories = map[string]Factory{}
)

// Register makes a backend of the catalog available in this build under its name; a
// backend registers itself from an init function of its package, and a binary carries the
// backends whose packages it imports. Registering a name twice, or one the catalog does
// not list, panics.
func Register(name string, f Factory) {
	mu.Lock()
	defer mu.Unlock()
	if _, ok := Lookup(name); !ok {
		panic("backend: " + name + " is not in the catalog (training/backend/registry.go)")
	}
	if _, dup := factories[name]; dup {
		panic("backend: " + name + " registered twice")
	}
	factories[name] = f
}

// Names lists the backends this build carries, in sorted order.
func Names() []string {
	mu.Lock()
	defer mu.Unlock()
	names := make([]string, 0, len(factories))
	for n := range factories {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Devices lists the devices of the backends this build carries, in sorted order: the
// devices whose trials a worker of this build can train.
func Devices() []string {
	var devs []string
	for _, n := range Names() {
		b, _ := Lookup(n)
		if !slices.Contains(devs, b.Device) {
			devs = append(devs, b.Device)
		}
	}
	slices.Sort(devs)
	return devs
}

// Routes lists the routes (RouteOf) of the backends this build carries on the given
// devices, in sorted order: the task queues whose trials a worker of this build trains.
func Routes(devices []string) []string {
	var routes []string
	for _, n := range Names() {
		b, _ := Lookup(n)
		if r := RouteOf(b); slices.Contains(devices, b.Device) && !slices.Contains(routes, r) {
			routes = append(routes, r)
		}
	}
	slices.Sort(routes)
	return routes
}

// Check tells whether this build can run the named backend: nil if it carries it, an
// *UnavailableError if the backend exists but this build lacks it, and an error naming the
// backends that exist for a name the catalog does not list.
func Check(name string) error {
	b, ok := Lookup(name)
	if !ok {
		names := make([]string, len(catalog))
		for i, b := range catalog {
			names[i] = b.Name
		}
		return fmt.Errorf("backend = %q: no such backend; sfsweep has %s", name, strings.Join(names, ", "))
	}
	mu.Lock()
	_, have := factories[name]
	mu.Unlock()
	if !have {
		return &UnavailableError{Backend: b, Have: Names()}
	}
	return nil
}

// New makes an engine of the named backend; a backend this build lacks is an
// *UnavailableError.
func New(name string, cfg model.Config, batch, seqLen int) (Engine, error) {
	if err := Check(name); err != nil {
		return nil, err
	}
	mu.Lock()
	f := factories[name]
	mu.Unlock()
	return f(cfg, batch, seqLen)
}
