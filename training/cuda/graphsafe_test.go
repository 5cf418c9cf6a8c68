package cuda

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// passFiles are the sources of the forward and backward passes that the micro-batch graph
// captures (graph.go).
var passFiles = []string{"llama.go", "gpt2.go", "flash.go", "round.go", "crossentropy.go", "run.go"}

// The passes allocate no device memory, copy nothing to or from the host and wait for
// nothing, which a capture refuses, but for Forward's copy of the losses, which an
// Accumulate's pass skips: checked here on the source, and on the GPU by the capture
// itself (TestGraphBitwise).
func TestPassesGraphSafe(t *testing.T) {
	// a call or a method value (r.do(r.st.sync)), outside comments
	unsafe := regexp.MustCompile(`\b(sync|alloc|mk|htod|dtoh|allocPinned|MemAlloc\w*|Synchronize|Memcpy[HD]to[HD]\w*|MakeEvent|Record)\b`)
	for _, f := range passFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(b), "\n")
		for i, line := range lines {
			if code, _, _ := strings.Cut(line, "//"); !unsafe.MatchString(code) {
				continue
			}
			// the one exception: Forward's losses, copied back only outside an Accumulate
			if f == "crossentropy.go" && strings.Contains(line, "dtoh(e.st, e.lossHost, e.losses)") && i > 0 && strings.Contains(lines[i-1], "if !e.queued {") {
				continue
			}
			t.Errorf("%s:%d: %s: a pass that a graph captures may not allocate, copy to or from the host, or wait", f, i+1, strings.TrimSpace(line))
		}
	}
}
