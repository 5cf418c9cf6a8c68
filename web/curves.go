package web

// The validation curves of chosen trials, as JSON for the page's chart.

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"slices"

	"github.com/sfsweep/sfsweep/internal/blob"
	"github.com/sfsweep/sfsweep/training"
	"github.com/sfsweep/sfsweep/trial"
)

// maxCurves bounds the trials one chart overlays.
const maxCurves = 12

// curve is a trial's validation losses at each evaluation, as the chart reads them.
type curve struct {
	ID     string       `json:"id"`
	Label  string       `json:"label"`
	State  string       `json:"state"`
	Points []curvePoint `json:"points"`
	Steps  int          `json:"steps"`
	Iters  []string     `json:"iterates"`
}

type curvePoint struct {
	Step int                 `json:"step"`
	Val  map[string]*float64 `json:"val"` // null where the loss was not finite
}

// readCurve reads a trial's evaluations so far, a loss that is not finite as null.
func readCurve(ctx context.Context, store blob.Store, id string) ([]curvePoint, error) {
	points, err := trial.ReadCurves(ctx, store, id)
	out := make([]curvePoint, 0, len(points))
	for _, c := range points {
		p := curvePoint{Step: c.Step, Val: map[string]*float64{}}
		for k, v := range c.Val {
			if !math.IsNaN(v) && !math.IsInf(v, 0) {
				p.Val[k] = &v
			} else {
				p.Val[k] = nil
			}
		}
		out = append(out, p)
	}
	return out, err
}

// latest is the last evaluation's losses by iterate (nil: none yet).
func latest(points []curvePoint) map[string]*float64 {
	if len(points) == 0 {
		return nil
	}
	return points[len(points)-1].Val
}

// handleCurves answers the curves of the trials asked (?trial=ID, repeated; at most
// maxCurves), each of which must be a trial of the sweep.
func (s *Server) handleCurves(w http.ResponseWriter, r *http.Request) {
	d, err := s.load(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, err)
		return
	}
	asked := r.URL.Query()["trial"]
	if len(asked) > maxCurves {
		asked = asked[:maxCurves]
	}
	out := struct {
		Trials []curve `json:"trials"`
	}{Trials: []curve{}}
	for _, id := range asked {
		i := slices.IndexFunc(d.Rows, func(r row) bool { return r.ID == id })
		if i < 0 {
			continue // not a trial of this sweep
		}
		row := &d.Rows[i]
		pts, err := readCurve(r.Context(), s.opt.Store, id)
		if err != nil {
			s.fail(w, err)
			return
		}
		out.Trials = append(out.Trials, curve{ID: id, Label: rowLabel(row), State: row.State, Points: nonNilPoints(pts), Steps: row.Steps,
			Iters: training.Iterates(row.Optimizer)})
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(out)
}

func nonNilPoints(p []curvePoint) []curvePoint {
	if p == nil {
		return []curvePoint{}
	}
	return p
}
