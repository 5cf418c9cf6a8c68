package sweeps

// The full-scale example manifests against the paper's setup, "Through the River"
// (appendix:experiment, its tables, and the figures' captions). Each manifest's settings
// and grid points are asserted from the paper's values, cited where they are fixed, so
// an edit that drifts from the paper fails here. The CPU twins (-tiny, -quick) scale the
// paper down on purpose and are not held to it; the GPU twin (-gpu) is held to what its
// comment says it keeps of tab:c_sweep_05M.

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sfsweep/sfsweep/training"
	"github.com/sfsweep/sfsweep/training/model"
)

// paperSetup is one of the paper's training setups: the model, the data, the batch and
// the length of the run.
type paperSetup struct {
	model       string
	arch        model.Arch
	data        string // data.path: the dataset in GPT-2 tokens
	batchTokens int
	steps       int
}

var (
	// appendix:experiment: "Architectures" (a 124M LLaMA, 12 layers, 12 heads, d 768),
	// "Datasets" (SlimPajama-6B, GPT-2 tokenizer), "Training details" (1,024 sequences
	// of 512 tokens, 0.5M tokens, for 5,000 steps).
	slimPajama05M = paperSetup{"llama-124m", model.LLaMA, "data/slimpajama-6b-gpt2", 1024 * 512, 5000}
	// "Training details": large-batch runs take a 2M-token batch for 2,500 steps.
	slimPajama2M = paperSetup{"llama-124m", model.LLaMA, "data/slimpajama-6b-gpt2", 4 * 1024 * 512, 2500}
	// appendix:additional_results and "Architectures": OpenWebText2 trains a 124M GPT-2,
	// "using the same setup" ("Datasets").
	owt05M = paperSetup{"gpt2-124m", model.GPT2, "data/openwebtext2-gpt2", 1024 * 512, 5000}
	owt2M  = paperSetup{"gpt2-124m", model.GPT2, "data/openwebtext2-gpt2", 4 * 1024 * 512, 2500}
)

// datasetTokens are the training tokens of the datasets whose size the paper gives:
// "the 6B-token subset of the SlimPajama dataset" (appendix:experiment, "Datasets"). It
// gives none for OpenWebText2, so its budget goes unchecked.
var datasetTokens = map[string]float64{"data/slimpajama-6b-gpt2": 6e9}

// paperPoint is one grid point of a paper table or figure; c 0 is vanilla SF-AdamW, and
// schedule is AdamW's ("" for SF-AdamW, which has none).
type paperPoint struct {
	opt, schedule       string
	lr, beta1, beta2, c float64
}

func (p paperPoint) String() string {
	c := "vanilla"
	if p.c != 0 {
		c = fmt.Sprint(p.c)
	}
	return strings.TrimSpace(fmt.Sprintf("%s %s", p.opt, p.schedule)) + fmt.Sprintf(" lr %g (%g, %g) C %s", p.lr, p.beta1, p.beta2, c)
}

// row is one row of a paper table: every LR with every (β1, β2) pair and every C (vanilla
// if none).
func row(opt, schedule string, lrs []float64, betas [][2]float64, cs ...float64) []paperPoint {
	if len(cs) == 0 {
		cs = []float64{0}
	}
	var ps []paperPoint
	for _, lr := range lrs {
		for _, b := range betas {
			for _, c := range cs {
				ps = append(ps, paperPoint{opt, schedule, lr, b[0], b[1], c})
			}
		}
	}
	return ps
}

// cRow is one β1 row of tab:c_sweep_05M or tab:c_sweep_2M: the vanilla cell and the C
// columns the paper filled in (not "--"), at the captions' LR = 2e-3, β2 = 0.99.
func cRow(beta1 float64, cs ...float64) []paperPoint {
	return row(training.SFAdamW, "", []float64{2e-3}, [][2]float64{{beta1, 0.99}}, append([]float64{0}, cs...)...)
}

