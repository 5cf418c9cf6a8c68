package web

// A trial's page: its settings, its outcome and losses, its curves, and its objects in the
// store (the final model with a PyTorch loader, checkpoints, a program's logs) to download.

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"math"
	"net/http"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sfsweep/sfsweep/internal/blob"
	"github.com/sfsweep/sfsweep/internal/keys"
	"github.com/sfsweep/sfsweep/internal/status"
	"github.com/sfsweep/sfsweep/report"
	"github.com/sfsweep/sfsweep/training"
	"github.com/sfsweep/sfsweep/trial"
)

// errNoTrial is a trial that is not one of the sweep's.
var errNoTrial = errors.New("no such trial in this sweep")

// trialView is a trial's page.
type trialView struct {
	rowView
	Sweep     string // the sweep's ID
	SweepName string
	Poll      int
	Base      string // the page's path
	Iterates  []string
	Settings  []setting
	Losses    []iterateLosses
	Tokens    int64
	Files     []trialFile // the run's own objects: config, curves, result, model
	Ckpts     []trialFile // the engine's checkpoints, newest first
	Logs      []trialFile // a program's logs, by attempt
	Others    []trialFile // everything else under the trial (probes, a program's checkpoint files)
	Torch     string      // how to load the final model in PyTorch ("": no model, or no PyTorch class for it)
}

// setting is one leaf of the run config: its JSON path and value.
type setting struct{ Key, Value string }

// iterateLosses are an iterate's final losses.
type iterateLosses struct {
	Iterate        string
	Primary        bool
	Val, Test, PPL string
}

// trialFile is an object of a trial, to download.
type trialFile struct {
	Name string // its key under the trial's prefix
	URL  string
}

// maxTrialFiles bounds the objects a trial's page lists in each group.
const maxTrialFiles = 200

// trialRow finds trial tid among the sweep's rows.
func trialRow(d *sweepData, tid string) (*row, error) {
	if !trialIDPattern.MatchString(tid) {
		return nil, errNoTrial
	}
	i := slices.IndexFunc(d.Rows, func(r row) bool { return r.ID == tid })
	if i < 0 {
		return nil, errNoTrial
	}
	return &d.Rows[i], nil
}

// trialView reads trial tid of sweep d for its page.
func (s *Server) trialView(ctx context.Context, d *sweepData, tid string) (*trialView, error) {
	r, err := trialRow(d, tid)
	if err != nil {
		return nil, err
	}
	base := "/sweeps/" + d.ID + "/trials/" + tid
	v := &trialView{Sweep: d.ID, SweepName: d.Manifest.Name, Base: base}
	v.Iterates = sortedIterates(training.Iterates(r.Optimizer))
	if v.rowView, err = s.rowView(ctx, r, v.Iterates); err != nil {
		return nil, err
	}
	if d.Live && (inFlight(r.State) || r.State == statePend) {
		v.Poll = int(s.opt.Poll / time.Millisecond)
	}
	cfg, err := trial.ReadConfig(ctx, s.opt.Store, tid)
	switch {
	case err == nil:
		set, err := report.ConfigSettings(cfg)
		if err != nil {
			return nil, err
		}
		for _, k := range slices.Sorted(maps.Keys(set)) {
			v.Settings = append(v.Settings, setting{k, set[k]})
		}
	case !errors.Is(err, blob.ErrNotFound):
		return nil, err
	}
	res, err := trial.ReadResult(ctx, s.opt.Store, tid) // nil, nil: none
	switch {
	case err != nil:
		return nil, err
	case res != nil:
		v.Tokens = res.Tokens
		for _, it := range v.Iterates {
			if _, ok := res.Val[it]; !ok {
				continue
			}
			v.Losses = append(v.Losses, iterateLosses{Iterate: it, Primary: it == res.Primary,
				Val: lossText(res.Val, it, 4), Test: lossText(res.Test, it, 4), PPL: lossText(res.TestPPL, it, 2)})
		}
	}
	if err := s.trialFiles(ctx, v, tid); err != nil {
		return nil, err
	}
	return v, nil
}

// sortedIterates puts iterates in the page's order.
func sortedIterates(its []string) []string {
	var out []string
	for _, it := range iterateOrder {
		if slices.Contains(its, it) {
			out = append(out, it)
		}
	}
	return out
}

// lossText is an iterate's loss in m with prec decimals: "" if m has none, "—" if it was
// not finite.
func lossText(m map[string]float64, it string, prec int) string {
	f, ok := m[it]
	switch {
	case !ok:
		return ""
	case math.IsNaN(f) || math.IsInf(f, 0):
		return "—"
	}
	return strconv.FormatFloat(f, 'f', prec, 64)
}

// runFiles are a run's own objects, in the order its page lists them.
var runFiles = []string{keys.ConfigName, keys.CurvesName, keys.ResultName, keys.ModelName, keys.ModelCardName, keys.FailedName, "attempts.json"}

