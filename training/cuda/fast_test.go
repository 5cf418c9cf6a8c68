package cuda

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestParseFast(t *testing.T) {
	if signedOff != fastCE|fastRound|fastNorm|fastSwiGLU || signedOff&^exactFast() != 0 {
		t.Errorf("signedOff = %v: a path on by default must change no bit", signedOff)
	}
	for _, tc := range []struct {
		in   string
		want fastPaths
	}{
		{"", signedOff},
		{"ce", signedOff},
		{"flash", signedOff | fastFlash},
		{" flash , ,flash", signedOff | fastFlash},
		{"-ce,-round,-norm,-swiglu", 0},
		{"-ce,-round,-norm,-swiglu,ce", fastCE},
		{" - round, graph", signedOff&^fastRound | fastGraph},
		{"graph,-graph", signedOff},
	} {
		got, err := parseFast(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("parseFast(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
	if f, err := parseFast("-norm,-swiglu"); err != nil || f.String() != "ce,round" {
		t.Errorf("parseFast(-norm,-swiglu) = %v, %v", f, err)
	}
	for _, bad := range []string{"flash,-", "-flsh"} {
		if _, err := parseFast(bad); err == nil || !strings.Contains(err.Error(), FastEnv+`=`+strconv.Quote(bad)) {
			t.Errorf("parseFast(%q) = %v, want an error naming %s and its value", bad, err, FastEnv)
		}
	}
	_, err := parseFast("ce,flsh")
	if err == nil || !strings.Contains(err.Error(), FastEnv+`="ce,flsh"`) || !strings.Contains(err.Error(), `"flsh"`) {
		t.Errorf("parseFast(ce,flsh) = %v, want an error naming %s, its value and the unknown name", err, FastEnv)
	}
	if allFast() != fastCE|fastRound|fastFlash|fastNorm|fastSwiGLU|fastCE1|fastGraph|fastLt|fastLogits16|fastAct16|fastRope|fastEmbed|fastRows ||
		exactFast() != fastCE|fastRound|fastNorm|fastSwiGLU|fastGraph|fastRope|fastEmbed|fastRows {
		t.Errorf("allFast() = %b, exactFast() = %b", allFast(), exactFast())
	}
	if f, err := parseFast("flash,round,ce"); err != nil || f.String() != "ce,round,flash,norm,swiglu" {
		t.Errorf("parseFast(flash,round,ce) = %v, %v", f, err)
	}
	if ks := fastKernels(fastCE); len(ks) == 0 || fastKernels(0) != nil {
		t.Errorf("fastKernels: %v for ce, %v for none", ks, fastKernels(0))
	}
	// a kernel that paths need together: with all of them, not with one alone
	const perm = "flash_permute_rope_bf16"
	if slices.Contains(fastKernels(fastAct16), perm) || slices.Contains(fastKernels(fastFlash|fastRope), perm) ||
		!slices.Contains(fastKernels(fastAct16|fastFlash|fastRope), perm) {
		t.Errorf("fastKernels: %s with act16 alone %v, flash and rope %v, all three %v", perm,
			slices.Contains(fastKernels(fastAct16), perm), slices.Contains(fastKernels(fastFlash|fastRope), perm),
			slices.Contains(fastKernels(fastAct16|fastFlash|fastRope), perm))
	}
}

// kernelFiles are the sources of the PTX: kernels.cu and the files it includes.
var kernelFiles = []string{"kernels.cu", "flash.cu", "rmsnorm.cu", "crossentropy.cu", "embedding.cu"}

// kernelSource is the source of the PTX: kernels.cu and the files it includes.
func kernelSource(t *testing.T) string {
	t.Helper()
	var src string
	for _, f := range kernelFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		src += string(b)
	}
	for _, f := range kernelFiles[1:] {
		if !strings.Contains(src, `#include "`+f+`"`) {
			t.Fatalf("kernels.cu does not include %s", f)
		}
	}
	return src
}

// Every kernel a fast path names is a kernel of kernels.cu or a file it includes, with C linkage: a
// misspelt name would only show on a GPU, as a path refused for a missing kernel.
func TestFastKernelsExist(t *testing.T) {
	src := kernelSource(t)
	defined := map[string]bool{}
	for _, m := range regexp.MustCompile(`__global__ void (?:__launch_bounds__\(\w+\) )?(\w+)\(`).FindAllStringSubmatch(src, -1) {
		defined[m[1]] = true
	}
	for _, k := range fastKernels(allFast()) {
		if !defined[k] {
			t.Errorf("fast-path kernel %s is not a __global__ function of kernels.cu", k)
		}
	}
	// every kernel of each file follows its extern "C" {
	for _, f := range kernelFiles {
		b, _ := os.ReadFile(f)
		extern := strings.Index(string(b), `extern "C" {`)
		if first := strings.Index(string(b), "__global__"); extern < 0 || first < extern {
			t.Errorf(`%s: a kernel is not inside the extern "C" block`, f)
		}
	}
}

// The Go side's tile constants are the header's, which the kernels compile with.
func TestFlashConstants(t *testing.T) {
	h, err := os.ReadFile("flashmath/flash_tiles.h")
	if err != nil {
		t.Fatal(err)
	}
	def := map[string]int{}
	for _, m := range regexp.MustCompile(`(?m)^#define (FLASH_\w+) (\d+)$`).FindAllStringSubmatch(string(h), -1) {
		def[m[1]], _ = strconv.Atoi(m[2])
	}
	// FLASH_BR is 16·FLASH_WARPS: a warp's 16 rows
	for name, want := range map[string]int{"FLASH_D": flashD, "FLASH_BC": flashBC, "FLASH_WARPS": flashThreads / 32} {
		if def[name] != want {
			t.Errorf("flash_tiles.h: %s = %d, the Go side has %d", name, def[name], want)
		}
	}
	if flashBR != 16*flashThreads/32 || !strings.Contains(string(h), "#define FLASH_BR (16 * FLASH_WARPS)") {
		t.Errorf("flashBR = %d, flashThreads = %d; the header's FLASH_BR is not 16 rows a warp", flashBR, flashThreads)
	}
}

// A trial's engine computes its backend's arithmetic alone: FastEnv turns on or off only
// the paths that change no bit, a name that changes bits is refused with the backend that
// computes with it (or none), and cuda-bf16-flash computes with flash and ce1 whatever
// FastEnv says, which may not turn them off.
func TestTrialPaths(t *testing.T) {
	for _, c := range []struct {
		name, env string
		want      fastPaths
		err       string
	}{
		{"cuda-bf16", "", signedOff, ""},
		{"cuda-bf16", "graph,embed,rope", signedOff | fastGraph | fastEmbed | fastRope, ""},
		{"cuda-bf16", "-ce,-round,-norm,-swiglu", 0, ""},
		{"cuda", "graph", signedOff | fastGraph, ""},
		{"cuda-bf16-flash", "", signedOff | fastFlash | fastCE1, ""},
		{"cuda-bf16-flash", "flash,rope", signedOff | fastFlash | fastCE1 | fastRope, ""},
		{"cuda-bf16", "flash", 0, "flash change the bits of backend cuda-bf16, and no environment variable may change a trial's bits: backend cuda-bf16-flash computes with them"},
		{"cuda-bf16", "ce1,flash", 0, "backend cuda-bf16-flash computes with them"},
		{"cuda-bf16", "lt", 0, "lt change the bits of backend cuda-bf16, and no environment variable may change a trial's bits: no backend computes with them"},
		{"cuda-bf16-flash", "act16", 0, "act16 change the bits of backend cuda-bf16-flash"},
		{"cuda-bf16-flash", "-flash", 0, "turns off flash, which backend cuda-bf16-flash computes with"},
		{"cuda-bf16", "flsh", 0, `unknown fast path "flsh"`},
	} {
		got, err := trialPaths(c.name, c.env)
		switch {
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("trialPaths(%s, %q) = %v, %v; want %v", c.name, c.env, got, err, c.want)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), FastEnv)):
			t.Errorf("trialPaths(%s, %q) = %v, %v; want an error naming %s and %q", c.name, c.env, got, err, FastEnv, c.err)
		}
	}
	// every arithmetic's paths change bits (else it would be the base arithmetic) and
	// exist in the catalog's cuda family
	for name, f := range arithmeticPaths {
		if f == 0 || f&exactFast() != 0 {
			t.Errorf("%s: paths %v: an arithmetic's paths change bits, and only those", name, f)
		}
	}
}