// The rows the figures share (sec:sf_critiques, "Vanishing Benefit of Learning Rate Decay
// and Weight Averaging"): the best AdamW, (0.9, 0.95) at LR 1e-3 under a constant LR after
// warmup, and the best SF-AdamW, (0.95, 0.99) at LR 2e-3.
var (
	bestAdamW   = row(training.AdamW, "constant", []float64{1e-3}, [][2]float64{{0.9, 0.95}})
	bestSFAdamW = row(training.SFAdamW, "", []float64{2e-3}, [][2]float64{{0.95, 0.99}})
	// sec:sf_critiques, "Sensitivity to Momentum Parameters" and sec:language_y: β1 in
	// {0.1, 0.5} against 0.95, all else as the best SF-AdamW.
	momentumRows = row(training.SFAdamW, "", []float64{2e-3}, [][2]float64{{0.1, 0.99}, {0.5, 0.99}, {0.95, 0.99}})
)

// paperProbes are the probes a figure needs.
type paperProbes struct {
	decay   bool // fig:Obs1 (right): AdamW, LR linear from 1e-4 to 0, from each checkpoint
	lrDecay bool // fig:Obs1 (left): AdamW's LR decayed from each checkpoint
	// fig:river_valley_loss_profile: tokens seen at t1 and t2 (zero: no interpolation),
	// with the decayed regime (2)
	interpolate [2]float64
}

// paperManifest is what the paper fixes of one full-scale manifest.
type paperManifest struct {
	ref    string // the paper's table or figure
	label  string // a table's label, where the manifest builds the paper's table
	setup  paperSetup
	points []paperPoint
	probes paperProbes
}

// lists is the concatenation of rows.
func lists(rows ...[]paperPoint) []paperPoint { return slices.Concat(rows...) }

var (
	adamwLRs = []float64{5e-4, 1e-3, 2e-3, 5e-3}
	sfLRs    = []float64{1e-3, 2e-3, 5e-3}
	adamwB   = [][2]float64{{0.9, 0.95}, {0.95, 0.99}}
	sfB      = [][2]float64{{0.9, 0.99}, {0.95, 0.99}, {0.98, 0.99}}
)

