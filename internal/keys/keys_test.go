package keys

import "testing"

// The layout, key by key: these are the names of objects already in stores, so a change
// here strands every sweep's results.
func TestLayout(t *testing.T) {
	id := "0123456789abcdef"
	for _, c := range []struct{ got, want string }{
		{Manifest("sweep-c-1a2b3c4d"), "sweeps/sweep-c-1a2b3c4d/manifest.yaml"},
		{PlanPage(PlanPrefix("sweep-c", "run-1"), 3), "sweeps/sweep-c/plans/run-1/page-000003.json"},
		{RunConfig(Trial(id)), "trials/0123456789abcdef/config.json"},
		{RunCurves(Trial(id)), "trials/0123456789abcdef/curves.jsonl"},
		{RunResult(Trial(id)), "trials/0123456789abcdef/result.json"},
		{RunResult(""), "result.json"},
		{TrialFailed(id), "trials/0123456789abcdef/failed.json"},
		{Checkpoint(Checkpoints(Trial(id)), 120), "trials/0123456789abcdef/checkpoints/step-00000120.safetensors"},
		{CheckpointSidecar(Checkpoints(Trial(id)), 120), "trials/0123456789abcdef/checkpoints/step-00000120.json"},
		{DecayProbe(id, 60, ""), "trials/0123456789abcdef/probes/decay-step-00000060.json"},
		{DecayProbe(id, 60, "ewa_x"), "trials/0123456789abcdef/probes/decay-ewa_x-step-00000060.json"},
		{LRDecay(id, 60, 0.2), "trials/0123456789abcdef/probes/lr-decay-0.2-step-00000060.json"},
		{Interpolation(id, 40, 80, 11, false), "trials/0123456789abcdef/probes/interp-00000040-00000080-n11.json"},
		{Interpolation(id, 40, 80, 11, true), "trials/0123456789abcdef/probes/interp-00000040-00000080-decayed-n11.json"},
		{Table(Output("c-sensitivity-tiny", ""), "c_sweep", "md"), "sweeps/c-sensitivity-tiny/tables/c_sweep.md"},
		{Plot(Output("x", "results/mine"), "curves", "svg"), "results/mine/plots/curves.svg"},
		{Owner(Output("x", "")), "sweeps/x/owner.json"},
	} {
		if c.got != c.want {
			t.Errorf("%q, want %q", c.got, c.want)
		}
	}
	if a, b := SweepID("c", []byte("a")), SweepID("c", []byte("b")); a == b || len(a) != len("sweep-c-")+8 {
		t.Errorf("SweepID: %q and %q", a, b)
	}
}

// CheckpointOf inverts Checkpoint under a trial, and refuses every other key.
func TestCheckpointOf(t *testing.T) {
	id, step, ok := CheckpointOf(Checkpoint(Checkpoints(Trial("abc")), 42))
	if !ok || id != "abc" || step != 42 {
		t.Errorf("CheckpointOf = %q, %d, %v", id, step, ok)
	}
	for _, k := range []string{
		CheckpointSidecar(Checkpoints(Trial("abc")), 42), RunResult(Trial("abc")), "trials/a/b/checkpoints/step-00000001.safetensors",
		"other/abc/checkpoints/step-00000001.safetensors", "trials/abc/checkpoints/step-x.safetensors", "trials/abc/checkpoints/step--1.safetensors",
	} {
		if _, _, ok := CheckpointOf(k); ok {
			t.Errorf("CheckpointOf(%q) accepted it", k)
		}
	}
}
