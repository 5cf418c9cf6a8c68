package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRunAdmitsByGPUMemory: "sfsweep run" on a machine with a GPU packs its -slots trials
// by the memory of the GPU its engine uses, as a worker does: on a stand-in GPU the size of
// one trial, the second of two says it waits for memory, then both complete.
func TestRunAdmitsByGPUMemory(t *testing.T) {
	ctx := serverTest(t, 4*time.Minute, "starts the embedded Temporal server and trains")
	dir := t.TempDir()
	manifest, per := gpuManifest(t, dir, "run-pair", "", "[1, 2]")
	standInMachine(t, dir, 1, mibFor(t, per, 1))
	run := startProcess(ctx, t, dir, "run", "run", "-ui=false", "-page", "off", "-slots", "2", "-window", "2",
		"-dir", filepath.Join(dir, "state"), "-out", filepath.Join(dir, "out"), manifest)
	if code := run.exitCode(); code != 0 {
		t.Fatalf("run: exit %d\n%s", code, run.output())
	}
	out := run.output()
	if !strings.Contains(out, ": waiting for GPU memory: needs ") || !strings.Contains(out, "free on GPU 0") {
		t.Errorf("no trial waited for GPU 0's memory:\n%s", out)
	}
	if strings.Contains(out, " failed: ") || strings.Contains(out, "out of device memory") {
		t.Errorf("an attempt failed:\n%s", out)
	}
	if res, _ := filepath.Glob(filepath.Join(dir, "state", "s3", "*", "trials", "*", "result.json")); len(res) != 2 {
		t.Errorf("%d results, want 2:\n%s", len(res), out)
	}
}
