package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sfsweep/sfsweep/internal/blob"
	"github.com/sfsweep/sfsweep/internal/keys"
	"github.com/sfsweep/sfsweep/sweeps"
	"github.com/sfsweep/sfsweep/training"
	"github.com/sfsweep/sfsweep/trial"
)

// overheadManifest is a sweep of n one-step trials of a minute model: what remains of a
// trial's time is the pipeline's (plan, child workflow, activities, store I/O, tables).
func overheadManifest(name string, n, seed0 int) string {
	seeds := make([]string, n)
	for i := range seeds {
		seeds[i] = fmt.Sprint(seed0 + i)
	}
	return fmt.Sprintf(`name: %s
model_config: {arch: llama, vocab: 257, dim: 8, layers: 1, heads: 2, context: 8, hidden: 8, batch: 1}
data: {default: byte, max_bytes: 100000}
batch_tokens: 8
steps: 1
eval_seqs: 1
test_seqs: 1
max_trials: 100000
seeds: [%s]
optimizers:
  - {name: sfadamw, lr: 1e-3, betas: [[0.9, 0.99]]}
tables:
  - {kind: hyperparameters, name: overhead}
`, name, strings.Join(seeds, ", "))
}

// BenchmarkSweepOverhead runs sweeps of one-step trials through the embedded stack (real
// Temporal server, S3 gateway, workers) and, in the same benchmark, the same trials
// through training.Run alone; it reports the pipeline's time per trial beyond training.
//
//	go test -run '^$' -bench SweepOverhead -benchtime 1x ./cmd/sfsweep
func BenchmarkSweepOverhead(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("trials=%d", n), func(b *testing.B) {
			dir := b.TempDir()
			var sweepTime, directTime time.Duration
			for i := range b.N {
				src := overheadManifest(fmt.Sprintf("overhead-%d", n), n, i*n)
				manifest := filepath.Join(dir, fmt.Sprintf("m%d.yaml", i))
				os.WriteFile(manifest, []byte(src), 0o644)
				start := time.Now()
				if code := runMain(context.Background(), []string{"run", "-ui=false", "-slots", "4", "-dir", filepath.Join(dir, "state"), "-out", filepath.Join(dir, "out"), "-window", "16", manifest}, io.Discard, io.Discard); code != 0 {
					b.Fatalf("run: exit %d", code)
				}
				sweepTime += time.Since(start)

				// the same trials, trained directly into a local store
				m, _ := sweeps.Parse([]byte(src))
				trials, _ := m.Expand()
				store, _ := blob.NewDir(filepath.Join(dir, fmt.Sprintf("direct%d", i)))
				ds, err := training.OpenData(context.Background(), trials[0].Config.Data, store, filepath.Join(dir, "state", "data"))
				if err != nil {
					b.Fatal(err)
				}
				start = time.Now()
				for _, t := range trials {
					bt, err := training.NewBatches(t.Config, ds)
					if err != nil {
						b.Fatal(err)
					}
					if _, err := training.Run(context.Background(), t.Config, training.Options{Store: store, Prefix: keys.Trial(t.ID), Record: trial.Recorder{Store: store, Prefix: keys.Trial(t.ID)}, Data: bt}); err != nil {
						b.Fatal(err)
					}
				}
				directTime += time.Since(start)
			}
			per := float64(b.N * n)
			b.ReportMetric(sweepTime.Seconds()/float64(b.N), "s/sweep")
			b.ReportMetric(sweepTime.Seconds()*1e3/per, "ms/trial")
			b.ReportMetric(directTime.Seconds()*1e3/per, "ms/trial-direct")
			b.ReportMetric((sweepTime-directTime).Seconds()*1e3/per, "ms/trial-overhead")
		})
	}
}