// paperManifests are the full-scale manifests, each with the paper's values.
var paperManifests = map[string]paperManifest{
	"c-sweep-05M.yaml": {ref: "tab:c_sweep_05M", label: "tab:c_sweep_05M", setup: slimPajama05M, points: lists(
		cRow(0.1, 5, 10, 20, 50, 100),
		cRow(0.5, 20, 50, 100, 200),
		cRow(0.9, 10, 50, 100, 200, 500),
		cRow(0.95, 20, 50, 100, 200, 500))},
	"c-sweep-2M.yaml": {ref: "tab:c_sweep_2M", label: "tab:c_sweep_2M", setup: slimPajama2M, points: lists(
		cRow(0.1, 5, 10, 20, 50),
		cRow(0.5, 5, 10, 20, 50, 100),
		cRow(0.9, 10, 20, 50, 100, 200, 500),
		cRow(0.95, 20, 50, 100, 200, 500),
		cRow(0.98, 20, 50, 100, 200, 500, 1000))},
	// AdamW's grid at a constant LR: sec:sf_critiques, "grid search ... under constant LR
	// (after warmup)"; the table names no schedule, unlike its large-batch twin.
	"hyperparameter-main.yaml": {ref: "tab:hyperparameter_main", label: "tab:hyperparameter_main", setup: slimPajama05M, points: lists(
		row(training.AdamW, "constant", adamwLRs, adamwB),
		row(training.SFAdamW, "", sfLRs, sfB),
		row(training.SFAdamW, "", []float64{2e-3}, [][2]float64{{0.95, 0.99}}, 20, 50, 100, 200, 500))},
	"hyperparameter-main-largeBS.yaml": {ref: "tab:hyperparameter_main_largeBS", label: "tab:hyperparameter_main_largeBS", setup: slimPajama2M, points: lists(
		row(training.AdamW, "cosine", adamwLRs, adamwB), // "AdamW (Cosine LR)"
		row(training.SFAdamW, "", sfLRs, sfB),
		row(training.SFAdamW, "", []float64{2e-3}, [][2]float64{{0.98, 0.99}}, 20, 50, 100, 200, 500))},
	"hyperparameter-owt.yaml": {ref: "tab:hyperparameter_owt", label: "tab:hyperparameter_owt", setup: owt05M, points: lists(
		row(training.AdamW, "constant", []float64{5e-4, 1e-3, 2e-3}, adamwB),
		row(training.SFAdamW, "", sfLRs, sfB),
		row(training.SFAdamW, "", []float64{2e-3}, [][2]float64{{0.95, 0.99}}, 50, 100, 200, 500))},
	"hyperparameter-owt-largeBS.yaml": {ref: "tab:hyperparameter_owt_largeBS", label: "tab:hyperparameter_owt_largeBS", setup: owt2M, points: lists(
		row(training.AdamW, "cosine", adamwLRs, adamwB),
		row(training.SFAdamW, "", []float64{5e-4, 1e-3, 2e-3, 5e-3}, [][2]float64{{0.95, 0.99}, {0.98, 0.99}}),
		row(training.SFAdamW, "", []float64{2e-3, 5e-3, 1e-2}, [][2]float64{{0.98, 0.99}}, 20, 50, 100, 200, 500, 1000))},
	"fig-obs1.yaml": {ref: "fig:Obs1", setup: slimPajama05M, points: lists(bestAdamW, bestSFAdamW),
		probes: paperProbes{decay: true, lrDecay: true}},
	"fig-decay-adamw-betas.yaml": {ref: "fig:Decay_AdamW_betas", setup: slimPajama05M, points: momentumRows,
		probes: paperProbes{decay: true}},
	"fig-ema-y.yaml": {ref: "fig:EMA_y", setup: slimPajama05M, points: momentumRows},
	// "the 2B and 2.5B token checkpoints"
	"fig-river-profile.yaml": {ref: "fig:river_valley_loss_profile", setup: slimPajama05M, points: lists(bestAdamW, bestSFAdamW),
		probes: paperProbes{interpolate: [2]float64{2e9, 2.5e9}}},
	// fig:modified, left: β1 in {0.1, 0.5} with C = 50; middle: β1 in {0.95, 0.9} with
	// C = 200, against vanilla.
	"fig-modified.yaml": {ref: "fig:modified", label: "fig:modified", setup: slimPajama05M, points: lists(
		cRow(0.1, 50), cRow(0.5, 50), cRow(0.9, 200), cRow(0.95, 200))},
	// fig:modified, right: at 2M tokens, vanilla SF-AdamW (β1 0.98), AdamW with a cosine
	// schedule and refined C = 200, at the best of tab:hyperparameter_main_largeBS.
	"fig-modified-largeBS.yaml": {ref: "fig:modified (right)", label: "fig:modified_large", setup: slimPajama2M, points: lists(
		row(training.AdamW, "cosine", []float64{1e-3}, [][2]float64{{0.9, 0.95}}),
		cRow(0.98, 200))},
}

// fullScale reports whether the example manifest file is one of the paper's full-scale
// runs, not a scaled-down twin.
func fullScale(file string) bool {
	name := strings.TrimSuffix(filepath.Base(file), ".yaml")
	return !strings.HasSuffix(name, "-tiny") && !strings.HasSuffix(name, "-quick") && !strings.HasSuffix(name, "-gpu")
}

// Every full-scale example manifest holds the paper's setup and grid.
func TestPaperManifests(t *testing.T) {
	files, err := filepath.Glob("examples/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, f := range files {
		if !fullScale(f) {
			continue
		}
		want, ok := paperManifests[filepath.Base(f)]
		if !ok {
			t.Errorf("%s: a full-scale manifest with no paper values in paperManifests", f)
			continue
		}
		seen++
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range want.mismatches(src) {
			t.Errorf("%s (%s): %s", f, want.ref, e)
		}
	}
	if seen != len(paperManifests) {
		t.Errorf("%d full-scale manifests, want %d", seen, len(paperManifests))
	}
}

// mismatches lists where the manifest src departs from the paper.
func (p paperManifest) mismatches(src []byte) []string {
	m, err := Parse(src)
	if err != nil {
		return []string{err.Error()}
	}
	trials, err := m.Expand()
	if err != nil {
		return []string{err.Error()}
	}
	var errs []string
	fail := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	if m.Model != p.setup.model {
		fail("model %q, want %s", m.Model, p.setup.model)
	}
	if p.label != "" && !slices.ContainsFunc(m.Tables, func(tb Table) bool { return tb.Label == p.label }) {
		fail("no table labelled %s", p.label)
	}
	got := map[paperPoint]bool{}
	for _, tr := range trials {
		for _, e := range p.setupMismatches(tr.Config) {
			fail("trial %s: %s", tr.ID, e)
		}
		for _, pt := range tr.Points {
			got[paperPoint{pt.Optimizer, tr.Config.Optimizer.Schedule, pt.LR, pt.Beta1, pt.Beta2, pt.C}] = true
		}
	}
	want := map[paperPoint]bool{}
	for _, pt := range p.points {
		want[pt] = true
		if !got[pt] {
			fail("the paper's %v is missing", pt)
		}
	}
	for pt := range got {
		if !want[pt] {
			fail("%v is not the paper's", pt)
		}
	}
	errs = append(errs, p.probeMismatches(m, trials)...)
	return errs
}

