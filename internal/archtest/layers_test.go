package archtest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/sfsweep/sfsweep"

// floors are the module's packages by floor, lowest first. A package imports only
// packages on lower floors: no arrow runs back up, and none runs sideways.
var floors = [][]string{
	// plain values and the object store's interface
	{"fielderr", "internal/status", "internal/keys", "internal/par", "internal/fp32", "internal/probe",
		"internal/blob", "internal/netx", "internal/stats", "internal/faultproxy", "internal/tlsproxy", "internal/pki",
		"internal/archtest", "internal/peak", "internal/gpulock", "infra", "training/checkpoint/safetensors", "training/cuda/flashmath"},
	// the optimizers, the matrix product, data, the search engine, the workflows' messages
	{"sfadamw", "training/model", "training/gemm", "training/data", "search", "workflows", "internal/figure", "program"},
	// what builds on the optimizers: engines' interface, checkpoints; the workflows' client
	{"training/backend", "training/checkpoint", "sweepclient", "analysis"},
	// the engines (training/cuda's floor is that of its cuda build, which imports the
	// engines' interface, the model and the optimizers; untagged it imports none of them)
	{"training/native", "training/oracle", "training/cuda"},
	// the trainer
	{"training"},
	// the trial record and the manifest
	{"trial", "sweeps"},
	// presentation
	{"report"},
	// the adapters: activities and the page
	{"activities", "web"},
	// the outside world
	{"infra/s3store", "infra/devserver", "infra/temporalclient"},
	{"infra/s3gw"},
	// the program
	{"cmd/sfsweep", "examples/pytorch", "examples/quickstart"},
	// tests of the program, run as a process of its own
	{"cmd/sfsweep/loadtest"},
}

// external are the only rooms that may import a dependency, by import path prefix.
var external = map[string][]string{
	"go.temporal.io/server":           {"infra/devserver"},
	"github.com/aws/":                 {"infra/s3store", "infra/s3gw"},
	"github.com/versity/":             {"infra/s3gw"},
	"go.temporal.io/sdk/workflow":     {"workflows"},
	"go.temporal.io/sdk/activity":     {"activities"},
	"go.temporal.io/":                 {"workflows", "activities", "sweepclient", "web", "infra/temporalclient", "infra/devserver", "cmd/sfsweep"},
	"gorgonia.org/gorgonia":           {"training/oracle"},
	"gorgonia.org/tensor":             {"training/oracle"},
	"gorgonia.org/cu":                 {"training/cuda"},
	"github.com/c-bata/goptuna":       {"search"},
	"github.com/tiktoken-go/":         {"training/data"},
	"gonum.org/v1/plot":               {"internal/figure", "report", "analysis"},
	"codeberg.org/go-pdf/":            {"internal/figure"},
	"github.com/chromedp/":            {},
	"github.com/temporalio/ui-server": {"infra/devserver"},
}

type pkg struct {
	ImportPath string
	Imports    []string
}

// builds are the build tags the floors must hold under: the default build, and the cuda
// engine's (cgo on, so that go list reads the files that import "C"; it compiles nothing).
var builds = []struct {
	name string
	args []string
	env  []string
}{
	{"default", nil, nil},
	{"cuda", []string{"-tags", "cuda"}, []string{"CGO_ENABLED=1"}},
}

func list(t *testing.T, args, env []string) []pkg {
	t.Helper()
	cmd := exec.Command("go", append(append([]string{"list"}, args...), "-json=ImportPath,Imports", module+"/...")...)
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []pkg
	dec := json.NewDecoder(bufio.NewReader(bytes.NewReader(out)))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

func TestImportsPointDown(t *testing.T) {
	floor := map[string]int{}
	for i, f := range floors {
		for _, p := range f {
			floor[p] = i
		}
	}
	for _, b := range builds {
		t.Run(b.name, func(t *testing.T) { importsPointDown(t, floor, list(t, b.args, b.env)) })
	}
}

// importsPointDown checks the imports of pkgs against the floors and the rooms of external
// dependencies.
func importsPointDown(t *testing.T, floor map[string]int, pkgs []pkg) {
	if len(pkgs) < 20 {
		t.Fatalf("go list found %d packages", len(pkgs))
	}
	for _, p := range pkgs {
		name := strings.TrimPrefix(p.ImportPath, module+"/")
		if strings.HasPrefix(name, "bench/") {
			continue
		}
		from, ok := floor[name]
		if !ok {
			t.Errorf("%s has no floor: add it to floors (and its room to ARCHITECTURE.md)", name)
			continue
		}
		for _, imp := range p.Imports {
			if dep, ok := strings.CutPrefix(imp, module+"/"); ok {
				to, known := floor[dep]
				if known && to >= from {
					t.Errorf("%s (floor %d) imports %s (floor %d): imports point down", name, from, dep, to)
				}
				continue
			}
			if allowed, limited := rooms(imp); limited && !slices.Contains(allowed, name) {
				t.Errorf("%s imports %s: only %v may", name, imp, allowed)
			}
		}
	}
}

// rooms returns the rooms that may import imp, by the longest prefix of external that
// matches it; limited is false for a dependency external does not name.
func rooms(imp string) (allowed []string, limited bool) {
	best := ""
	for prefix := range external {
		if strings.HasPrefix(imp, prefix) && len(prefix) > len(best) {
			best = prefix
		}
	}
	if best == "" {
		return nil, false
	}
	return external[best], true
}
