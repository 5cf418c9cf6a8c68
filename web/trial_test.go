package web

import (
	"context"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/sfsweep/sfsweep/internal/keys"
	"github.com/sfsweep/sfsweep/training"
	"github.com/sfsweep/sfsweep/training/model"
)

// A trial's page, from the sweep's table: its settings from config.json, its final losses
// at each iterate, its curves, the files of its record with a PyTorch loader for the final
// model, its checkpoints newest first and a program's logs; each file downloads as stored.
// A diverged and a failed trial say so, the failure's markup escaped.
func TestTrialPage(t *testing.T) {
	store := newDir(t)
	id, trials := fixture(t, store, pageManifest, pageOutcomes)
	ctx := context.Background()
	tr := trials[2]
	p := tr.Points[0]
	prefix := keys.Trial(tr.ID)
	weights := []byte("\x08\x00\x00\x00\x00\x00\x00\x00{}      not a real model")
	mc, err := tr.Config.ResolveModel()
	if err != nil {
		t.Fatal(err)
	}
	card := training.ModelCard{Model: mc, Iterate: training.IterX, Step: 10, PyTorch: training.PyTorchOf(mc)}
	cardJSON, _ := json.Marshal(card)
	log := []byte("<b>step 1</b>\n")
	for key, b := range map[string][]byte{
		keys.RunModel(prefix):                        weights,
		keys.RunModelCard(prefix):                    cardJSON,
		keys.Checkpoint(keys.Checkpoints(prefix), 4): []byte("ckpt 4"),
		keys.Checkpoint(keys.Checkpoints(prefix), 8): []byte("ckpt 8"),
		keys.ProgramLog(tr.ID, 0, 1, "stderr"):       log,
	} {
		if err := store.Put(ctx, key, b); err != nil {
			t.Fatal(err)
		}
	}
	ts := newTestServer(t, store, Options{})
	base := ts.URL + "/sweeps/" + id
	_, _, sweepPage := get(t, nil, base)
	link := "/sweeps/" + id + "/trials/" + tr.ID
	if !strings.Contains(sweepPage, `href="`+link+`"`) {
		t.Fatalf("the sweep page does not link trial %s to its page", tr.ID)
	}
	code, hdr, page := get(t, nil, ts.URL+link)
	if code != 200 || !strings.HasPrefix(hdr.Get("Content-Type"), "text/html") {
		t.Fatalf("trial page: %d %s", code, hdr.Get("Content-Type"))
	}
	want := curveResult(10, 3+p.C/1000+float64(p.Seed)/100)
	for _, s := range []string{
		"<code>optimizer.lr</code></td><td class=\"num\"><code>0.002</code>",
		"<code>optimizer.beta1</code></td><td class=\"num\"><code>" + strconv.FormatFloat(p.Beta1, 'g', -1, 64) + "</code>",
		"<code>seed</code></td><td class=\"num\"><code>" + strconv.Itoa(p.Seed) + "</code>",
		`<tr data-iterate="x"><td>x <span class="hint">(reported)</span></td>` + "\n" + `<td class="num">` + strconv.FormatFloat(want.Val["x"], 'f', 4, 64) + `</td>`,
		`<td class="num">` + strconv.FormatFloat(want.TestPPL["x"], 'f', 2, 64) + `</td>`,
		`data-curves="/sweeps/` + id + `/curves"`, `class="plot-trial" value="` + tr.ID + `" data-default="1"`,
		`href="` + link + `/files/config.json"`, `href="` + link + `/files/result.json"`, `href="` + link + `/files/model.safetensors"`,
		`href="` + link + `/files/program/logs/attempt-1.stderr"`,
		"torch_llama.from_files(", `sys.path.insert(0, "bench/torch")`, "weights at x, step 10",
		`href="/sweeps/` + id + `"`,
	} {
		if !strings.Contains(page, s) && !strings.Contains(html.UnescapeString(page), s) {
			t.Errorf("the trial page lacks %q", s)
		}
	}
	if i8, i4 := strings.Index(page, "step-00000008.safetensors"), strings.Index(page, "step-00000004.safetensors"); i8 < 0 || i4 < 0 || i8 > i4 {
		t.Errorf("checkpoints not listed newest first (%d, %d)", i8, i4)
	}
	// downloads: the bytes stored, a binary as an attachment, a log as text that no browser renders
	for _, f := range []struct {
		name, ctype string
		attach      bool
		want        []byte
	}{
		{"model.safetensors", "application/octet-stream", true, weights},
		{"model.json", "application/json", false, cardJSON},
		{"checkpoints/step-00000008.safetensors", "application/octet-stream", true, []byte("ckpt 8")},
		{"program/logs/attempt-1.stderr", "text/plain; charset=utf-8", false, log},
	} {
		resp, err := http.Get(ts.URL + link + "/files/" + f.name)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(b) != string(f.want) || resp.Header.Get("Content-Type") != f.ctype ||
			strings.HasPrefix(resp.Header.Get("Content-Disposition"), "attachment") != f.attach || resp.Header.Get("X-Content-Type-Options") != "nosniff" ||
			!strings.HasPrefix(resp.Header.Get("Content-Security-Policy"), "sandbox;") {
			t.Errorf("%s: %d %q %v, body %q", f.name, resp.StatusCode, resp.Header.Get("Content-Type"), resp.Header, b)
		}
	}
	var cfg map[string]any
	if _, _, b := get(t, nil, ts.URL+link+"/files/config.json"); json.Unmarshal([]byte(b), &cfg) != nil || cfg["seed"] == nil {
		t.Errorf("config.json: %s", b)
	}

	// the diverged trial and the failed one (hostile reason)
	for _, tr := range trials {
		p := tr.Points[0]
		switch {
		case p.Beta1 == 0.5 && p.C == 50 && p.Seed == 1:
			_, _, page := get(t, nil, base+"/trials/"+tr.ID)
			if !strings.Contains(page, "diverged at step 4") {
				t.Error("the diverged trial's page does not say where it diverged")
			}
		case p.Beta1 == 0.5 && p.C == 200 && p.Seed == 2:
			_, _, page := get(t, nil, base+"/trials/"+tr.ID)
			if !strings.Contains(page, `id="state">failed`) || strings.Contains(page, hostile) || !strings.Contains(page, html.EscapeString(hostile)) {
				t.Error("the failed trial's page does not show its reason, escaped")
			}
			if strings.Contains(page, "torch_llama") {
				t.Error("a trial without a model offers a loader")
			}
		}
	}
}

// The loader names the module and the config of model.json; GPT-2, which has no PyTorch
// module here, has none.
func TestPyTorchOf(t *testing.T) {
	c := model.Config{Arch: model.LLaMA, Vocab: 257, Dim: 32, Layers: 2, Heads: 2, Context: 32, Hidden: 64, RopeTheta: 10000, NormEps: 1e-5}
	pt := training.PyTorchOf(c)
	if pt == nil || pt.Class != training.TorchLlama || pt.Config["d"] != 32 || pt.Config["ctx"] != 32 || pt.Config["untied"] != false {
		t.Fatalf("%+v", pt)
	}
	loader := torchLoader(training.ModelCard{Model: c, Iterate: "x", Step: 7, PyTorch: pt})
	if !strings.Contains(loader, "import torch_llama\n") || !strings.Contains(loader, "torch_llama.from_files(\"model.safetensors\", \"model.json\")") {
		t.Errorf("loader:\n%s", loader)
	}
	if training.PyTorchOf(model.Config{Arch: model.GPT2}) != nil {
		t.Error("GPT-2 has a PyTorch module")
	}
}