// The fast-path sets bench/gpu/check.sh passes to a GPU run parse, and mean what its
// stages say: EXACT changes no bit, OFF is the path without any, STAGED holds no path of stage 3 (cuBLASLt and the
// bfloat16 outputs), and ALL is every path. A misspelt name would cost a GPU call.
func TestCheckScriptPaths(t *testing.T) {
	b, err := os.ReadFile("../../bench/gpu/check.sh")
	if err != nil {
		t.Fatal(err)
	}
	sets := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^(EXACT|OFF|STAGED|ALL)=(\S+)$`).FindAllStringSubmatch(string(b), -1) {
		sets[m[1]] = os.Expand(m[2], func(k string) string { return sets[k] })
	}
	parsed := map[string]fastPaths{}
	for _, name := range []string{"EXACT", "OFF", "STAGED", "ALL"} {
		v, ok := sets[name]
		if !ok {
			t.Fatalf("check.sh defines no %s", name)
		}
		if parsed[name], err = parseFast(v); err != nil {
			t.Errorf("check.sh's %s: %v", name, err)
		}
	}
	if f := parsed["EXACT"]; f&^exactFast() != 0 {
		t.Errorf("EXACT = %s changes bits: %s", f, f&^exactFast())
	}
	if f := parsed["OFF"]; f != 0 {
		t.Errorf("OFF = %s, want no path", f)
	}
	if f := parsed["STAGED"]; f&(fastLt|fastLogits16|fastAct16) != 0 {
		t.Errorf("STAGED = %s holds stage 3's paths", f)
	}
	if f := parsed["ALL"]; f != allFast()&^fastRows {
		t.Errorf("ALL = %s, want every path but rows: %s", f, allFast()&^fastRows)
	}
}

// Every test pattern bench/gpu/check.sh runs on a GPU names tests that exist: each
// alternative of a -test.run pattern, and of a prove group, matches a test function of
// the repository. A misspelt or renamed test would otherwise run nothing there, and pass.
func TestCheckScriptTests(t *testing.T) {
	b, err := os.ReadFile("../../bench/gpu/check.sh")
	if err != nil {
		t.Fatal(err)
	}
	var tests []string
	def := regexp.MustCompile(`(?m)^func (Test\w+)\(t \*testing\.T\)`)
	err = filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != "../.." && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		for _, m := range def.FindAllStringSubmatch(string(src), -1) {
			tests = append(tests, m[1])
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var patterns []string
	for _, m := range regexp.MustCompile(`-test\.run '([^']+)'|"[a-z0-9]+:(Test[^"]+)"`).FindAllStringSubmatch(string(b), -1) {
		patterns = append(patterns, m[1]+m[2])
	}
	if len(patterns) < 10 {
		t.Fatalf("found %d test patterns in check.sh: %q", len(patterns), patterns)
	}
	for _, p := range patterns {
		for _, alt := range strings.Split(p, "|") {
			re, err := regexp.Compile(alt)
			if err != nil {
				t.Errorf("check.sh: pattern %q: %v", alt, err)
				continue
			}
			if !slices.ContainsFunc(tests, re.MatchString) {
				t.Errorf("check.sh: -test.run alternative %q (of %q) matches no test", alt, p)
			}
		}
	}
}

