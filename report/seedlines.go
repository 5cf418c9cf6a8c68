package report

// A plot's lines: the configuration a Line stands for, the checks on what a plot is
// given, and the seeds of a Line averaged into the one line drawn (their mean, over a band
// from the lowest to the highest seed).

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/sfsweep/sfsweep/fielderr"
	"github.com/sfsweep/sfsweep/training"
)

// Line is what one line of a sweep's plots stands for: a configuration of the sweep. The
// trials that differ only in seed share it and are drawn as one line, their mean.
type Line struct {
	Optimizer    string  // training.SFAdamW, training.AdamW (or another optimizer's name)
	Schedule     string  // the LR schedule of an optimizer other than SF-AdamW: constant, cosine, linear, wsd
	LR           float64 // peak learning rate
	Beta1, Beta2 float64
	C            float64 // refined SF-AdamW's C; 0 for vanilla (C = 1/(1−β1))
	BatchTokens  int     // tokens per step; 0 if not known
}

func (l Line) sf() bool { return l.Optimizer == training.SFAdamW }

// check checks a line's fields; field names the line ("curves[2].Line").
func (l Line) check(field string) error {
	if l.Optimizer == "" {
		return &fielderr.Error{Field: field + ".Optimizer", Value: `""`, Reason: "empty: the legend names the optimizer"}
	}
	for _, s := range []struct{ name, v string }{{"Optimizer", l.Optimizer}, {"Schedule", l.Schedule}} {
		if err := checkPlainText(field+"."+s.name, s.v); err != nil {
			return err
		}
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"LR", l.LR}, {"Beta1", l.Beta1}, {"Beta2", l.Beta2}, {"C", l.C}} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) || (f.name == "C" && f.v < 0) {
			return &fielderr.Error{Field: field + "." + f.name, Value: f.v, Reason: "must be finite (C ≥ 0)"}
		}
	}
	if l.BatchTokens < 0 {
		return &fielderr.Error{Field: field + ".BatchTokens", Value: l.BatchTokens, Reason: "must be ≥ 0"}
	}
	return nil
}

// seriesID identifies a series given to a plot: two with equal IDs are refused.
type seriesID struct {
	line    Line
	seed    int
	decayed bool
}

// checkPlotInput checks the n series of a sweep plot: at least one, the loss axis's range,
// each series' line, at least one point each (points) and every point (check), and no two
// series of the same line, seed and kind (id).
func checkPlotInput(field string, n int, yMin, yMax float64, id func(i int) seriesID, points func(i int) int, check func(i, j int) error) error {
	if n == 0 {
		return &fielderr.Error{Field: field, Value: 0, Reason: "no trials to plot"}
	}
	if err := checkYRange(yMin, yMax); err != nil {
		return err
	}
	seen := make(map[seriesID]int, n)
	for i := range n {
		s := id(i)
		if err := s.line.check(fmt.Sprintf("%s[%d].Line", field, i)); err != nil {
			return err
		}
		if j, dup := seen[s]; dup {
			return &fielderr.Error{Field: fmt.Sprintf("%s[%d].Seed", field, i), Value: s.seed, Reason: fmt.Sprintf("same line and seed as %s[%d]", field, j)}
		}
		seen[s] = i
		if points(i) == 0 {
			return &fielderr.Error{Field: fmt.Sprintf("%s[%d].Points", field, i), Value: 0, Reason: "empty: no point to plot"}
		}
		for j := range points(i) {
			if err := check(i, j); err != nil {
				return err
			}
		}
	}
	return nil
}

// seedSeries is one seed's values of one kind of series (an iterate; before or after a
// probe) of a line, at x in any order.
type seedSeries struct {
	line    Line
	seed    int
	kind    int
	stopped bool // a search stopped it early
	xs, ys  []float64
}

// meanLine is a line as drawn: the mean over a Line's seeds at each x that every one of
// them has, in order of x, and the lowest and highest seed there. A value that is not
// finite in any seed makes the point not finite.
type meanLine struct {
	line             Line
	kind             int
	n                int  // seeds averaged
	stopped          bool // a search stopped its seeds early: it ends with a cross
	xs, mean, lo, hi []float64
}

// average merges the seeds of each line and kind, summing in order of seed, so the same
// series give the same bits in any order. Of the points of one seed at one x, the first
// counts. A seed that has nothing of a kind leaves its line without that kind.
func average(series []seedSeries) []meanLine {
	type group struct {
		line Line
		kind int
	}
	seeds := map[Line][]int{}
	stopped := map[Line]bool{}
	values := map[group]map[int]map[float64]float64{} // seed → x → y
	for _, s := range series {
		stopped[s.line] = stopped[s.line] || s.stopped
		if !slices.Contains(seeds[s.line], s.seed) {
			seeds[s.line] = append(seeds[s.line], s.seed)
		}
		g := group{s.line, s.kind}
		if values[g] == nil {
			values[g] = map[int]map[float64]float64{}
		}
		at := values[g][s.seed]
		if at == nil {
			at = map[float64]float64{}
			values[g][s.seed] = at
		}
		for i, x := range s.xs {
			if _, ok := at[x]; !ok {
				at[x] = s.ys[i]
			}
		}
	}
	groups := slices.SortedFunc(maps.Keys(values), func(a, b group) int {
		return cmp.Or(compareLines(a.line, b.line), cmp.Compare(a.kind, b.kind))
	})
	var out []meanLine
	for _, g := range groups {
		ss := slices.Sorted(slices.Values(seeds[g.line]))
		bySeed := values[g]
		if len(bySeed) < len(ss) {
			continue
		}
		ml := meanLine{line: g.line, kind: g.kind, n: len(ss), stopped: stopped[g.line]}
	x:
		for _, x := range slices.Sorted(maps.Keys(bySeed[ss[0]])) {
			sum, lo, hi := 0.0, math.Inf(1), math.Inf(-1)
			for _, s := range ss {
				v, ok := bySeed[s][x]
				if !ok {
					continue x
				}
				sum, lo, hi = sum+v, min(lo, v), max(hi, v)
			}
			ml.xs = append(ml.xs, x)
			ml.mean = append(ml.mean, sum/float64(len(ss)))
			ml.lo, ml.hi = append(ml.lo, lo), append(ml.hi, hi)
		}
		out = append(out, ml)
	}
	return out
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
