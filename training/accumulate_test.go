package training

import (
	"bytes"
	"context"
	"math"
	"reflect"
	"slices"
	"testing"

	"github.com/sfsweep/sfsweep/internal/blob"
	"github.com/sfsweep/sfsweep/internal/status"
	"github.com/sfsweep/sfsweep/training/backend"
	"github.com/sfsweep/sfsweep/training/model"
)

// The step on an engine that keeps its losses until the step ends (backend.Accumulator) is
// the step that reads each micro-batch's loss as it comes: the cpu engine is an
// Accumulator, and these tests hide that to run the same config both ways.

// perMicroBatch hides that a host engine is an Accumulator: the step reads each
// micro-batch's loss after its Forward.
type perMicroBatch struct{ backend.HostEngine }

// counted is a host engine whose Accumulate calls are counted: the step took them.
type counted struct {
	backend.HostEngine
	backend.Accumulator
	calls *int
}

func (c counted) Accumulate(tokens, targets []int32) error {
	*c.calls++
	return c.Accumulator.Accumulate(tokens, targets)
}

// deviceQueue hides that an engine's memory is the host's but keeps it an Accumulator.
type deviceQueue struct {
	backend.Engine
	backend.Accumulator
}

// poisoned makes the embedding of token x NaN as step at begins (its ZeroGrad): the
// step's micro-batches that hold x have a loss that is not finite, the others finite ones.
type poisoned struct {
	backend.HostEngine
	x, at int
	steps *int
}

func (p poisoned) ZeroGrad() {
	if *p.steps++; *p.steps == p.at {
		t, _ := p.Config().Layout().Tensor("transformer.wte.weight")
		c := p.Config().Dim
		for i := range c {
			p.Params()[t.Offset+p.x*c+i] = float32(math.NaN())
		}
	}
	p.HostEngine.ZeroGrad()
}

// poisonedQueue is poisoned, an Accumulator whose step's last loss, of three or more,
// reads +Inf: a step then holds two non-finite losses of other bits, and returns the
// first. (The step that reads its losses one by one stops at the first.)
type poisonedQueue struct {
	poisoned
	backend.Accumulator
}

func (p poisonedQueue) Losses(dst []float64) ([]float64, error) {
	dst, err := p.Accumulator.Losses(dst)
	if len(dst) >= 3 && !finite(dst[1]) {
		dst[len(dst)-1] = math.Inf(1)
	}
	return dst, err
}

// poison returns the WrapEngine of a step variant's wrap (queued: of an Accumulator) on
// the cpu engine poisoned at its step at for token x.
func poison(wrap func(backend.Engine, *int) backend.Engine, queued bool, x, at int) func(backend.Engine) backend.Engine {
	return func(eng backend.Engine) backend.Engine {
		var calls, steps int
		p := poisoned{eng.(backend.HostEngine), x, at, &steps}
		if queued {
			return wrap(poisonedQueue{p, eng.(backend.Accumulator)}, &calls)
		}
		return wrap(p, &calls)
	}
}

// The variants of the step the tests compare: wrap receives the cpu engine (a HostEngine
// and an Accumulator) and returns the one the run trains on. Each queued variant follows
// the per-micro-batch variant on the same memory.
var stepVariants = []struct {
	name   string
	queued bool // the step reads its losses at its end
	wrap   func(e backend.Engine, calls *int) backend.Engine
}{
	{"per micro-batch", false, func(e backend.Engine, _ *int) backend.Engine { return perMicroBatch{e.(backend.HostEngine)} }},
	{"queued", true, func(e backend.Engine, calls *int) backend.Engine {
		return counted{e.(backend.HostEngine), e.(backend.Accumulator), calls}
	}},
	{"per micro-batch, device memory", false, func(e backend.Engine, _ *int) backend.Engine { return deviceMemory{e} }},
	{"queued, device memory", true, func(e backend.Engine, calls *int) backend.Engine {
		return deviceQueue{e, counted{e.(backend.HostEngine), e.(backend.Accumulator), calls}}
	}},
}