// setupMismatches lists where a trial's config departs from the paper's setup.
func (p paperManifest) setupMismatches(c training.Config) []string {
	var errs []string
	fail := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	s, o := p.setup, c.Optimizer
	// A trial's config carries the model resolved (Config.Canonical): the preset's, which
	// is the paper's ("Architectures": 12 layers, 12 heads, hidden dimension 768;
	// "Datasets": the GPT-2 tokenizer, a vocabulary of 50,304).
	preset, _ := model.Preset(s.model)
	if mc, err := c.ResolveModel(); err != nil || mc != preset || mc.Arch != s.arch || mc.Layers != 12 || mc.Heads != 12 || mc.Dim != 768 || mc.Vocab != 50304 {
		fail("model %+v (%v), want %s: %s, 12 layers, 12 heads, d 768, vocabulary 50,304", mc, err, s.model, s.arch)
	}
	if c.Data.Path != s.data || c.Data.Default != "" {
		fail("data %+v, want path %s", c.Data, s.data)
	}
	// "Training details": sequences of 512 tokens, the batch in tokens, the steps.
	if c.SeqLen != 512 {
		fail("seq_len %d, want 512", c.SeqLen)
	}
	if c.BatchTokens != s.batchTokens {
		fail("batch_tokens %d, want %d", c.BatchTokens, s.batchTokens)
	}
	if c.Steps != s.steps {
		fail("steps %d, want %d", c.Steps, s.steps)
	}
	// "Training details": warmup of 5% of the steps; validation on 3,200 sequences; EWA
	// decay 0.99. appendix:refined_sensitivity: test perplexity over 9M held-out tokens.
	if *o.WarmupFrac != 0.05 {
		fail("warmup_frac %g, want 0.05", *o.WarmupFrac)
	}
	if c.EvalSeqs != 3200 {
		fail("eval_seqs %d, want 3200", c.EvalSeqs)
	}
	if tok := float64(c.TestSeqs * c.SeqLen); math.Abs(tok-9e6) > 0.01*9e6 {
		fail("test_seqs %d: %g held-out tokens, want 9M", c.TestSeqs, tok)
	}
	if c.EWADecay != 0.99 {
		fail("ewa_decay %g, want 0.99", c.EWADecay)
	}
	// "Hyperparameters": weight decay 0.1; clipping 1.0 for AdamW, off for SF-AdamW.
	if *o.WeightDecay != 0.1 {
		fail("weight_decay %g, want 0.1", *o.WeightDecay)
	}
	if clip := map[string]float64{training.AdamW: 1, training.SFAdamW: 0}[o.Name]; *o.GradClip != clip {
		fail("%s grad_clip %g, want %g", o.Name, *o.GradClip, clip)
	}
	// "Training details": the cosine decay anneals to 10% of the peak.
	if o.Schedule == "cosine" && *o.FinalFrac != 0.1 {
		fail("cosine final_frac %g, want 0.1", *o.FinalFrac)
	}
	return errs
}