// The embedded PTX holds every kernel the engine needs by default, its own list
// (kernelNames) and the default fast paths', and no kernel the sources no longer define;
// a kernel it lacks belongs to a path off by default, which a PTX built from the sources
// (SFSWEEP_CUDA_PTX) brings until the embedded copy is regenerated. Without the default
// paths' kernels every GPU would fail the engine's construction.
func TestEmbeddedPTXCurrent(t *testing.T) {
	ptx, err := os.ReadFile("kernels.ptx")
	if err != nil {
		t.Fatal(err)
	}
	entries := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\.visible \.entry (\w+)\(`).FindAllStringSubmatch(string(ptx), -1) {
		entries[m[1]] = true
	}
	defined := map[string]bool{}
	for _, m := range regexp.MustCompile(`__global__ void (?:__launch_bounds__\(\w+\) )?(\w+)\(`).FindAllStringSubmatch(kernelSource(t), -1) {
		defined[m[1]] = true
	}
	optional := map[string]bool{}
	for _, k := range fastKernels(allFast() &^ signedOff) {
		optional[k] = true
	}
	for _, k := range append(slices.Clone(kernelNames), fastKernels(signedOff)...) {
		optional[k] = false
		if !entries[k] {
			t.Errorf("kernels.ptx lacks %s, which the engine needs by default: regenerate it (docs/gpu.md)", k)
		}
	}
	for k := range defined {
		if !entries[k] && !optional[k] {
			t.Errorf("kernels.ptx lacks kernel %s, which no path off by default names: regenerate it", k)
		}
	}
	for k := range entries {
		if !defined[k] {
			t.Errorf("kernels.ptx has kernel %s, which the sources no longer define: regenerate it", k)
		}
	}
}