// A run whose steps read their losses once, at the step's end, is bitwise the run that
// reads each micro-batch's loss as it comes: curves, test losses, final parameters and
// every checkpoint, through an interruption and a resume, on a host engine and on one with
// memory of its own.
func TestAccumulatedRunBitwise(t *testing.T) {
	for _, opt := range []string{SFAdamW, AdamW} {
		t.Run(opt, func(t *testing.T) {
			cfg := accumConfig(t, opt)
			b, err := NewBatches(cfg, testCorpus(t))
			if err != nil {
				t.Fatal(err)
			}
			var first *Result
			var firstStore *blob.Dir
			for _, v := range stepVariants {
				calls := 0
				store := newStore(t)
				o := Options{Store: store, Prefix: "t", Data: b, WrapEngine: func(e backend.Engine) backend.Engine { return v.wrap(e, &calls) }}
				if _, err := Run(context.Background(), cfg, stoppedAt(o, 25)); err != errKilled {
					t.Fatalf("%s: interrupted run: %v", v.name, err)
				}
				res, err := Run(context.Background(), cfg, o)
				if err != nil {
					t.Fatalf("%s: %v", v.name, err)
				}
				// 25 steps, then 20 again from the checkpoint at 20
				if want := (25 + 20) * cfg.Accum(); v.queued != (calls > 0) || (v.queued && calls != want) {
					t.Errorf("%s: %d micro-batches accumulated, want %d", v.name, calls, want*boolInt(v.queued))
				}
				if res.Status != status.Completed || res.Resumed != 20 {
					t.Fatalf("%s: status %s, resumed from %d", v.name, res.Status, res.Resumed)
				}
				if first == nil {
					first, firstStore = res, store
					continue
				}
				if res.ParamsHash != first.ParamsHash || !reflect.DeepEqual(res.Curves, first.Curves) || !reflect.DeepEqual(res.Test, first.Test) {
					t.Errorf("%s differs from %s: params %.12s vs %.12s, test %v vs %v",
						v.name, stepVariants[0].name, res.ParamsHash, first.ParamsHash, res.Test, first.Test)
				}
				sameStore(t, v.name, firstStore, store)
			}
		})
	}
}

// accumConfig is testConfig with three micro-batches a step: a sum of two would not tell
// their order.
func accumConfig(t *testing.T, opt string) Config {
	cfg := testConfig(opt)
	cfg.BatchTokens = 3 * cfg.MicroBatch * cfg.SeqLen
	if cfg.Accum() != 3 {
		t.Fatalf("accum = %d, want 3", cfg.Accum())
	}
	return cfg
}

// stoppedAt is o with the run interrupted after step at.
func stoppedAt(o Options, at int) Options {
	o.AfterStep = func(s int) error {
		if s == at {
			return errKilled
		}
		return nil
	}
	return o
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// sameStore fails unless two stores hold the same objects, byte for byte.
func sameStore(t *testing.T, name string, want, got *blob.Dir) {
	t.Helper()
	ctx := context.Background()
	wk, err1 := want.List(ctx, "")
	gk, err2 := got.List(ctx, "")
	if err1 != nil || err2 != nil || !slices.Equal(wk, gk) || len(wk) == 0 {
		t.Fatalf("%s: the store holds %v, want %v (%v, %v)", name, gk, wk, err1, err2)
	}
	for _, k := range wk {
		a, err1 := want.Get(ctx, k)
		b, err2 := got.Get(ctx, k)
		if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
			t.Errorf("%s: object %s differs (%v, %v)", name, k, err1, err2)
		}
	}
}

func sameBits(a, b []float32) bool {
	return slices.EqualFunc(a, b, func(x, y float32) bool { return math.Float32bits(x) == math.Float32bits(y) })
}

