package report

// The paper's regime, and whether a twin is in it. A twin scales the paper's runs down; a
// claim transfers only where the quantities it rests on keep their values:
//   - tokens per parameter: the paper trains llama-124m (123.6M parameters) on 5,000 steps
//     of 0.5M tokens (2^19: 21.2 per parameter) and on 2,500 of 2M (2^21: 42.4, the
//     overtrained regime of its large-batch claim);
//   - for refined SF-AdamW, the averaging window in iterates: x_T = Σ α_t y_t with α_t ≈
//     (C/T)(t/T)^(C−1), whose effective number of iterates (Σα)²/Σα² is T(2C−1)/C².
//     C = 200 averages about 50 of the paper's 5,000 steps, and 11 of a 1,100-step twin's:
//     a constant counted in steps does not transfer unscaled; the C with the paper's window
//     at T steps solves T(2C−1)/C² = W.
// A claim whose twin is off by more than regimeFactor in either reads "outside the
// paper's regime", with the reason; its rows keep their own verdicts.

import (
	"fmt"
	"math"
	"strings"

	"github.com/sfsweep/sfsweep/training/model"
)

// Outside is the verdict of a claim whose twin is outside the paper's regime.
const Outside Verdict = "outside the paper's regime"

// regimeFactor is how far a twin's tokens per parameter or averaging window may be from
// the paper's, as a ratio either way, and still be in its regime.
const regimeFactor = 2

// paperSetup is one of the paper's two setups: steps of batch tokens.
type paperSetup struct {
	name         string
	steps, batch float64
}

// regime is what a twin is judged against: the paper's two setups and its model's size.
type regime struct {
	base, large paperSetup
	params      float64
}

// paperRegime is the paper's: 5,000 steps of 0.5M tokens and 2,500 of 2M (2^19 and 2^21,
// its 2.62B and 5.24B tokens) on llm-baselines' tied llama-124m.
func paperRegime() regime {
	c, err := model.Preset("llama-124m")
	if err != nil {
		panic(err) // a preset of the package
	}
	return regime{paperSetup{"0.5M-token runs", 5000, 1 << 19}, paperSetup{"2M-token runs", 2500, 1 << 21}, float64(c.NumParams())}
}

// tokensPerParam is the tokens a run of steps × batch trains per parameter of a model of
// params parameters.
func tokensPerParam(steps, batch, params float64) float64 { return steps * batch / params }

// averagingWindow is the effective number of iterates refined SF-AdamW's x averages after
// T steps at C: T(2C−1)/C², from α_t ≈ (C/T)(t/T)^(C−1).
func averagingWindow(T, C float64) float64 { return T * (2*C - 1) / (C * C) }

// windowC is the C whose averaging window after T steps is w: the larger root of
// w·C² − 2T·C + T = 0; 0 where none is (w > T).
func windowC(T, w float64) float64 {
	d := T*T - w*T
	if d < 0 {
		return 0
	}
	return (T + math.Sqrt(d)) / w
}

// outsideRegime is the reason the twin of check c is outside the paper's regime; "" where
// it is in it or there is nothing to judge. rows are the check's comparisons, whose refined
// configurations (of a claim about refined SF-AdamW) give the C and steps of the averaging
// window.
func outsideRegime(c check, e *evidence, rows []Comparison, rg regime) string {
	if c.run == nil || len(e.configs) == 0 {
		return ""
	}
	setup := rg.base
	if c.large {
		setup = rg.large
	}
	// the configurations at the claim's batch: the largest for the large-batch claim, else
	// the smallest
	pick := e.configs[0]
	for _, cf := range e.configs {
		if c.large && cf.cfg.BatchTokens > pick.cfg.BatchTokens || !c.large && cf.cfg.BatchTokens < pick.cfg.BatchTokens {
			pick = cf
		}
	}
	mc, err := pick.cfg.ResolveModel()
	if err != nil {
		return ""
	}
	var reasons []string
	paperTPP := tokensPerParam(setup.steps, setup.batch, rg.params)
	twinTPP := tokensPerParam(float64(pick.cfg.Steps), float64(pick.cfg.BatchTokens), float64(mc.NumParams()))
	if r := twinTPP / paperTPP; r > regimeFactor || r < 1/float64(regimeFactor) {
		reasons = append(reasons, fmt.Sprintf("the twin trains %.1f tokens per parameter (%d steps of %d tokens, %d parameters), the paper's %s %.1f",
			twinTPP, pick.cfg.Steps, pick.cfg.BatchTokens, mc.NumParams(), setup.name, paperTPP))
	}
	if strings.HasPrefix(c.id, "refined-") {
		seen := map[float64]bool{}
		for _, r := range rows {
			for _, cf := range e.configs {
				C := cf.opt().C
				if cf.label() != r.A.Config || !refined(cf) || seen[C] {
					continue
				}
				seen[C] = true
				T := float64(cf.cfg.Steps)
				twin, paper := averagingWindow(T, C), averagingWindow(setup.steps, C)
				if ratio := twin / paper; ratio > regimeFactor || ratio < 1/float64(regimeFactor) {
					reasons = append(reasons, fmt.Sprintf("C = %s averages about %.0f iterates over the twin's %d steps, against %.0f over the paper's %.0f (C ≈ %.0f gives the paper's window in %d steps)",
						formatG(C), twin, cf.cfg.Steps, paper, setup.steps, windowC(T, paper), cf.cfg.Steps))
				}
			}
		}
	}
	if len(reasons) == 0 {
		return ""
	}
	return "Outside the paper's regime: " + strings.Join(reasons, "; ") + "."
}
