package program

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sfsweep/sfsweep/fielderr"
)

// A launcher starts a trainer's program once per GPU of its trial, as one job of several
// ranks on one node (docs/trainer.md, "Trials of several GPUs").

// LauncherTorchrun is PyTorch's elastic launcher, torch.distributed.run (torchrun): it
// starts each rank with RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT set, ends
// every rank when one fails, and exits non-zero then.
const LauncherTorchrun = "torchrun"

// Launchers are the launchers a trainer may name.
var Launchers = []string{LauncherTorchrun}

// torchrunModule is the module a Python runs as torchrun.
const torchrunModule = "torch.distributed.run"

// torchrun runs torchrunModule as torchrun does, with its arguments. torch before 2.0
// cannot start its ranks on Python 3.11 (Debian 12's python3-torch 1.13 on its Python):
// it reads --redirects and --tee through an IntFlag whose zero Python 3.11 no longer
// iterates, and fails with "'NoneType' object has no attribute 'get'". Where that is so,
// the two are read as they mean.
const torchrun = `import runpy, sys
try:
    from torch.distributed.elastic.multiprocessing import api
    if api.Std.from_str("0") is None:
        def from_str(vm, parse=api.Std.from_str):
            if vm.isdigit():
                return api.Std(int(vm))
            if ":" in vm:
                return {int(i): api.Std(int(v)) for i, v in (m.split(":") for m in vm.split(","))}
            return parse(vm)
        api.Std.from_str = staticmethod(from_str)
except (ImportError, AttributeError):
    pass
sys.argv[0] = "torchrun"
runpy.run_module("` + torchrunModule + `", run_name="__main__", alter_sys=True)
`

// launcherPython is the Python that runs torchrun for a trainer without an interpreter.
const launcherPython = "python3"

// launcherPython is the Python that runs s's launcher: its interpreter, which has the
// program's torch, else python3 on PATH.
func (s Spec) launcherPython() string { return cmp.Or(s.Interpreter, launcherPython) }

// Launch is the argv that starts argv (Argv's) as ranks processes of one node. Without a
// launcher that is argv itself, and ranks must be 1. With torchrun it is
//
//	<python> -c <torchrun> --nnodes=1 --nproc_per_node=<ranks>
//	    --master_addr=127.0.0.1 --master_port=<free port> --max_restarts=0
//	    --monitor_interval=1 --no_python <argv...>
//
// which runs argv unchanged in each rank: torchrun as torch.distributed.run (see torchrun
// for what it mends), by the trainer's interpreter, or python3. The rendezvous is on the loopback, on a port free when Launch looked: each
// attempt gets its own, so that trials on one node never meet. No restart within the
// attempt: a rank that dies fails the attempt, which is retried from its checkpoint.
func (s Spec) Launch(argv []string, ranks int) ([]string, error) {
	if s.Launcher == "" {
		if ranks > 1 {
			return nil, &fielderr.Error{Field: "trainer.launcher", Value: "", Reason: fmt.Sprintf("is required for a trial of %d GPUs: launcher: torchrun starts the program once per GPU", ranks), Line: s.Line}
		}
		return argv, nil
	}
	if s.Launcher != LauncherTorchrun {
		return nil, &fielderr.Error{Field: "trainer.launcher", Value: s.Launcher, Reason: "unknown launcher: want " + strings.Join(Launchers, ", "), Line: s.Line}
	}
	port, err := freePort()
	if err != nil {
		return nil, fmt.Errorf("program: a rendezvous port for torchrun: %w", err)
	}
	out := []string{s.launcherPython(), "-c", torchrun,
		"--nnodes=1", "--nproc_per_node=" + strconv.Itoa(max(ranks, 1)),
		"--master_addr=127.0.0.1", "--master_port=" + strconv.Itoa(port),
		"--max_restarts=0", "--monitor_interval=1", "--no_python"}
	return append(out, argv...), nil
}

// freePort is a TCP port of the loopback that no one listens on now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// launcherCheck bounds checkLauncher's import of torchrun.
const launcherCheck = 2 * time.Minute

// checkLauncher reports, as a *fielderr.Error, why s's launcher cannot start here: its
// Python is not on PATH or cannot import torch.distributed.run.
func (s Spec) checkLauncher(ctx context.Context) error {
	if s.Launcher == "" {
		return nil
	}
	if !slices.Contains(Launchers, s.Launcher) {
		return &fielderr.Error{Field: "launcher", Value: s.Launcher, Reason: "unknown launcher: want " + strings.Join(Launchers, ", "), Line: s.Line}
	}
	py := s.launcherPython()
	if _, err := exec.LookPath(py); err != nil {
		return &fielderr.Error{Field: "launcher", Value: s.Launcher, Reason: py + ", which runs torchrun, is not on this worker's PATH", Line: s.Line}
	}
	ctx, cancel := context.WithTimeout(ctx, launcherCheck)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, "-c", "import "+torchrunModule)
	env, err := environ(s.Env, os.TempDir(), s.EnvPass) // the program's: none of the worker's credentials
	if err != nil {
		return &fielderr.Error{Field: "env", Value: s.Launcher, Reason: err.Error(), Line: s.Line}
	}
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		return &fielderr.Error{Field: "launcher", Value: s.Launcher, Reason: fmt.Sprintf("%s cannot import %s (%v): %s", py, torchrunModule, err, summary(strings.Split(string(out), "\n"))), Line: s.Line}
	}
	return nil
}