// divergeAt is the step at which the tests poison a token, and poisonToken the token:
// one of the second micro-batch of that step that the first does not hold, so the step's
// loss goes non-finite in its middle.
const divergeAt = 15

func poisonToken(t *testing.T, cfg Config, b Batches) int {
	t.Helper()
	n := cfg.MicroBatch * cfg.SeqLen
	var in [2]map[int32]bool
	for micro := range 2 {
		tok, tgt := make([]int32, n), make([]int32, n)
		b.Fill(divergeAt, micro, tok, tgt)
		in[micro] = map[int32]bool{}
		for _, x := range tok {
			in[micro][x] = true
		}
	}
	for x := range int32(cfg.ModelConfig.Vocab) {
		if in[1][x] && !in[0][x] {
			return int(x)
		}
	}
	t.Fatalf("every token of step %d's second micro-batch is in its first", divergeAt)
	return 0
}

// A step whose second micro-batch's loss is not finite returns that loss, bit for bit,
// and makes no update, whether it reads its losses at its end or one by one; a run then
// diverges at that step with the same result and the same checkpoints.
func TestAccumulatedDivergedMidStep(t *testing.T) {
	cfg := accumConfig(t, SFAdamW)
	// untied, so the poisoned embedding row reaches only the micro-batches holding its token
	// (a tied one is also the head, and every logit)
	cfg.ModelConfig.Untied = true
	b, err := NewBatches(cfg, testCorpus(t))
	if err != nil {
		t.Fatal(err)
	}
	x := poisonToken(t, cfg, b)
	mc, err := cfg.ResolveModel()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	// the step itself
	var losses []float64
	for _, v := range stepVariants {
		e, err := openEngine(ctx, cfg, mc, b, poison(v.wrap, v.queued, x, 1))
		if err != nil {
			t.Fatal(err)
		}
		if (e.queue != nil) != v.queued {
			t.Fatalf("%s: the engine's step reads its losses at its end: %v", v.name, e.queue != nil)
		}
		model.Init(mc, cfg.Seed, e.w)
		if err := e.upload(); err != nil {
			t.Fatal(err)
		}
		o, err := runOptimizer(cfg, e.w)
		if err != nil {
			t.Fatal(err)
		}
		// the micro-batches' own losses, before the poison
		n := cfg.MicroBatch * cfg.SeqLen
		tok, tgt := make([]int32, n), make([]int32, n)
		b.Fill(divergeAt, 0, tok, tgt)
		clean, err := e.eng.Forward(tok, tgt)
		if err != nil || !finite(clean) {
			t.Fatalf("%s: the first micro-batch's loss is %v (%v) before the poison", v.name, clean, err)
		}
		// what the parameters hold after the step, which makes no update: the poisoned row
		want := slices.Clone(e.w)
		emb, _ := mc.Layout().Tensor("transformer.wte.weight")
		for i := range mc.Dim {
			want[emb.Offset+x*mc.Dim+i] = float32(math.NaN())
		}
		loss, err := e.step(divergeAt, o)
		if err != nil {
			t.Fatal(err)
		}
		if finite(loss) {
			t.Fatalf("%s: the poisoned step's loss is %v", v.name, loss)
		}
		got := make([]float32, len(want))
		if err := e.eng.ReadParams(got); err != nil {
			t.Fatal(err)
		}
		if !sameBits(got, want) || o.state().Step != 0 {
			t.Errorf("%s: the diverged step updated the parameters or the optimizer (%d steps)", v.name, o.state().Step)
		}
		// the returned loss is the second micro-batch's, whose Forward gives it again
		b.Fill(divergeAt, 1, tok, tgt)
		again, err := e.eng.Forward(tok, tgt)
		if err != nil || math.Float64bits(again) != math.Float64bits(loss) {
			t.Errorf("%s: the step returned %v (%#x), the micro-batch's Forward gives %v (%#x) (%v)",
				v.name, loss, math.Float64bits(loss), again, math.Float64bits(again), err)
		}
		losses = append(losses, loss)
		e.eng.Close()
	}
	for i, l := range losses {
		if math.Float64bits(l) != math.Float64bits(losses[0]) {
			t.Errorf("%s: the diverged step's loss is %#x, %s's %#x", stepVariants[i].name, math.Float64bits(l), stepVariants[0].name, math.Float64bits(losses[0]))
		}
	}

	// a run, against the run on the same memory that reads its losses one by one (the
	// poison reaches a host copy of the parameters only where the memory is the host's)
	var first *Result
	var firstStore *blob.Dir
	for i, v := range stepVariants {
		store := newStore(t)
		res, err := Run(ctx, cfg, Options{Store: store, Prefix: "t", Data: b, WrapEngine: poison(v.wrap, v.queued, x, divergeAt)})
		if err != nil {
			t.Fatalf("%s: %v", v.name, err)
		}
		if res.Status != status.Diverged || res.DivergedAt != divergeAt || res.Steps != divergeAt {
			t.Fatalf("%s: status %s at step %d after %d steps, want diverged at %d", v.name, res.Status, res.DivergedAt, res.Steps, divergeAt)
		}
		if !v.queued {
			first, firstStore = res, store
			continue
		}
		if res.ParamsHash != first.ParamsHash || !reflect.DeepEqual(res.Curves, first.Curves) {
			t.Errorf("%s's diverged run differs from %s's: params %.12s vs %.12s", v.name, stepVariants[i-1].name, res.ParamsHash, first.ParamsHash)
		}
		sameStore(t, v.name, firstStore, store)
	}
}

