package cuda

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

func TestParseFast(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want fastPaths
	}{
		{"", 0},
		{"ce", fastCE},
		{" ce , ,ce", fastCE},
		{"round,ce", fastCE | fastRound},
	} {
		got, err := parseFast(tc.in)
		if err != nil || got != tc.want || (tc.want == fastCE|fastRound && got.String() != "ce,round") {
			t.Errorf("parseFast(%q) = %b, %v; want %b", tc.in, got, err, tc.want)
		}
	}
	_, err := parseFast("ce,flash")
	if err == nil || !strings.Contains(err.Error(), FastEnv+`="ce,flash"`) || !strings.Contains(err.Error(), `"flash"`) {
		t.Errorf("parseFast(ce,flash) = %v, want an error naming %s, its value and the unknown name", err, FastEnv)
	}
	if allFast() != fastCE|fastRound {
		t.Errorf("allFast() = %b", allFast())
	}
	if ks := fastKernels(fastCE); len(ks) == 0 || fastKernels(0) != nil {
		t.Errorf("fastKernels: %v for ce, %v for none", ks, fastKernels(0))
	}
}

// Every kernel a fast path names is a kernel of kernels.cu, with C linkage: a misspelt
// name would only show on a GPU, as a path refused for a missing kernel.
func TestFastKernelsExist(t *testing.T) {
	src, err := os.ReadFile("kernels.cu")
	if err != nil {
		t.Fatal(err)
	}
	defined := map[string]bool{}
	for _, m := range regexp.MustCompile(`__global__ void (\w+)\(`).FindAllStringSubmatch(string(src), -1) {
		defined[m[1]] = true
	}
	for _, k := range fastKernels(allFast()) {
		if !defined[k] {
			t.Errorf("fast-path kernel %s is not a __global__ function of kernels.cu", k)
		}
	}
	if extern := strings.Index(string(src), `extern "C" {`); extern < 0 || !strings.Contains(string(src[extern:]), "__global__ void crossentropy_loss(") {
		t.Errorf(`the kernels are not inside kernels.cu's extern "C" block`)
	}
}