// probeMismatches lists where the manifest's probes depart from the figure's, and the
// trials whose training, their probes' included, needs more tokens than the dataset holds.
func (p paperManifest) probeMismatches(m *Manifest, trials []Trial) []string {
	var errs []string
	fail := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	want := p.probes
	if (m.Probes.Decay != nil) != want.decay || (m.Probes.LRDecay != nil) != want.lrDecay || (m.Probes.Interpolate != nil) != (want.interpolate[0] > 0) {
		fail("probes %+v, want decay %v, lr_decay %v, interpolation %v", m.Probes, want.decay, want.lrDecay, want.interpolate[0] > 0)
		return errs
	}
	for _, tr := range trials {
		ps, cps := m.ProbesFor(tr), CheckpointSteps(tr.Config)
		batch := float64(tr.Config.BatchTokens)
		last := tr.Config.Steps // the furthest step a probe trains to
		// fig:Obs1 (right) and fig:Decay_AdamW_betas: "linear decay from 1e-4 to 0" of the
		// evaluated iterate, "at each checkpoint".
		if d := ps.Decay; d != nil {
			if d.PeakLR != 1e-4 || d.Shape != "" || d.Iterate != "" || !slices.Equal(d.At, cps) {
				fail("trial %s: decay probe %+v, want linear from 1e-4 at every checkpoint %v", tr.ID, d, cps)
			}
			if len(d.At) > 0 {
				last = max(last, slices.Max(d.At)+d.Steps)
			}
		}
		// fig:Obs1 (left): "At each checkpoint, we run a LR decay phase".
		if b := ps.LRDecay; b != nil {
			if !slices.Equal(b.At, cps) {
				fail("trial %s: LR-decay branch from %v, want every checkpoint %v", tr.ID, b.At, cps)
			}
			for _, at := range b.At {
				last = max(last, at+b.BranchSteps(at))
			}
		}
		// fig:river_valley_loss_profile: the checkpoints at 2B and 2.5B tokens, the nearest
		// written ones within 2%; regime (2), AdamW decayed between them.
		if ip := ps.Interpolate; ip != nil {
			for i, s := range []int{ip.From, ip.To} {
				if tok := float64(s) * batch; math.Abs(tok-want.interpolate[i]) > 0.02*want.interpolate[i] {
					fail("trial %s: interpolation checkpoint %d at %.4g tokens, want %.4g", tr.ID, s, tok, want.interpolate[i])
				}
			}
			if adamw := tr.Config.Optimizer.Name == training.AdamW; ip.Decayed != adamw {
				fail("trial %s: decayed %v, want the decayed regime for AdamW", tr.ID, ip.Decayed)
			}
		}
		if size, ok := datasetTokens[tr.Config.Data.Path]; ok && float64(last)*batch > size {
			fail("trial %s: trains to step %d with its probes, %d × %d = %.3g tokens, more than the dataset's %.3g", tr.ID, last, last, tr.Config.BatchTokens, float64(last)*batch, size)
		}
	}
	return errs
}

// The comparison fails on each kind of drift from the paper: a test that cannot fail
// would pin nothing.
func TestPaperMismatchesCaught(t *testing.T) {
	for _, tc := range []struct {
		file, old, new, want string
	}{
		{"fig-modified-largeBS.yaml", "steps: 2500", "steps: 5000", "more than the dataset's 6e+09"},
		{"fig-modified-largeBS.yaml", "steps: 2500", "steps: 5000", "steps 5000, want 2500"},
		{"fig-modified.yaml", "c: [vanilla, 50]", "c: [vanilla, 200]", "C 50 is missing"},
		{"fig-modified.yaml", "c: [vanilla, 50]", "c: [vanilla, 200]", "C 200 is not the paper's"},
		{"fig-modified-largeBS.yaml", "schedule: cosine", "schedule: constant", "adamw cosine lr 0.001 (0.9, 0.95) C vanilla is missing"},
		{"hyperparameter-owt.yaml", "model: gpt2-124m", "model: llama-124m", `model "llama-124m", want gpt2-124m`},
		{"hyperparameter-main.yaml", "warmup_frac: 0.05", "warmup_frac: 0.1", "warmup_frac 0.1, want 0.05"},
		{"hyperparameter-main.yaml", "    schedule: constant", "    schedule: constant\n    weight_decay: 0.2", "weight_decay 0.2, want 0.1"},
		{"hyperparameter-main-largeBS.yaml", "    schedule: cosine", "    schedule: cosine\n    final_frac: 0", "final_frac 0, want 0.1"},
		{"hyperparameter-main-largeBS.yaml", "    schedule: cosine", "    schedule: cosine\n    grad_clip: 0", "adamw grad_clip 0, want 1"},
		{"c-sweep-2M.yaml", "batch_tokens: 2097152", "batch_tokens: 524288", "batch_tokens 524288, want 2097152"},
		{"c-sweep-05M.yaml", "test_seqs: 17600", "test_seqs: 3200", "want 9M"},
		{"c-sweep-05M.yaml", "label: tab:c_sweep_05M", "label: tab:c_sweep_2M", "no table labelled tab:c_sweep_05M"},
		{"hyperparameter-owt-largeBS.yaml", "c: [20, 50, 100, 200, 500, 1000]", "c: [20, 50, 100, 200, 500]", "C 1000 is missing"},
		{"fig-obs1.yaml", "peak_lr: 1e-4", "peak_lr: 2e-4", "want linear from 1e-4"},
		{"fig-obs1.yaml", "  lr_decay:\n    frac: 0.2\n", "", "want decay true, lr_decay true"},
		{"fig-ema-y.yaml", "ewa_decay: 0.99", "ewa_decay: 0.9", "ewa_decay 0.9, want 0.99"},
		{"fig-river-profile.yaml", "from: 3800", "from: 3000", "checkpoint 3000 at 1.573e+09 tokens, want 2e+09"},
		{"fig-decay-adamw-betas.yaml", "seq_len: 512", "seq_len: 256", "seq_len 256, want 512"},
	} {
		src, err := os.ReadFile(filepath.Join("examples", tc.file))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(src), tc.old) {
			t.Fatalf("%s has no %q to change", tc.file, tc.old)
		}
		errs := paperManifests[tc.file].mismatches([]byte(strings.Replace(string(src), tc.old, tc.new, 1)))
		if !slices.ContainsFunc(errs, func(e string) bool { return strings.Contains(e, tc.want) }) {
			t.Errorf("%s with %q → %q: mismatches %q, want one containing %q", tc.file, tc.old, tc.new, errs, tc.want)
		}
	}
}

