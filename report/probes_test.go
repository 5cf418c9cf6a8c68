package report

import (
	"strings"
	"testing"
)

// An LR-decay branch's end is drawn at the tokens where it ends, not at its checkpoint:
// branches of 20% past checkpoints at 0.5B to 5B tokens reach 6B, which the axis covers;
// decay probes (no AfterTokens) stay at their checkpoints.
func TestLRDecayDrawnAtItsEnd(t *testing.T) {
	branches := paperProbes()[:1]
	branches[0].Points = append([]DecayProbePoint(nil), branches[0].Points...)
	for j := range branches[0].Points {
		q := &branches[0].Points[j]
		q.AfterTokens = q.Tokens + q.Tokens/5
	}
	for _, c := range []struct {
		probes []DecayProbeCurve
		max    float64 // tokens (B)
	}{{branches, 6}, {paperProbes()[:1], 5}} {
		ff, err := decayProbeFigure(c.probes, DecayProbeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := ff.panels[0].X.Max; got < c.max || got > c.max*1.1 {
			t.Errorf("x axis to %g B, want %g B", got, c.max)
		}
	}
	branches[0].Points[0].AfterTokens = -1
	if _, err := decayProbeFigure(branches, DecayProbeOptions{}); err == nil || !strings.Contains(err.Error(), "AfterTokens") {
		t.Errorf("negative AfterTokens: %v", err)
	}
}
