package main

import (
	"bytes"
	"context"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// reexecEnv, set in the environment of the test binary, makes it run as the sfsweep
// command with its own arguments instead of running the tests: fault-injection tests start
// workers and servers as separate processes they can kill.
const reexecEnv = "SFSWEEP_TEST_RUN_MAIN"

// standInCUDAEnv, set with reexecEnv, registers a stand-in "cuda" backend in the process:
// the cpu engine under the cuda name, so that routing by device can be tested end to end
// on a machine without a GPU. Only the test binary has it.
const standInCUDAEnv = "SFSWEEP_TEST_STAND_IN_CUDA"

func TestMain(m *testing.M) {
	if os.Getenv(fakeTrainerEnv) == "1" {
		fakeTrainer() // exits
	}
	if os.Getenv(reexecEnv) == "1" {
		os.Unsetenv(reexecEnv)
		registerStandIn()
		main() // exits
	}
	os.Exit(m.Run())
}

// TestCommands checks the commands table: every command has a unique name, a summary and a
// run function, and "sfsweep help" lists each one with its summary.
func TestCommands(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := runMain(context.Background(), []string{"help"}, &stdout, &stderr); code != 0 {
		t.Fatalf("sfsweep help: exit code %d, want 0; stderr:\n%s", code, stderr.String())
	}
	lines := strings.Split(stdout.String(), "\n")
	seen := map[string]bool{}
	for _, c := range commands {
		if c.name == "" || strings.ContainsAny(c.name, " \t") {
			t.Errorf("command %q: bad name", c.name)
		}
		if seen[c.name] {
			t.Errorf("command %q listed twice", c.name)
		}
		seen[c.name] = true
		if strings.TrimSpace(c.summary) == "" {
			t.Errorf("command %q: empty summary", c.name)
		}
		if c.run == nil {
			t.Errorf("command %q: no run function", c.name)
		}
		listed := false
		for _, l := range lines {
			if f := strings.Fields(l); len(f) > 1 && f[0] == c.name && strings.HasSuffix(l, " "+c.summary) {
				listed = true
				break
			}
		}
		if !listed {
			t.Errorf("sfsweep help does not list %q with its summary; output:\n%s", c.name, stdout.String())
		}
	}
}

// TestUnknownCommand checks that an unknown command prints the usage to stderr and exits 2.
func TestUnknownCommand(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := runMain(context.Background(), []string{"nosuchcommand"}, &stdout, &stderr); code != 2 {
		t.Errorf("exit code %d, want 2", code)
	}
	if !strings.HasPrefix(stderr.String(), `sfsweep: unknown command "nosuchcommand"`) || !strings.Contains(stderr.String(), "Commands:") {
		t.Errorf("stderr:\n%s", stderr.String())
	}
	if stdout.Len() != 0 {
		t.Errorf("stdout not empty:\n%s", stdout.String())
	}
}

// serverTest skips t under -short, saying why (it starts the embedded Temporal server, say),
// and returns a context that ends after d or with the test.
func serverTest(t *testing.T, d time.Duration, why string) context.Context {
	t.Helper()
	if testing.Short() {
		t.Skip(why + " (-short)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// Every command's -h exits 0 with a usage line that names the command and its arguments;
// version prints the binary's version and Go toolchain.
func TestEveryHelp(t *testing.T) {
	for _, c := range commands {
		var stdout, stderr bytes.Buffer
		code := runMain(context.Background(), []string{c.name, "-h"}, &stdout, &stderr)
		first, _, _ := strings.Cut(stderr.String()+stdout.String(), "\n")
		if code != 0 || !strings.HasPrefix(first, "Usage: sfsweep "+c.name) {
			t.Errorf("sfsweep %s -h: exit %d, first line %q", c.name, code, first)
		}
	}
	var stdout, stderr bytes.Buffer
	if code := runMain(context.Background(), []string{"submit", "-h"}, &stdout, &stderr); code != 0 || !strings.Contains(stderr.String(), "Usage: sfsweep submit [flags] MANIFEST.yaml") {
		t.Errorf("submit -h does not name its argument:\n%s", stderr.String())
	}
	stdout.Reset()
	if code := runMain(context.Background(), []string{"version"}, &stdout, &stderr); code != 0 ||
		!strings.HasPrefix(stdout.String(), "sfsweep ") || !strings.Contains(stdout.String(), runtime.Version()) {
		t.Errorf("version: exit %d, %q", code, stdout.String())
	}
}
