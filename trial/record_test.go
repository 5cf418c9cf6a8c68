package trial

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/sfsweep/sfsweep/internal/blob"
	"github.com/sfsweep/sfsweep/internal/keys"
	"github.com/sfsweep/sfsweep/internal/status"
	"github.com/sfsweep/sfsweep/training"
)

func newStore(t *testing.T) *blob.Dir {
	t.Helper()
	d, err := blob.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func put(t *testing.T, s blob.Store, key, data string) {
	t.Helper()
	if err := s.Put(context.Background(), key, []byte(data)); err != nil {
		t.Fatal(err)
	}
}

func get(t *testing.T, s blob.Store, key string) string {
	t.Helper()
	b, err := s.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestConfig(t *testing.T) {
	ctx, s := context.Background(), newStore(t)
	if _, err := ReadConfig(ctx, s, "t1"); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("missing config: err %v, want blob.ErrNotFound", err)
	}
	cfg := training.Config{Loop: training.Loop{Steps: 10}, BatchTokens: 64, Seed: 3, Optimizer: training.OptimizerConfig{Name: training.AdamW, LR: 1e-3}}
	if err := EnsureConfig(ctx, s, "t1", cfg); err != nil {
		t.Fatal(err)
	}
	want, _ := json.MarshalIndent(cfg, "", "  ")
	if got := get(t, s, keys.RunConfig(keys.Trial("t1"))); got != string(want) {
		t.Errorf("config.json = %s, want %s", got, want)
	}
	got, err := ReadConfig(ctx, s, "t1")
	if err != nil || !reflect.DeepEqual(got, cfg) {
		t.Errorf("ReadConfig = %+v, %v; want %+v", got, err, cfg)
	}
	// a config that is there is not written again
	other := cfg
	other.Steps = 20
	if err := EnsureConfig(ctx, s, "t1", other); err != nil {
		t.Fatal(err)
	}
	if got, _ := ReadConfig(ctx, s, "t1"); got.Steps != 10 {
		t.Errorf("EnsureConfig rewrote a config: steps %d", got.Steps)
	}
	for name, body := range map[string]string{"not JSON": "{", "unknown field": `{"steps": 10, "future_option": 1}`} {
		put(t, s, keys.RunConfig(keys.Trial("bad")), body)
		var d *DamagedError
		if _, err := ReadConfig(ctx, s, "bad"); !errors.As(err, &d) || d.Key != keys.RunConfig(keys.Trial("bad")) {
			t.Errorf("%s: err %v, want a *DamagedError for its key", name, err)
		}
	}
}

func TestResult(t *testing.T) {
	ctx, s := context.Background(), newStore(t)
	if r, err := ReadResult(ctx, s, "t1"); r != nil || err != nil {
		t.Fatalf("no result: %v, %v", r, err)
	}
	res := &training.Result{ConfigHash: "h", Status: status.Completed, Steps: 10, Primary: training.IterW,
		Val: map[string]float64{training.IterW: 3.5}, Curves: []training.CurvePoint{{Step: 10, Val: map[string]float64{training.IterW: 3.5}}}}
	if err := WriteResult(ctx, s, "t1", res); err != nil {
		t.Fatal(err)
	}
	want, _ := json.MarshalIndent(res, "", "  ")
	if got := get(t, s, keys.RunResult(keys.Trial("t1"))); got != string(want) {
		t.Errorf("result.json = %s, want %s", got, want)
	}
	if got, err := ReadResult(ctx, s, "t1"); err != nil || !reflect.DeepEqual(got, res) {
		t.Errorf("ReadResult = %+v, %v; want %+v", got, err, res)
	}
	// a damaged result reads as none: it is recomputed
	put(t, s, keys.RunResult(keys.Trial("t2")), `{"status": "compl`)
	if r, err := ReadResult(ctx, s, "t2"); r != nil || err != nil {
		t.Errorf("damaged result: %v, %v; want nil, nil", r, err)
	}
}

func TestCurves(t *testing.T) {
	ctx, s := context.Background(), newStore(t)
	if c, err := ReadCurves(ctx, s, "t1"); c != nil || err != nil {
		t.Fatalf("no curves: %v, %v", c, err)
	}
	points := []training.CurvePoint{
		{Step: 5, Tokens: 320, LR: 1e-3, TrainLoss: 4, Val: map[string]float64{"x": 4.5}},
		{Step: 10, Val: map[string]float64{"x": math.NaN()}}, // does not encode: an empty line
		{Step: 15, Tokens: 960, Val: map[string]float64{"x": 3.5, "y": 3.25}},
	}
	if err := WriteCurves(ctx, s, "t1", points); err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(points[0])
	c, _ := json.Marshal(points[2])
	if got, want := get(t, s, keys.RunCurves(keys.Trial("t1"))), string(a)+"\n\n"+string(c)+"\n"; got != want {
		t.Errorf("curves.jsonl = %q, want %q", got, want)
	}
	got, err := ReadCurves(ctx, s, "t1")
	if err != nil || !reflect.DeepEqual(got, []training.CurvePoint{points[0], points[2]}) {
		t.Errorf("ReadCurves = %+v, %v", got, err)
	}
	// a line that does not decode is left out, the others read
	put(t, s, keys.RunCurves(keys.Trial("t2")), "{\"step\": 5}\nnot json\n\n{\"step\": 7, \"val\": {\"w\": 2}}")
	got, err = ReadCurves(ctx, s, "t2")
	if err != nil || len(got) != 2 || got[0].Step != 5 || got[1].Step != 7 || got[1].Val["w"] != 2 {
		t.Errorf("ReadCurves with a bad line = %+v, %v", got, err)
	}
}

func TestFailure(t *testing.T) {
	ctx, s := context.Background(), newStore(t)
	if r, err := ReadFailure(ctx, s, "t1"); r != "" || err != nil {
		t.Fatalf("no failure: %q, %v", r, err)
	}
	if err := WriteFailure(ctx, s, "t1", "out of <memory> & more"); err != nil {
		t.Fatal(err)
	}
	// the format failed.json always had: a map of two strings, keys sorted
	want, _ := json.Marshal(map[string]string{"trial_id": "t1", "reason": "out of <memory> & more"})
	if got := get(t, s, keys.TrialFailed("t1")); got != string(want) {
		t.Errorf("failed.json = %s, want %s", got, want)
	}
	if r, err := ReadFailure(ctx, s, "t1"); r != "out of <memory> & more" || err != nil {
		t.Errorf("ReadFailure = %q, %v", r, err)
	}
	for _, body := range []string{`{"trial_id": "t2"}`, `{}`, `garbage`} {
		put(t, s, keys.TrialFailed("t2"), body)
		if r, err := ReadFailure(ctx, s, "t2"); r != "failed" || err != nil {
			t.Errorf("failed.json %s: %q, %v; want \"failed\"", body, r, err)
		}
	}
}

func TestAttempts(t *testing.T) {
	ctx, s := context.Background(), newStore(t)
	if n := ReadAttempts(ctx, s, "t1"); n != 0 {
		t.Fatalf("no attempts: %d", n)
	}
	if err := WriteAttempts(ctx, s, "t1", 3); err != nil {
		t.Fatal(err)
	}
	if got := get(t, s, keys.TrialAttempts("t1")); got != `{"attempts":3}` {
		t.Errorf("attempts.json = %s", got)
	}
	if n := ReadAttempts(ctx, s, "t1"); n != 3 {
		t.Errorf("ReadAttempts = %d, want 3", n)
	}
	put(t, s, keys.TrialAttempts("t2"), "[")
	if n := ReadAttempts(ctx, s, "t2"); n != 0 {
		t.Errorf("damaged attempts: %d, want 0", n)
	}
}

func TestOutcome(t *testing.T) {
	ctx, s := context.Background(), newStore(t)
	res := &training.Result{Status: status.Completed, Steps: 10}
	if err := WriteResult(ctx, s, "done", res); err != nil {
		t.Fatal(err)
	}
	if err := WriteAttempts(ctx, s, "done", 2); err != nil {
		t.Fatal(err)
	}
	if err := WriteFailure(ctx, s, "failed", "boom"); err != nil {
		t.Fatal(err)
	}
	put(t, s, keys.TrialFailed("silent"), "{}")
	if err := WriteConfig(ctx, s, "failed", training.Config{Loop: training.Loop{Steps: 1}}); err != nil {
		t.Fatal(err)
	}
	want := map[string]Outcome{
		"done":    {Result: res, Attempts: 2},
		"failed":  {Failed: "boom"},
		"silent":  {Failed: "failed"},
		"missing": {},
	}
	l, err := List(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if !l.HasResult("done") || l.HasResult("failed") || l.HasConfig("done") || !l.HasConfig("failed") {
		t.Errorf("HasResult, HasConfig: listing %v", l)
	}
	for id, w := range want {
		if o, err := ReadOutcome(ctx, s, id); err != nil || !reflect.DeepEqual(o, w) {
			t.Errorf("ReadOutcome(%s) = %+v, %v; want %+v", id, o, err, w)
		}
		if o, err := l.Outcome(ctx, s, id, nil); err != nil || !reflect.DeepEqual(o, w) {
			t.Errorf("Listing.Outcome(%s) = %+v, %v; want %+v", id, o, err, w)
		}
	}
	// a result cache answers for a result listed, and only for one listed
	cached := &training.Result{Status: status.Diverged}
	asked := map[string]bool{}
	cache := func(_ context.Context, id string) (*training.Result, error) { asked[id] = true; return cached, nil }
	for _, id := range []string{"done", "failed", "missing"} {
		if _, err := l.Outcome(ctx, s, id, cache); err != nil {
			t.Fatal(err)
		}
	}
	if !reflect.DeepEqual(asked, map[string]bool{"done": true}) {
		t.Errorf("result cache asked for %v, want done alone", asked)
	}
	// an object written after the listing is not read through it
	if err := WriteFailure(ctx, s, "missing", "late"); err != nil {
		t.Fatal(err)
	}
	if o, _ := l.Outcome(ctx, s, "missing", nil); o.Failed != "" {
		t.Errorf("unlisted failure read: %+v", o)
	}
}