// trialFiles lists the trial's objects into v's groups, and the loader of its final model.
func (s *Server) trialFiles(ctx context.Context, v *trialView, tid string) error {
	prefix := keys.Trial(tid) + "/"
	listed, err := s.opt.Store.List(ctx, prefix)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(listed))
	for _, k := range listed {
		if name := strings.TrimPrefix(k, prefix); name != "" && blob.ValidKey(k) == nil {
			names = append(names, name)
		}
	}
	add := func(group *[]trialFile, name string) {
		if len(*group) < maxTrialFiles {
			*group = append(*group, trialFile{Name: name, URL: v.Base + "/files/" + name})
		}
	}
	for _, n := range runFiles {
		if slices.Contains(names, n) {
			add(&v.Files, n)
		}
	}
	ckpt := keys.CheckpointsDir + "/"
	for _, n := range slices.Backward(names) {
		if strings.HasPrefix(n, ckpt) && strings.HasSuffix(n, ".safetensors") {
			add(&v.Ckpts, n)
		}
	}
	for _, n := range names {
		switch {
		case slices.Contains(runFiles, n), strings.HasPrefix(n, ckpt):
		case strings.HasPrefix(n, "program/logs/"):
			add(&v.Logs, n)
		default:
			add(&v.Others, n)
		}
	}
	if slices.Contains(names, keys.ModelName) && slices.Contains(names, keys.ModelCardName) {
		b, err := s.opt.Store.Get(ctx, keys.RunModelCard(keys.Trial(tid)))
		if err != nil {
			return err
		}
		var card training.ModelCard
		if json.Unmarshal(b, &card) == nil && card.PyTorch != nil {
			v.Torch = torchLoader(card)
		}
	}
	return nil
}

// torchLoader is the Python that loads a final model into the PyTorch module its card
// names.
func torchLoader(card training.ModelCard) string {
	mod, class, _ := strings.Cut(card.PyTorch.Class, ":")
	dir, file := path.Split(mod)
	return "# in a checkout of sfsweep, with model.safetensors and model.json downloaded\n" +
		"import sys\n" +
		"sys.path.insert(0, " + strconv.Quote(strings.TrimSuffix(dir, "/")) + ")\n" +
		"import " + strings.TrimSuffix(file, ".py") + "\n" +
		"model = " + strings.TrimSuffix(file, ".py") + ".from_files(\"model.safetensors\", \"model.json\")  # " + class + ", weights at " +
		card.Iterate + ", step " + strconv.Itoa(card.Step) + "\n"
}

// trialContentTypes are the types of a trial's objects, by extension; anything else is
// served as bytes to download.
var trialContentTypes = map[string]string{
	".json": "application/json", ".jsonl": "application/x-ndjson", ".stdout": "text/plain; charset=utf-8",
	".stderr": "text/plain; charset=utf-8", ".log": "text/plain; charset=utf-8", ".txt": "text/plain; charset=utf-8",
}

func (s *Server) handleTrial(w http.ResponseWriter, r *http.Request) {
	s.trialPage(w, r, "trial.html")
}

func (s *Server) handleTrialLive(w http.ResponseWriter, r *http.Request) {
	s.trialPage(w, r, "trial-live")
}

func (s *Server) trialPage(w http.ResponseWriter, r *http.Request, tmpl string) {
	d, err := s.load(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, err)
		return
	}
	v, err := s.trialView(r.Context(), d, r.PathValue("trial"))
	if err != nil {
		s.fail(w, err)
		return
	}
	w.Header().Set("X-Live", strconv.FormatBool(v.Poll > 0))
	s.render(w, tmpl, v)
}

// handleTrialFile streams one object of a trial of the sweep: the trial must be the
// sweep's, and the name a valid key under the trial's prefix.
func (s *Server) handleTrialFile(w http.ResponseWriter, r *http.Request) {
	d, err := s.load(r.Context(), r.PathValue("id"))
	if err != nil {
		s.fail(w, err)
		return
	}
	tid, name := r.PathValue("trial"), r.PathValue("name")
	if _, err := trialRow(d, tid); err != nil {
		s.fail(w, err)
		return
	}
	key := keys.Trial(tid) + "/" + name
	if name == "" || blob.ValidKey(key) != nil {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	h := w.Header()
	if ct, ok := trialContentTypes[path.Ext(name)]; ok {
		h.Set("Content-Type", ct)
	} else {
		h.Set("Content-Type", "application/octet-stream")
		h.Set("Content-Disposition", `attachment; filename="`+path.Base(name)+`"`)
	}
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", "sandbox; default-src 'none'")
	if _, err := blob.GetStream(r.Context(), s.opt.Store, key, w); err != nil {
		if errors.Is(err, blob.ErrNotFound) {
			h.Del("Content-Disposition")
		}
		s.fail(w, err) // a 404 or 500 where nothing was written yet; else the download breaks off
	}
}

// StatusText is the trial's state in words, for its page's head.
func (v *trialView) StatusText() string {
	switch r := v.row; {
	case r.Status == status.Diverged:
		return "diverged at step " + strconv.Itoa(r.Step)
	case r.Status == status.Stopped:
		return "stopped at step " + strconv.Itoa(r.Step)
	}
	return v.State
}

// Progress is where a trial in flight is, or why it waits ("": neither).
func (v *trialView) Progress() string {
	if inFlight(v.State) {
		return stepsText(v.rowView)
	}
	return ""
}

// Trained is the training time of its last attempt ("": none recorded).
func (v *trialView) Trained() string {
	if v.Seconds <= 0 {
		return ""
	}
	return time.Duration(v.Seconds * float64(time.Second)).Round(100 * time.Millisecond).String()
}

// LastEval is the losses of the last evaluation so far, for a trial with no final losses.
func (v *trialView) LastEval() string {
	var parts []string
	for _, l := range v.rowView.Losses {
		if l.Text != "" {
			parts = append(parts, iterateNames[l.Iterate]+" "+l.Text)
		}
	}
	return strings.Join(parts, " · ")
}
