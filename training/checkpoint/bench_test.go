package checkpoint

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/sfsweep/sfsweep/sfadamw"
	"github.com/sfsweep/sfsweep/training/model"
)

// benchModel is a LLaMA of 7.3M parameters: with SF-AdamW's z and v, an 88 MB checkpoint.
var benchModel = model.Config{Arch: model.LLaMA, Vocab: 8192, Dim: 256, Layers: 4, Heads: 4, Context: 256, Hidden: 688, Batch: 8}.WithDefaults()

// BenchmarkCodec times, interleaved in one loop over the same checkpoint: Encode, Decode
// (which copies into fresh float32 slices), the aliasing decode that Load uses, SHA-256 of
// the file (what Save and Load add), and bytes.Clone of the file — a fresh buffer of the
// same size filled by memmove, the baseline. It reports GB/s of each and its ratio to the
// clone.
func BenchmarkCodec(b *testing.B) {
	n := benchModel.NumParams()
	c := &Checkpoint{Step: 1, Model: benchModel, Params: filled(n, 1)}
	st := sfadamw.State[float32]{Algorithm: "sfadamw", Vectors: []sfadamw.Vector[float32]{{Name: "z", Data: filled(n, 2)}, {Name: "v", Data: filled(n, 3)}}}
	if err := c.PutOptimizer("opt", st); err != nil {
		b.Fatal(err)
	}
	file, err := c.Encode()
	if err != nil {
		b.Fatal(err)
	}
	var tEnc, tDec, tAlias, tSHA, tClone time.Duration
	var sink int
	b.ResetTimer()
	// Each operation allocates the size of the file; collecting garbage before each, outside
	// the timed region, keeps one operation's garbage from being charged to the next.
	timed := func(total *time.Duration, op func()) {
		b.StopTimer()
		runtime.GC()
		b.StartTimer()
		t0 := time.Now()
		op()
		*total += time.Since(t0)
	}
	for range b.N {
		var err1, err2, err3 error
		timed(&tEnc, func() {
			var enc []byte
			enc, err1 = c.Encode()
			sink += len(enc)
		})
		timed(&tDec, func() {
			var d *Checkpoint
			if d, err2 = Decode(file); err2 == nil {
				sink += len(d.Params)
			}
		})
		timed(&tAlias, func() {
			var a *Checkpoint
			if a, err3 = decode(file, true); err3 == nil {
				sink += len(a.Params)
			}
		})
		timed(&tSHA, func() {
			sum := sha256.Sum256(file)
			sink += int(sum[0])
		})
		timed(&tClone, func() { sink += len(bytes.Clone(file)) })
		if err := errors.Join(err1, err2, err3); err != nil {
			b.Fatal(err)
		}
	}
	if sink == 0 {
		b.Fatal("nothing done")
	}
	bytesDone := float64(b.N) * float64(len(file))
	gbps := func(d time.Duration) float64 { return bytesDone / d.Seconds() / 1e9 }
	b.ReportMetric(float64(len(file))/1e6, "MB/file")
	b.ReportMetric(gbps(tEnc), "encode-GB/s")
	b.ReportMetric(gbps(tDec), "decode-GB/s")
	b.ReportMetric(gbps(tAlias), "decode-alias-GB/s")
	b.ReportMetric(gbps(tSHA), "sha256-GB/s")
	b.ReportMetric(gbps(tClone), "clone-GB/s")
	b.ReportMetric(float64(tEnc)/float64(tClone), "encode/clone")
	b.ReportMetric(float64(tDec)/float64(tClone), "decode/clone")
}
