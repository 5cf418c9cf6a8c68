package program

import (
	"errors"
	"strings"
	"testing"

	"github.com/sfsweep/sfsweep/fielderr"
)

// A registry states a trainer's GPU memory in binary units; a trainer that states none
// has 0, its GPU whole. A malformed figure is refused naming the field, the value and its
// line.
func TestParseRegistryGPUMemory(t *testing.T) {
	reg, err := ParseRegistry([]byte("trainers:\n  big:\n    program: x\n    gpu_memory: 20GiB\n    home: cache/home\n  whole:\n    program: x\n"))
	if err != nil {
		t.Fatal(err)
	}
	if reg["big"].Home != "cache/home" || reg["whole"].Home != "" {
		t.Errorf("home: big %q, whole %q; want cache/home and none", reg["big"].Home, reg["whole"].Home)
	}
	if reg["big"].GPUMemory != 20<<30 || reg["whole"].GPUMemory != 0 {
		t.Errorf("gpu_memory: big %d, whole %d; want %d and 0", reg["big"].GPUMemory, reg["whole"].GPUMemory, int64(20<<30))
	}
	for _, tc := range []struct {
		value string
		want  int64
	}{
		{"20GiB", 20 << 30},
		{"1.5 GiB", 3 << 29},
		{"512MiB", 512 << 20},
		{"2TiB", 2 << 40},
		{"\"79.5GiB\"", 795 << 30 / 10},
	} {
		reg, err := ParseRegistry([]byte("trainers:\n  a:\n    program: x\n    gpu_memory: " + tc.value + "\n"))
		if err != nil || reg["a"].GPUMemory != tc.want {
			t.Errorf("gpu_memory: %s = %v (%v), want %d", tc.value, reg["a"].GPUMemory, err, tc.want)
		}
	}
	for _, tc := range []struct{ value, shown, reason string }{
		{"20", "20", "with its unit"},
		{"20GB", "20GB", "unit GB: want MiB, GiB or TiB"},
		{"20 gib", "20 gib", "unit gib"},
		{"lots", "lots", "with its unit"},
		{"-1GiB", "-1GiB", "with its unit"},
		{"0GiB", "0GiB", "1MiB or more"},
		{"0.5MiB", "0.5MiB", "1MiB or more"},
		{"2048TiB", "2048TiB", "more than any GPU"},
		{"[20GiB]", "[20GiB]", "with its unit"},
		{"", "", "with its unit"},
	} {
		_, err := ParseRegistry([]byte("trainers:\n  a:\n    program: x\n    version: v\n    gpu_memory: " + tc.value + "\n"))
		var fe *fielderr.Error
		if !errors.As(err, &fe) || fe.Field != "trainers.a.gpu_memory" || fe.Value != tc.shown || fe.Line != 5 || !strings.Contains(fe.Reason, tc.reason) {
			t.Errorf("gpu_memory: %q: %v, want trainers.a.gpu_memory = %s on line 5: ...%s...", tc.value, err, tc.shown, tc.reason)
		}
	}
}

// A registry passes variables of the worker's environment by name or prefix*; a pattern
// that would reach sfsweep's variables or the object store's credentials, or that is no
// name, is refused naming the field, the value and its line.
func TestParseRegistryEnvPass(t *testing.T) {
	reg, err := ParseRegistry([]byte("trainers:\n  ddp:\n    program: x\n    env_pass: [NCCL_*, HF_HOME, CUDA_*]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := reg["ddp"].EnvPass; len(got) != 3 || got[0] != "NCCL_*" || got[1] != "HF_HOME" {
		t.Errorf("env_pass %q", got)
	}
	for _, tc := range []struct{ value, reason string }{
		{"AWS_*", "AWS_* variables"},
		{"AWS_SECRET_ACCESS_KEY", "AWS_* variables"},
		{"A*", "AWS_* variables"},
		{"*", "variable name"},
		{"SFSWEEP_S3_SECRET", "SFSWEEP_* variables"},
		{"S*", "SFSWEEP_* variables"},
		{"NCCL-*", "variable name"},
		{"NC*CL", "variable name"},
	} {
		_, err := ParseRegistry([]byte("trainers:\n  a:\n    program: x\n    version: v\n    env_pass: [OK_NAME, \"" + tc.value + "\"]\n"))
		var fe *fielderr.Error
		if !errors.As(err, &fe) || fe.Field != "trainers.a.env_pass[1]" || fe.Value != tc.value || !strings.Contains(fe.Reason, tc.reason) {
			t.Errorf("env_pass %q: %v, want trainers.a.env_pass[1] = %s: ...%s...", tc.value, err, tc.value, tc.reason)
		}
	}
	if _, err := ParseRegistry([]byte("trainers:\n  a:\n    program: x\n    env_pass: NCCL_*\n")); err == nil || !strings.Contains(err.Error(), "env_pass") {
		t.Errorf("env_pass not a list: %v", err)
	}
}
