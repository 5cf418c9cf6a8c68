package cuda

import (
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