// Under WithAlive, an Accumulator reports each Accumulate and each Losses that returns
// (Losses waits for the device's last micro-batches), and a run whose steps read their
// losses at the end trains the same bits as without it.
func TestAccumulatedAlive(t *testing.T) {
	cfg := accumConfig(t, AdamW)
	cfg.Steps, cfg.EvalEvery, cfg.CheckpointEvery = 4, 0, 0
	b, err := NewBatches(cfg, testCorpus(t))
	if err != nil {
		t.Fatal(err)
	}
	beats := 0
	ctx := WithAlive(context.Background(), func() { beats++ })
	mc, err := cfg.ResolveModel()
	if err != nil {
		t.Fatal(err)
	}
	eng, err := backend.New("cpu", mc, cfg.MicroBatch, cfg.SeqLen)
	if err != nil {
		t.Fatal(err)
	}
	q := observeQueue(ctx, eng.(backend.Accumulator))
	n := cfg.MicroBatch * cfg.SeqLen
	tok, tgt := make([]int32, n), make([]int32, n)
	for micro := range 3 {
		b.Fill(1, micro, tok, tgt)
		if err := q.Accumulate(tok, tgt); err != nil {
			t.Fatal(err)
		}
		if beats != micro+1 {
			t.Fatalf("%d reports after %d micro-batches", beats, micro+1)
		}
	}
	if ls, err := q.Losses(nil); err != nil || len(ls) != 3 || beats != 4 {
		t.Fatalf("Losses = %v, %v; %d reports, want 4", ls, err, beats)
	}

	plain, err := Run(context.Background(), cfg, Options{Data: b})
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	watched, err := Run(ctx, cfg, Options{Data: b, WrapEngine: func(e backend.Engine) backend.Engine {
		return counted{e.(backend.HostEngine), e.(backend.Accumulator), &calls}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if calls != cfg.Steps*cfg.Accum() {
		t.Fatalf("%d micro-batches accumulated, want %d", calls, cfg.Steps*cfg.Accum())
	}
	if watched.ParamsHash != plain.ParamsHash || !reflect.DeepEqual(watched.Test, plain.Test) {
		t.Errorf("the run under WithAlive differs: params %.12s vs %.12s", watched.ParamsHash, plain.ParamsHash)
	}
}