// The GPU twin of tab:c_sweep_05M is what its comment says: the paper's model at its
// context, in bf16, a sixteenth of the 0.5M-token batch as 4 micro-batches of 16 × 512,
// for 40 steps, over cells of the table.
func TestGPUTwinClaims(t *testing.T) {
	m, trials := expandExample(t, "c-sweep-05M-gpu.yaml")
	cells := map[paperPoint]bool{}
	for _, pt := range paperManifests["c-sweep-05M.yaml"].points {
		cells[pt] = true
	}
	if m.Model != slimPajama05M.model {
		t.Errorf("model %q, want %s", m.Model, slimPajama05M.model)
	}
	llama, _ := model.Preset(slimPajama05M.model)
	rows := map[float64]bool{}
	for _, tr := range trials {
		c := tr.Config
		if mc, err := c.ResolveModel(); err != nil || mc != llama || c.SeqLen != 512 || c.Backend != "cuda-bf16" {
			t.Errorf("trial %s: model %+v at T %d on %s, want llama-124m at 512 on cuda-bf16", tr.ID, mc, c.SeqLen, c.Backend)
		}
		if c.BatchTokens*16 != slimPajama05M.batchTokens || c.MicroBatch != 16 || c.Accum() != 4 || c.Steps != 40 {
			t.Errorf("trial %s: %d steps of %d tokens (%d × %d × %d), want 40 of 32,768 (4 × 16 × 512)", tr.ID, c.Steps, c.BatchTokens, c.Accum(), c.MicroBatch, c.SeqLen)
		}
		if *c.Optimizer.WarmupFrac != 0.05 || *c.Optimizer.WeightDecay != 0.1 {
			t.Errorf("trial %s: warmup %g, weight decay %g, want the paper's 0.05 and 0.1", tr.ID, *c.Optimizer.WarmupFrac, *c.Optimizer.WeightDecay)
		}
		for _, pt := range tr.Points {
			if p := (paperPoint{pt.Optimizer, c.Optimizer.Schedule, pt.LR, pt.Beta1, pt.Beta2, pt.C}); !cells[p] {
				t.Errorf("%v is no cell of tab:c_sweep_05M", p)
			}
			rows[pt.Beta1] = true
		}
	}
	if len(rows) != 2 {
		t.Errorf("β1 rows %v, want two", rows)
	}
	if !slices.ContainsFunc(m.Tables, func(tb Table) bool { return tb.Label == "tab:c_sweep_05M" }) {
		t.Errorf("tables %+v: none labelled tab:c_sweep_05M", m.Tables)
	}
}
