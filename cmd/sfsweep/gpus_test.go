package main

import (
	"context"
	"os"
	"reflect"
	"strings"
	"testing"
)

func TestParseGPUs(t *testing.T) {
	for _, text := range []string{
		"0, GPU-aaaa, 81559 MiB\n1, GPU-bbbb, 81559 MiB\n",
		"0, GPU-aaaa, 81559\n\n1, GPU-bbbb, 81559\n", // --format=csv,noheader,nounits
	} {
		gpus, err := parseGPUs(text)
		want := []gpu{{"0", "GPU-aaaa", 81559 << 20}, {"1", "GPU-bbbb", 81559 << 20}}
		if err != nil || !reflect.DeepEqual(gpus, want) {
			t.Errorf("parseGPUs(%q) = %+v, %v", text, gpus, err)
		}
		for _, g := range gpus {
			if back, err := parseGPUs(g.line()); err != nil || len(back) != 1 || back[0] != g {
				t.Errorf("%+v: line %q reads back as %+v, %v", g, g.line(), back, err)
			}
		}
	}
	for text, want := range map[string]string{
		"0, GPU-aaaa\n":                        `line 1: "0, GPU-aaaa": want index, uuid, memory.total`,
		"0, GPU-a, 1 MiB\n1, GPU-b, [N/A]\n":   `line 2: memory.total = "[N/A]": want a size in MiB`,
		"0, GPU-a, 0 MiB\n":                    `line 1: memory.total = "0 MiB"`,
		"0, GPU-a, 1 MiB, 2 MiB\n":             "line 1",
		"0, GPU-a, 81559 MiB\n1, GPU-b, 5 GiB": `line 2: memory.total = "5 GiB"`,
	} {
		if _, err := parseGPUs(text); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("parseGPUs(%q): %v, want %q", text, err, want)
		}
	}
}

// A GPU split into MIG instances is listed as its instances, with the memory of their
// profiles; a GPU without them stays whole.
func TestMIG(t *testing.T) {
	list := `GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-aaaa)
  MIG 3g.20gb     Device  0: (UUID: MIG-a0)
  MIG 1g.5gb      Device  1: (UUID: MIG-a1)
GPU 1: NVIDIA A100-SXM4-40GB (UUID: GPU-bbbb)
`
	gpus := withMIG([]gpu{{"0", "GPU-aaaa", 40 << 30}, {"1", "GPU-bbbb", 40 << 30}}, parseMIG(list))
	want := []gpu{{"0/0", "MIG-a0", 20e9}, {"0/1", "MIG-a1", 5e9}, {"1", "GPU-bbbb", 40 << 30}}
	if !reflect.DeepEqual(gpus, want) {
		t.Errorf("got %+v, want %+v", gpus, want)
	}
	if got := gpus[0].name(); got != "GPU 0/0" {
		t.Errorf("name %q", got)
	}
}

// The profiles of Hopper's MIG: media extensions (+me) keep their memory; compute
// instances share their GPU instance's, each with the share of its slices.
func TestMIGProfiles(t *testing.T) {
	list := `GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-cccc)
  MIG 1g.10gb+me  Device  0: (UUID: MIG-c0)
  MIG 1c.3g.40gb  Device  1: (UUID: MIG-c1)
  MIG 2c.3g.40gb  Device  2: (UUID: MIG-c2)
`
	want := []gpu{{"0/0", "MIG-c0", 10e9}, {"0/1", "MIG-c1", 13333333333}, {"0/2", "MIG-c2", 26666666666}}
	if got := parseMIG(list); !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestSelectGPUs(t *testing.T) {
	have := []gpu{{"0", "GPU-a", 1}, {"1", "GPU-b", 1}, {"2/0", "MIG-c", 1}}
	for flag, want := range map[string][]gpu{
		"all":             have,
		"1":               {have[1]},
		"MIG-c, 0":        {have[2], have[0]},
		"GPU-b,1,2/0":     {have[1], have[2]},
		"0,1,2/0,GPU-a,1": have,
	} {
		got, err := selectGPUs(flag, have)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("-gpus %s: %+v, %v", flag, got, err)
		}
	}
	if _, err := selectGPUs("0,3", have); err == nil || err.Error() != `-gpus = "0,3": no GPU "3" on this machine; it has 0 (GPU-a), 1 (GPU-b), 2/0 (MIG-c)` {
		t.Errorf("unknown GPU: %v", err)
	}
	if _, err := selectGPUs("all", nil); err == nil || !strings.Contains(err.Error(), "this machine has no GPU") {
		t.Errorf("no GPU: %v", err)
	}
}

