package training

import (
	"context"
	"fmt"
	"os"

	"github.com/sfsweep/sfsweep/fielderr"
	"github.com/sfsweep/sfsweep/internal/blob"
	"github.com/sfsweep/sfsweep/training/data"
)

// OpenData opens the dataset of cfg.Data: a local directory of token files, a key prefix
// in store, or the default corpus prepared once into cacheDir.
func OpenData(ctx context.Context, cfg DataConfig, store blob.Store, cacheDir string) (*data.Dataset, error) {
	switch {
	case cfg.Default != "":
		return data.DefaultCorpus(ctx, cfg.Default, cacheDir, cfg.MaxBytes)
	case cfg.Path == "":
		return nil, &fielderr.Error{Field: "data", Value: "{}", Reason: "give data.path or data.default"}
	}
	if fi, err := os.Stat(cfg.Path); err == nil && fi.IsDir() {
		return data.OpenDir(cfg.Path)
	}
	if store == nil {
		return nil, &fielderr.Error{Field: "data.path", Value: cfg.Path, Reason: "not a local directory, and no object store to read it from"}
	}
	return data.Open(ctx, store, cfg.Path)
}

// datasetBatches are the Batches of a run over a dataset.
type datasetBatches struct {
	ds    *data.Dataset
	train *data.Sampler
	rows  int
	seq   int
	evals map[[2]int]*data.EvalWindows
}

// NewBatches returns the batches of a run of cfg (defaults applied) over ds: training
// sequences sampled by (seed, step, micro-batch, row), and the first windows of the
// validation and test splits. Every token must be inside the model's vocabulary.
func NewBatches(cfg Config, ds *data.Dataset) (Batches, error) {
	mc, err := cfg.ResolveModel()
	if err != nil {
		return nil, err
	}
	if err := ds.CheckVocab(mc.Vocab); err != nil {
		return nil, fmt.Errorf("data: %w (the model's vocab is %d; use a dataset of its tokenizer)", err, mc.Vocab)
	}
	train, err := ds.Split("train")
	if err != nil {
		return nil, err
	}
	s, err := data.NewSampler(train, cfg.SeqLen, cfg.Seed)
	if err != nil {
		return nil, err
	}
	b := &datasetBatches{ds: ds, train: s, rows: cfg.MicroBatch, seq: cfg.SeqLen, evals: map[[2]int]*data.EvalWindows{}}
	for _, split := range []struct {
		name string
		n    int
	}{{"val", cfg.EvalSeqs}, {"test", cfg.TestSeqs}} {
		if n, _ := b.EvalBatches(split.name, split.n); n == 0 {
			return nil, fmt.Errorf("data: the %s split holds fewer than micro_batch = %d windows of seq_len = %d tokens", split.name, cfg.MicroBatch, cfg.SeqLen)
		}
	}
	return b, nil
}

func (b *datasetBatches) Fill(step, micro int, tokens, targets []int32) {
	b.train.Fill(step, micro, tokens, targets)
}

// EvalBatches returns the whole micro-batches of the split's first maxSeqs windows: a
// partial last batch is left out, so every evaluated loss is a mean over full batches.
func (b *datasetBatches) EvalBatches(split string, maxSeqs int) (int, func(i int, tokens, targets []int32)) {
	idx := 0
	if split == "test" {
		idx = 1
	}
	w, ok := b.evals[[2]int{idx, maxSeqs}]
	if !ok {
		toks, err := b.ds.Split(split)
		if err != nil {
			return 0, nil
		}
		if w, err = data.Windows(toks, b.seq, maxSeqs); err != nil {
			return 0, nil
		}
		b.evals[[2]int{idx, maxSeqs}] = w
	}
	return w.N / b.rows, func(i int, tokens, targets []int32) { w.Fill(i, tokens, targets) }
}
