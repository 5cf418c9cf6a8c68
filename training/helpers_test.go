package training

import (
	"context"
	"os"
	"slices"
	"sync"
	"testing"

	"github.com/sfsweep/sfsweep/training/checkpoint"
)

var corpusDir string

func osMkdirTemp() (string, error) {
	d, err := os.MkdirTemp("", "sfsweep-training-test-")
	corpusDir = d
	return d, err
}

func TestMain(m *testing.M) {
	code := m.Run()
	if corpusDir != "" {
		os.RemoveAll(corpusDir)
	}
	os.Exit(code)
}

// memRecord is a Record that keeps what a run hands it, for the tests to read; how it is
// stored is package trial's, and tested there.
type memRecord struct {
	mu     sync.Mutex
	config *Config
	curves []CurvePoint
	model  *checkpoint.Checkpoint
	card   *ModelCard
	result *Result
}

func (m *memRecord) WriteConfig(_ context.Context, cfg Config) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.config = &cfg
	return nil
}

func (m *memRecord) WriteCurves(_ context.Context, curves []CurvePoint) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.curves = slices.Clone(curves)
	return nil
}

func (m *memRecord) WriteModel(_ context.Context, model *checkpoint.Checkpoint, card ModelCard) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	ck := *model
	ck.Params = slices.Clone(model.Params)
	m.model, m.card = &ck, &card
	return nil
}

func (m *memRecord) WriteResult(_ context.Context, res *Result) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := *res
	m.result = &r
	return nil
}
