package report

// The interpolation finding tests the shape of the loss between two checkpoints, one
// construct per regime of fig:river_valley_loss_profile, never how much lower one end is
// than the other (which is the run's progress between them). The loss is read along the
// segment from w(t1) to w(t2): a result's points run from α = 0, w(t2), to α = 1, w(t1).

import (
	"math"

	"github.com/sfsweep/sfsweep/training"
)

// obs1Interpolation: per seed, for the best constant-LR AdamW configuration, the plain
// segment dips below both its ends (valleyDepth > 0) and the decayed segment declines at
// every point (largestRise < 0); for the best vanilla SF-AdamW configuration at its batch,
// the plain segment keeps to the chord between its ends within the margin.
func obs1Interpolation(e *evidence) ([]Comparison, string) {
	aw, sf, note := e.obs1Pair()
	if aw == nil {
		return nil, note
	}
	return []Comparison{
		compare(e, aw, valleyDepth, nil, value{}, ">"),
		compare(e, aw, largestRise, nil, value{}, "<"),
		compare(e, sf, chordDeviation, nil, value{}, "≈"),
	}, ""
}

// The shapes of the loss along an interpolation: each needs a point between the ends.
var (
	// valleyDepth is min(L(t1), L(t2)) minus the lowest loss strictly between them: above
	// 0 where the segment has an interior minimum below both ends (AdamW at constant LR
	// crossing the valley floor between two walls).
	valleyDepth = shapeOf("valley depth: lower end − interior minimum (plain segment)", plain, func(l []float64) float64 {
		lo := math.Inf(1)
		for _, v := range l[1 : len(l)-1] {
			lo = min(lo, v)
		}
		return min(l[0], l[len(l)-1]) - lo
	})
	// largestRise is the largest rise of the loss from one point to the next on the way
	// from w(t1) to the decayed end: below 0 where the loss declines at every point.
	largestRise = shapeOf("largest rise from w(t1) to the decayed end (decayed segment)", decayedSeg, func(l []float64) float64 {
		rise := math.Inf(-1)
		for i := 1; i < len(l); i++ {
			rise = max(rise, l[i]-l[i-1])
		}
		return rise
	})
	// chordDeviation is the loss minus the chord between the ends, at the interior point
	// where it is largest in size, with its sign: within ±margin where the segment is
	// flat or declines evenly (SF-AdamW already on the valley floor).
	chordDeviation = shapeOf("largest deviation from the chord (plain segment)", plain, func(l []float64) float64 {
		var dev float64
		last := len(l) - 1
		for i, v := range l[1:last] {
			f := float64(i+1) / float64(last)
			if d := v - (l[0] + f*(l[last]-l[0])); math.Abs(d) > math.Abs(dev) {
				dev = d
			}
		}
		return dev
	})
)

// plain and decayedSeg pick the segment a shape reads.
func plain(e *evidence, id string) *training.InterpolationResult      { return e.interp[id] }
func decayedSeg(e *evidence, id string) *training.InterpolationResult { return e.decayed[id] }

// shapeOf is the value shape(l) of the losses l of a trial's segment, ordered from w(t1) to
// its other end; no value where the trial lacks the segment or it has no interior point.
// A point that diverged makes the value NaN: a diverged seed.
func shapeOf(name string, segment func(e *evidence, id string) *training.InterpolationResult, shape func(l []float64) float64) value {
	return value{name, func(e *evidence, id string, _ *training.Result) (float64, bool) {
		r := segment(e, id)
		if r == nil || len(r.Points) < 3 {
			return 0, false
		}
		l := make([]float64, len(r.Points))
		for i, p := range r.Points {
			l[len(l)-1-i] = float64(p.Loss) // α = 1, w(t1), first
		}
		return shape(l), true
	}}
}
