package trial

// A trial's probe results: the decay probe and the LR-decay branch from each of its
// checkpoints probed, and the interpolation between two of them; the rule by which a
// stored one answers a request; and which are still missing.

import (
	"context"
	"fmt"
	"strings"

	"github.com/sfsweep/sfsweep/internal/blob"
	"github.com/sfsweep/sfsweep/internal/keys"
	"github.com/sfsweep/sfsweep/internal/probe"
	"github.com/sfsweep/sfsweep/training"
)

// Accepts is the rule by which a stored decay probe result r answers a request for want:
// r was computed with want's steps, peak LR and shape, from the iterate want asks for
// (training.SameIterate: "" and "ewa" accept the iterate they resolve to). The checkpoint
// step and the asked iterate are in the key. An LR-decay branch and an interpolation need
// no rule: their keys name every setting they have, so any that decodes answers.
func Accepts(r *training.DecayProbeResult, want training.DecayProbeConfig) bool {
	return r.Steps == want.Steps && r.PeakLR == want.PeakLR && r.Shape == want.Shape && training.SameIterate(r.Iterate, want.Iterate)
}

// ReadDecayProbe reads trial id's decay probe from step want.FromStep (the iterate
// want.Iterate asks for): nil if there is none, or none that Accepts want.
func ReadDecayProbe(ctx context.Context, store blob.Store, id string, want training.DecayProbeConfig) (*training.DecayProbeResult, error) {
	r, err := readJSON[training.DecayProbeResult](ctx, store, keys.DecayProbe(id, want.FromStep, want.Iterate))
	if r != nil && !Accepts(r, want) {
		r = nil
	}
	return r, err
}

// WriteDecayProbe writes r as trial id's decay probe for request want.
func WriteDecayProbe(ctx context.Context, store blob.Store, id string, want training.DecayProbeConfig, r *training.DecayProbeResult) error {
	return putIndented(ctx, store, keys.DecayProbe(id, want.FromStep, want.Iterate), r)
}

// ReadLRDecay reads trial id's LR-decay branch from step over frac of the steps before it:
// nil if there is none.
func ReadLRDecay(ctx context.Context, store blob.Store, id string, step int, frac float64) (*training.LRDecayResult, error) {
	return readJSON[training.LRDecayResult](ctx, store, keys.LRDecay(id, step, frac))
}

// WriteLRDecay writes r as trial id's LR-decay branch from step over frac.
func WriteLRDecay(ctx context.Context, store blob.Store, id string, step int, frac float64, r *training.LRDecayResult) error {
	return putIndented(ctx, store, keys.LRDecay(id, step, frac), r)
}

// interpKey is the key of trial id's interpolation segment ip: between its checkpoints at
// From and To (or, Decayed, from From to the end of an LR-decay branch over To − From
// steps) at Points values of α.
func interpKey(id string, ip probe.Interpolation) string {
	return keys.Interpolation(id, ip.From, ip.To, ip.Points, ip.Decayed)
}

// ReadInterpolation reads trial id's interpolation ip: nil if there is none.
func ReadInterpolation(ctx context.Context, store blob.Store, id string, ip probe.Interpolation) (*training.InterpolationResult, error) {
	return readJSON[training.InterpolationResult](ctx, store, interpKey(id, ip))
}

// WriteInterpolation writes r as trial id's interpolation ip.
func WriteInterpolation(ctx context.Context, store blob.Store, id string, ip probe.Interpolation, r *training.InterpolationResult) error {
	return putIndented(ctx, store, interpKey(id, ip), r)
}

// DecayProbe reads trial id's decay probe for want (ReadDecayProbe) if the listing has it.
func (l Listing) DecayProbe(ctx context.Context, store blob.Store, id string, want training.DecayProbeConfig) (*training.DecayProbeResult, error) {
	if !l.Has(keys.DecayProbe(id, want.FromStep, want.Iterate)) {
		return nil, nil
	}
	return ReadDecayProbe(ctx, store, id, want)
}

// LRDecay reads trial id's LR-decay branch from step over frac (ReadLRDecay) if the
// listing has it.
func (l Listing) LRDecay(ctx context.Context, store blob.Store, id string, step int, frac float64) (*training.LRDecayResult, error) {
	if !l.Has(keys.LRDecay(id, step, frac)) {
		return nil, nil
	}
	return ReadLRDecay(ctx, store, id, step, frac)
}

// Interpolation reads trial id's interpolation ip (ReadInterpolation) if the listing has
// it.
func (l Listing) Interpolation(ctx context.Context, store blob.Store, id string, ip probe.Interpolation) (*training.InterpolationResult, error) {
	if !l.Has(interpKey(id, ip)) {
		return nil, nil
	}
	return ReadInterpolation(ctx, store, id, ip)
}

// DecayProbes reads trial id's decay probes listed, from every step, that Accepts want
// (whatever its FromStep), in the order of their steps.
func (l Listing) DecayProbes(ctx context.Context, store blob.Store, id string, want training.DecayProbeConfig) ([]*training.DecayProbeResult, error) {
	return everyStep(ctx, store, l, keys.DecayProbe(id, 0, want.Iterate), func(r *training.DecayProbeResult) bool { return Accepts(r, want) })
}

// LRDecays reads trial id's LR-decay branches over frac listed, from every step, in the
// order of their steps.
func (l Listing) LRDecays(ctx context.Context, store blob.Store, id string, frac float64) ([]*training.LRDecayResult, error) {
	return everyStep(ctx, store, l, keys.LRDecay(id, 0, frac), func(*training.LRDecayResult) bool { return true })
}

// everyStep reads the listed results of one kind of probe (the keys that share key0's
// name up to its step, key0 being that of step 0) that accept takes, in the order of
// their steps; one that does not decode is left out.
func everyStep[R any](ctx context.Context, store blob.Store, l Listing, key0 string, accept func(*R) bool) ([]*R, error) {
	var out []*R
	for _, k := range l.under(strings.TrimSuffix(key0, fmt.Sprintf("%08d.json", 0))) {
		r, err := readJSON[R](ctx, store, k)
		if err != nil {
			return out, err
		}
		if r != nil && accept(r) {
			out = append(out, r)
		}
	}
	return out, nil
}

// MissingProbes lists the keys of the probe results that trial id gets (tp, as
// sweeps.Manifest.ProbesFor resolves them) and the listing lacks. A probe that lists no
// step runs from every checkpoint the listing has (probe.At).
func (l Listing) MissingProbes(id string, tp probe.Set) []string {
	var missing []string
	need := func(key string) {
		if !l.Has(key) {
			missing = append(missing, key)
		}
	}
	steps := func(at []int) []int { return probe.At(at, l.Checkpoints(id)) }
	if d := tp.Decay; d != nil && d.Steps > 0 {
		for _, s := range steps(d.At) {
			need(keys.DecayProbe(id, s, d.Iterate))
		}
	}
	if b := tp.LRDecay; b != nil && b.Frac > 0 {
		for _, s := range steps(b.At) {
			need(keys.LRDecay(id, s, b.Frac))
		}
	}
	if ip := tp.Interpolate; ip != nil {
		need(keys.Interpolation(id, ip.From, ip.To, ip.Points, false))
		if ip.Decayed {
			need(keys.Interpolation(id, ip.From, ip.To, ip.Points, true))
		}
	}
	return missing
}