func TestSpread(t *testing.T) {
	for _, c := range []struct {
		slots, n int
		want     []int
	}{{0, 3, []int{1, 1, 1}}, {8, 4, []int{2, 2, 2, 2}}, {7, 3, []int{3, 2, 2}}, {1, 1, []int{1}}} {
		if got, err := spread(c.slots, c.n); err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("spread(%d, %d) = %v, %v", c.slots, c.n, got, err)
		}
	}
	if _, err := spread(3, 4); err == nil || !strings.Contains(err.Error(), "-slots = 3: fewer than the 4 GPUs") {
		t.Errorf("spread(3, 4): %v", err)
	}
}

func TestWorkerGPU(t *testing.T) {
	if l, err := workerGPU(""); l != nil || err != nil {
		t.Errorf("no GPU: %v, %v", l, err)
	}
	l, err := workerGPU("3, GPU-c, 1024 MiB")
	if err != nil {
		t.Fatal(err)
	}
	if u := l.Usage(); u.Device != "GPU 3" || u.Total != 1<<30 {
		t.Errorf("usage %+v", u)
	}
	for _, env := range []string{"3, GPU-c", "0, GPU-a, 1 MiB\n1, GPU-b, 1 MiB"} {
		if _, err := workerGPU(env); err == nil || !strings.Contains(err.Error(), gpuEnv) {
			t.Errorf("%q: %v", env, err)
		}
	}
}

func TestRunGPU(t *testing.T) {
	ctx := context.Background()
	saved := listGPUs
	t.Cleanup(func() { listGPUs = saved })
	listGPUs = func(context.Context) ([]gpu, error) {
		return parseGPUs("0, GPU-a, 1024 MiB\n1, GPU-b, 2048 MiB")
	}
	t.Setenv(gpuEnv, "")
	t.Setenv("CUDA_VISIBLE_DEVICES", "") // restored after the test
	var note strings.Builder
	if l, v, err := runGPU(ctx, []string{"cpu"}, &note); l != nil || v != "" || err != nil || note.Len() > 0 {
		t.Errorf("no cuda: %v, %q, %v, %q", l, v, err, note.String())
	}
	for _, c := range []struct{ visible, want, uuid string }{
		{"", "GPU 0", "GPU-a"}, {"1", "GPU 1", "GPU-b"}, {"GPU-b,GPU-a", "GPU 1", "GPU-b"},
	} {
		if c.visible == "" {
			os.Unsetenv("CUDA_VISIBLE_DEVICES")
		} else {
			t.Setenv("CUDA_VISIBLE_DEVICES", c.visible)
		}
		l, v, err := runGPU(ctx, []string{"cpu", "cuda"}, &note)
		if err != nil || l == nil || l.Usage().Device != c.want || v != c.uuid {
			t.Errorf("CUDA_VISIBLE_DEVICES=%q: %v, %q, %v; want %s, %s", c.visible, l, v, err, c.want, c.uuid)
		}
	}
	t.Setenv("CUDA_VISIBLE_DEVICES", "GPU-z")
	if l, _, err := runGPU(ctx, []string{"cuda"}, &note); l != nil || err != nil || !strings.Contains(note.String(), `no GPU "GPU-z"`) {
		t.Errorf("an unknown GPU: %v, %v, %q", l, err, note.String())
	}
	t.Setenv(gpuEnv, "3, GPU-c, 512 MiB")
	if l, v, err := runGPU(ctx, []string{"cpu"}, &note); err != nil || l == nil || v != "" || l.Usage().Total != 512<<20 {
		t.Errorf("%s: %v, %v", gpuEnv, l, err)
	}
}
