package web

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/sfsweep/sfsweep/internal/blob"
	"github.com/sfsweep/sfsweep/internal/keys"
	"github.com/sfsweep/sfsweep/internal/status"
	"github.com/sfsweep/sfsweep/report"
	"github.com/sfsweep/sfsweep/sweepclient"
	"github.com/sfsweep/sfsweep/sweeps"
	"github.com/sfsweep/sfsweep/training"
	"github.com/sfsweep/sfsweep/trial"
)

// hostile is text a manifest may hold that a page must show as text, never run.
const hostile = `<script>alert("x")</script>`

// pageManifest is a C-sensitivity sweep of 2 β1 × 4 C × 2 seeds whose table title is
// hostile markup.
const pageManifest = `name: pagetest
model_config: {arch: llama, vocab: 257, dim: 32, layers: 2, heads: 2, context: 32, hidden: 64, batch: 4}
data: {default: byte}
batch_tokens: 128
steps: 10
eval_every: 2
seeds: [1, 2]
optimizers:
  - name: sfadamw
    lr: 2e-3
    betas: [[0.5, 0.99], [0.9, 0.99]]
    c: [vanilla, 20, 50, 200]
tables:
  - kind: c_sensitivity
    name: c_page
    title: '` + hostile + `'
    label: tab:c_page
`

// outcome decides a fixture trial's outcome from its point: a result (nil: none) or a
// failure's reason ("": none).
type outcome func(i int, p sweeps.Point) (res *training.Result, failed string)

// curveResult is a completed run whose losses fall with the steps, offset by off.
func curveResult(steps int, off float64) *training.Result {
	r := &training.Result{Status: status.Completed, Primary: training.IterX, Steps: steps, Seconds: 2}
	for s := 2; s <= steps; s += 2 {
		v := off + 5/math.Sqrt(float64(s))
		r.Curves = append(r.Curves, training.CurvePoint{Step: s, Val: map[string]float64{"x": v, "y": v + 0.05, "ewa_x": v + 0.3, "ewa_y": v + 0.35}})
	}
	last := r.Curves[len(r.Curves)-1].Val
	r.Val = last
	r.Test = map[string]float64{"x": last["x"]}
	r.TestPPL = map[string]float64{"x": math.Exp(last["x"])}
	return r
}

// fixture writes a sweep's manifest and its trials' outcomes (result.json, curves.jsonl,
// failed.json) into store, builds its tables with report.Build, and returns its ID.
func fixture(t testing.TB, store blob.Store, src string, out outcome) (string, []sweeps.Trial) {
	t.Helper()
	ctx := context.Background()
	m, err := sweeps.Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	trials, err := m.Expand()
	if err != nil {
		t.Fatal(err)
	}
	id := keys.SweepID(m.Name, []byte(src))
	put := func(key string, b []byte) {
		if err := store.Put(ctx, key, b); err != nil {
			t.Fatal(err)
		}
	}
	put(keys.Manifest(id), []byte(src))
	for i, tr := range trials {
		cfg, _ := json.Marshal(tr.Config)
		put(keys.RunConfig(keys.Trial(tr.ID)), cfg)
		res, failed := out(i, tr.Points[0])
		if res != nil {
			var curves []byte
			for _, c := range res.Curves {
				b, _ := json.Marshal(c)
				curves = append(append(curves, b...), '\n')
			}
			put(keys.RunCurves(keys.Trial(tr.ID)), curves)
			b, err := json.Marshal(res)
			if err != nil {
				t.Fatal(err)
			}
			put(keys.RunResult(keys.Trial(tr.ID)), b)
		}
		if failed != "" {
			b, _ := json.Marshal(map[string]string{"reason": failed})
			put(keys.TrialFailed(tr.ID), b)
		}
	}
	if _, err := report.Build(ctx, store, m, report.Options{SweepID: id}); err != nil {
		t.Fatal(err)
	}
	return id, trials
}

// pageOutcomes: every trial completes, but β1 = 0.5 with C = 200 seed 2, which failed
// with a hostile reason, and β1 = 0.5 with C = 50 seed 1, which diverged at step 4.
func pageOutcomes(i int, p sweeps.Point) (*training.Result, string) {
	switch {
	case p.Beta1 == 0.5 && p.C == 200 && p.Seed == 2:
		return nil, "CUDA error: device lost " + hostile
	case p.Beta1 == 0.5 && p.C == 50 && p.Seed == 1:
		return &training.Result{Status: status.Diverged, DivergedAt: 4, Steps: 4}, ""
	}
	return curveResult(10, 3+p.C/1000+float64(p.Seed)/100), ""
}

func newTestServer(t testing.TB, store blob.Store, opt Options) *httptest.Server {
	t.Helper()
	opt.Store = store
	s, err := New(opt)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return ts
}

func get(t testing.TB, c *http.Client, url string) (int, http.Header, string) {
	t.Helper()
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

func newDir(t testing.TB) *blob.Dir {
	t.Helper()
	d, err := blob.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// A finished sweep's page from the store alone: its list line, its trials with their
// states and losses, the failure with its reason, the table (mean ± sd, the paired-test
// bold), its heat map and plots, every download; all of it escaped.
func TestSweepPage(t *testing.T) {
	store := newDir(t)
	id, trials := fixture(t, store, pageManifest, pageOutcomes)
	// the first trial needed three attempts: its record is read into the index
	if err := store.Put(context.Background(), keys.TrialAttempts(trials[0].ID), []byte(`{"attempts":3}`)); err != nil {
		t.Fatal(err)
	}
	m, _ := sweeps.Parse([]byte(pageManifest))
	if _, err := report.Build(context.Background(), store, m, report.Options{SweepID: id}); err != nil {
		t.Fatal(err)
	}
	ts := newTestServer(t, store, Options{})

	code, _, list := get(t, nil, ts.URL+"/")
	if code != 200 || !strings.Contains(list, `href="/sweeps/`+id+`"`) || !strings.Contains(list, ">pagetest<") {
		t.Fatalf("list %d:\n%s", code, list)
	}
	if !strings.Contains(list, "finished") || !strings.Contains(list, `<progress value="16" max="16">`) {
		t.Errorf("list does not say every trial of 16 has an outcome:\n%s", list)
	}

	code, hdr, page := get(t, nil, ts.URL+"/sweeps/"+id)
	if code != 200 {
		t.Fatalf("sweep page %d:\n%s", code, page)
	}
	if csp := hdr.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") {
		t.Errorf("Content-Security-Policy %q", csp)
	}
	if strings.Contains(page, hostile) || strings.Contains(page, "<script>alert") {
		t.Error("the page holds the manifest's markup unescaped")
	}
	if !strings.Contains(page, "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;") {
		t.Error("the table's title is not on the page, escaped")
	}
	// every trial is a row; the failed one with its reason, the diverged one with its step
	if n := strings.Count(page, `<tr data-trial="`); n != len(trials) {
		t.Errorf("%d trial rows, want %d", n, len(trials))
	}
	for _, want := range []string{"16/16 trials", ">14 completed<", ">1 diverged<", ">1 failed<", "diverged (step 4)",
		"CUDA error: device lost &lt;script&gt;", `<section id="failures">`} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	// the losses of a completed trial at each iterate, as its result has them
	tr := trials[0]
	res := curveResult(10, 3+tr.Points[0].C/1000+float64(tr.Points[0].Seed)/100)
	row := rowOf(t, page, tr.ID)
	if !strings.Contains(row, `<td class="num attempts">3</td>`) {
		t.Errorf("row of %s does not show its 3 attempts:\n%s", tr.ID, row)
	}
	if other := rowOf(t, page, trials[1].ID); !strings.Contains(other, `<td class="num attempts"></td>`) {
		t.Errorf("a trial trained in one attempt shows a count:\n%s", other)
	}
	for _, it := range []string{"x", "y", "ewa_x", "ewa_y"} {
		want := fmt.Sprintf(`data-iterate="%s">%s<`, it, strconv.FormatFloat(res.Val[it], 'f', 4, 64))
		if !strings.Contains(row, want) {
			t.Errorf("row of %s lacks %s:\n%s", tr.ID, want, row)
		}
	}
	// the report's table, read back from its Markdown: the same cells as its JSON
	var tj struct {
		Cells []struct {
			Text string `json:"text"`
			Best bool   `json:"best"`
		} `json:"cells"`
	}
	b, err := store.Get(context.Background(), keys.Table("sweeps/pagetest", "c_page", "json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &tj); err != nil {
		t.Fatal(err)
	}
	for _, c := range tj.Cells {
		// the Markdown adds a note to a cell of fewer seeds: "104.7 (n=1, 1 diverged)"
		want := "<td>" + htmlText(c.Text)
		if c.Best {
			want = "<td><strong>" + htmlText(c.Text) + "</strong>"
		}
		if !strings.Contains(page, want) {
			t.Errorf("table cell %q (best %v) not on the page as %s", c.Text, c.Best, want)
		}
	}
	// downloads: every table format and every plot format, each served
	for _, f := range []string{"tables/c_page.md", "tables/c_page.csv", "tables/c_page.tex", "tables/c_page.json",
		"plots/c_page-heatmap.svg", "plots/c_page-heatmap.png", "plots/curves.svg", "plots/curves.png"} {
		link := regexp.MustCompile(`"(/sweeps/` + id + `/files/` + regexp.QuoteMeta(f) + `\?v=[^"&]*)(&amp;download=1)?"`).FindStringSubmatch(page)
		if link == nil {
			t.Errorf("page has no link to %s", f)
			continue
		}
		code, hdr, body := get(t, nil, ts.URL+strings.ReplaceAll(link[1], "&amp;", "&"))
		want, _ := store.Get(context.Background(), "sweeps/pagetest/"+f)
		if code != 200 || body != string(want) || !strings.Contains(hdr.Get("Content-Security-Policy"), "sandbox") {
			t.Errorf("%s: %d, %d bytes (want %d), CSP %q", f, code, len(body), len(want), hdr.Get("Content-Security-Policy"))
		}
	}
}

// rowOf is the trial table's row of a trial.
func rowOf(t *testing.T, page, id string) string {
	t.Helper()
	i := strings.Index(page, `<tr data-trial="`+id+`"`)
	if i < 0 {
		t.Fatalf("no row of %s", id)
	}
	j := strings.Index(page[i:], "</tr>")
	return page[i : i+j]
}

// htmlText is text as html/template writes it.
func htmlText(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;").Replace(s)
}

// gridManifest is 6 learning rates × 4 C × 5 seeds = 120 trials.
const gridManifest = `name: gridtest
model_config: {arch: llama, vocab: 257, dim: 32, layers: 2, heads: 2, context: 32, hidden: 64, batch: 4}
data: {default: byte}
batch_tokens: 128
steps: 10
eval_every: 2
seeds: [1, 2, 3, 4, 5]
optimizers:
  - name: sfadamw
    lr: [1e-3, 2e-3, 3e-3, 4e-3, 5e-3, 6e-3]
    betas: [[0.9, 0.99]]
    c: [vanilla, 20, 50, 200]
`

// The trial table is sorted, filtered and cut into pages on the server: each page holds
// the rows the whole sorted, filtered list puts there.
func TestTrialTable(t *testing.T) {
	store := newDir(t)
	failedLR := 4e-3
	id, trials := fixture(t, store, gridManifest, func(i int, p sweeps.Point) (*training.Result, string) {
		if p.LR == failedLR && p.Seed == 3 {
			return nil, "out of memory"
		}
		// a loss that is not monotone in the trial order
		return curveResult(10, 3+float64((i*37)%101)/100), ""
	})
	ts := newTestServer(t, store, Options{})
	rowIDs := func(page string) []string {
		var ids []string
		for _, m := range regexp.MustCompile(`<tr data-trial="([0-9a-f]+)"`).FindAllStringSubmatch(page, -1) {
			ids = append(ids, m[1])
		}
		return ids
	}
	loss := map[string]float64{}
	for i, tr := range trials {
		if tr.Points[0].LR == failedLR && tr.Points[0].Seed == 3 {
			continue
		}
		loss[tr.ID] = curveResult(10, 3+float64((i*37)%101)/100).Val["x"]
	}

	// sorted by loss over all pages: the concatenation is the whole list in order, failed last
	var all []string
	for p := 1; p <= 3; p++ {
		_, _, page := get(t, nil, fmt.Sprintf("%s/sweeps/%s?sort=loss&page=%d", ts.URL, id, p))
		if !strings.Contains(page, fmt.Sprintf("page %d of 3 · 120 trials", p)) {
			t.Errorf("page %d does not say so", p)
		}
		all = append(all, rowIDs(page)...)
	}
	if len(all) != 120 {
		t.Fatalf("%d rows over 3 pages, want 120", len(all))
	}
	for i := 1; i < len(all); i++ {
		a, aok := loss[all[i-1]]
		b, bok := loss[all[i]]
		if (aok && bok && a > b) || (!aok && bok) {
			t.Fatalf("row %d (%v) before row %d (%v): not sorted by loss", i-1, a, i, b)
		}
	}
	// descending: the first is the worst finished one
	_, _, page := get(t, nil, ts.URL+"/sweeps/"+id+"?sort=loss&desc=1")
	worst := all[len(all)-5] // the 4 failed rows last, whichever the direction
	if got := rowIDs(page)[0]; got != worst {
		t.Errorf("descending: first row %s (%v), want %s (%v)", got, loss[got], worst, loss[worst])
	}
	// filters: the failed ones; a text
	_, _, page = get(t, nil, ts.URL+"/sweeps/"+id+"?state=failed")
	if ids := rowIDs(page); len(ids) != 4 || !strings.Contains(page, "· 4 trials") {
		t.Errorf("state=failed: %d rows, want 4 (lr 4e-3, seed 3, each C)", len(ids))
	}
	_, _, page = get(t, nil, ts.URL+"/sweeps/"+id+"?q=lr%3D0.002+")
	if ids := rowIDs(page); len(ids) != 20 {
		t.Errorf("q=lr=0.002: %d rows, want 20", len(ids))
	}
	// Find's terms, as the manifest names the keys, each of which must hold; numbers by value
	for q, want := range map[string]int{
		"lr=0.002, c=50, seed=1": 1, "lr=2e-3": 20, "beta1=0.9": 120, "β1=0.95": 0, "c=vanilla seed=2": 6,
		"C=200,batch_tokens=128": 30, "optimizer=sfadamw state=failed": 4, "seed=3 out of memory": 4, "lr=0.0020000000000000001": 20,
		"lr=x": 0, trials[5].ID: 1, "id=" + trials[5].ID: 1,
	} {
		_, _, page := get(t, nil, ts.URL+"/sweeps/"+id+"?n=500&q="+url.QueryEscape(q))
		if ids := rowIDs(page); len(ids) != want {
			t.Errorf("Find %q: %d rows, want %d", q, len(ids), want)
		}
	}
	// a page size, and a page past the end
	_, _, page = get(t, nil, ts.URL+"/sweeps/"+id+"?n=7&page=18")
	if ids := rowIDs(page); len(ids) != 1 || !strings.Contains(page, "page 18 of 18") {
		t.Errorf("n=7 page 18: %d rows", len(ids))
	}
	_, _, page = get(t, nil, ts.URL+"/sweeps/"+id+"?page=99")
	if ids := rowIDs(page); len(ids) != 0 {
		t.Errorf("page 99: %d rows", len(ids))
	}
}

// The page serves a sweep's own tables and plots and its trials' curves, pages and objects,
// and nothing else of the store: no other key, no other sweep's output, no trial of another
// sweep, no name outside a trial's prefix.
func TestConfined(t *testing.T) {
	store := newDir(t)
	id, trials := fixture(t, store, pageManifest, pageOutcomes)
	otherID, others := fixture(t, store, gridManifest, func(int, sweeps.Point) (*training.Result, string) { return curveResult(10, 3), "" })
	ctx := context.Background()
	if err := store.Put(ctx, "secret.json", []byte(`{"key":"s3cr3t"}`)); err != nil {
		t.Fatal(err)
	}
	ts := newTestServer(t, store, Options{})
	base := ts.URL + "/sweeps/" + id
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	own := "/trials/" + trials[0].ID
	refused(t, c, base, []string{
		"/files/tables/../../../secret.json",
		"/files/tables/..%2f..%2f..%2fsecret.json",
		"/files/tables/%2e%2e%2fowner.json",
		"/files/tables/owner.json",
		"/files/../../trials/" + trials[0].ID + "/config.json",
		"/files/checkpoints/step-00000002.json",
		"/files/plots/.svg",
		"/files/tables/c_page.md%00.png",
		"/files/tables/gridtest.json",
		"/../../secret.json",
		"/files/trials/config.json",
		// trials: another sweep's, an ID that is not one, a name outside the trial's prefix
		"/trials/" + others[0].ID,
		"/trials/" + others[0].ID + "/files/config.json",
		"/trials/" + others[0].ID + "/live",
		"/trials/0123456789abcdef",
		"/trials/" + strings.ToUpper(trials[0].ID),
		"/trials/..%2f..%2fsecret.json",
		own + "/files/..%2f..%2f..%2fsecret.json",
		own + "/files/../../../secret.json",
		own + "/files/%2e%2e/%2e%2e/%2e%2e/secret.json",
		own + "/files/",
		own + "/files/nothing.json",
		own + "/files/config.json%00",
	})
	if code, _, _ := get(t, nil, base+own); code != 200 {
		t.Errorf("the sweep's own trial: %d", code)
	}
	// a sweep ID that is not one, or not in the store
	for _, path := range []string{"/sweeps/..%2fsecret.json", "/sweeps/sweep-x-0000000g", "/sweeps/sweep-nope-00000000", "/sweeps/" + id + "x"} {
		if code, _, body := get(t, c, ts.URL+path); code != 404 {
			t.Errorf("%s: %d %q", path, code, body)
		}
	}
	// curves: this sweep's trials only
	_, _, body := get(t, nil, base+"/curves?trial="+trials[0].ID+"&trial="+others[0].ID+"&trial=../../secret")
	var got struct{ Trials []curve }
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Trials) != 1 || got.Trials[0].ID != trials[0].ID || len(got.Trials[0].Points) != 5 {
		t.Fatalf("curves of this sweep's trial and another's: %s", body)
	}
	// the other sweep's own page serves its own
	if code, _, _ := get(t, nil, ts.URL+"/sweeps/"+otherID+"/curves?trial="+others[0].ID); code != 200 {
		t.Errorf("the other sweep's curves: %d", code)
	}
}

// refused checks that none of the paths under base answers 200, the secret the confinement
// tests put in the store, or a trial config.
func refused(t *testing.T, c *http.Client, base string, paths []string) {
	t.Helper()
	for _, path := range paths {
		resp, err := c.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == 200 || strings.Contains(string(b), "s3cr3t") || strings.Contains(string(b), "model_config") {
			t.Errorf("%s: %d, %q", path, resp.StatusCode, b)
		}
	}
}

// The curves of a trial are its evaluations at every iterate, as curves.jsonl has them.
func TestCurves(t *testing.T) {
	store := newDir(t)
	id, trials := fixture(t, store, pageManifest, pageOutcomes)
	ts := newTestServer(t, store, Options{})
	tr := trials[2]
	want := curveResult(10, 3+tr.Points[0].C/1000+float64(tr.Points[0].Seed)/100)
	_, _, body := get(t, nil, ts.URL+"/sweeps/"+id+"/curves?trial="+tr.ID)
	var got struct{ Trials []curve }
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	c := got.Trials[0]
	if c.State != "completed" || c.Steps != 10 || len(c.Points) != len(want.Curves) || strings.Join(c.Iters, ",") != "x,y,ewa_x,ewa_y" {
		t.Fatalf("curve %+v", c)
	}
	for i, p := range c.Points {
		w := want.Curves[i]
		if p.Step != w.Step {
			t.Errorf("point %d: step %d, want %d", i, p.Step, w.Step)
		}
		for it, v := range w.Val {
			if p.Val[it] == nil || *p.Val[it] != v {
				t.Errorf("point %d %s: %v, want %v", i, it, p.Val[it], v)
			}
		}
	}
}

// With a token, nothing is served without it; a page opened with ?token= sets a cookie
// and drops the token from the address. Beyond loopback, the page will not start
// without a token.
func TestToken(t *testing.T) {
	store := newDir(t)
	id, _ := fixture(t, store, pageManifest, pageOutcomes)
	const tok = "t0ken-abc"
	ts := newTestServer(t, store, Options{Token: tok})
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, path := range []string{"/", "/sweeps/" + id, "/sweeps/" + id + "/files/tables/c_page.md", "/assets/app.js", "/?token=wrong"} {
		if code, _, body := get(t, c, ts.URL+path); code != 401 || strings.Contains(body, "pagetest") {
			t.Errorf("%s without the token: %d", path, code)
		}
	}
	req, _ := http.NewRequest("GET", ts.URL+"/sweeps/"+id, nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	if resp, err := c.Do(req); err != nil || resp.StatusCode != 200 {
		t.Errorf("with the bearer token: %v %v", resp.StatusCode, err)
	}
	resp, err := c.Get(ts.URL + "/sweeps/" + id + "?sort=lr&token=" + tok)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusSeeOther || strings.Contains(loc, tok) || !strings.Contains(loc, "sort=lr") {
		t.Fatalf("?token=: %d to %q", resp.StatusCode, loc)
	}
	var cookie *http.Cookie
	for _, ck := range resp.Cookies() {
		if ck.Name == tokenCookie {
			cookie = ck
		}
	}
	if cookie == nil || !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode {
		t.Fatalf("cookie %+v", cookie)
	}
	req, _ = http.NewRequest("GET", ts.URL+loc, nil)
	req.AddCookie(cookie)
	if resp, err := c.Do(req); err != nil || resp.StatusCode != 200 {
		t.Errorf("with the cookie: %v %v", resp.StatusCode, err)
	}

	open, err := New(Options{Store: store})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := Listen(context.Background(), "0.0.0.0:0", open); err == nil || !strings.Contains(err.Error(), "token") {
		t.Errorf("listening on every interface without a token: %v", err)
	}
	u, stop, err := Listen(context.Background(), "127.0.0.1:0", open)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	if code, _, _ := get(t, nil, u); code != 200 {
		t.Errorf("loopback without a token: %d", code)
	}
}

// A running program's refused metrics lines show on its row, beside a retry's failure.
func TestRowShowsRefusedLines(t *testing.T) {
	s := &Server{}
	r := &row{Summary: trial.Summary{ID: "abc", Status: status.Missing}}
	live := map[string]sweepclient.TrialState{"abc": {ID: "abc", State: sweepclient.TrialTraining, LastFailure: "lost the device", Refused: 2, RefusedFirst: "line 1: not a JSON object: x"}}
	s.state(&sweepData{ID: "sweep-x"}, r, live)
	if r.Error != "lost the device; 2 metrics lines refused, the first line 1: not a JSON object: x" {
		t.Errorf("row error %q", r.Error)
	}
}

// programManifest is a program trainer's grid of two parameters, one a string that is
// hostile markup, with no optimizer grid.
const programManifest = `name: programpage
trainer: {name: my-trainer, version: "3"}
parameters:
  dropout: [0.0, 0.1]
  model: [small, '` + hostile + `']
steps: 10
seeds: [1]
`

// A program sweep's page: a column for each trainer parameter and named metric, with
// the trial's values (the engine's lr, β and C columns, which it has none of, are not
// shown); it sorts by a parameter and a metric, and the text filter finds a value.
func TestProgramTrialColumns(t *testing.T) {
	store := newDir(t)
	id, trials := fixture(t, store, programManifest, func(i int, p sweeps.Point) (*training.Result, string) {
		r := curveResult(10, 3)
		r.Metrics = map[string]float64{"val_ppl": 20 + p.Params["dropout"].(float64)*100}
		if p.Params["model"] == "small" {
			r.Metrics["val_ppl"] += 1
		}
		return r, ""
	})
	if len(trials) != 4 {
		t.Fatalf("%d trials, want 4", len(trials))
	}
	ts := newTestServer(t, store, Options{})
	_, _, page := get(t, nil, ts.URL+"/sweeps/"+id)
	head := page[strings.Index(page, `id="trial-table"`):strings.Index(page, "<tbody>")]
	for _, col := range []string{">dropout</a></th>", ">model</a></th>", ">val_ppl</a></th>", ">seed</a></th>"} {
		if !strings.Contains(head, col) {
			t.Errorf("the trial table has no column %q:\n%s", col, head)
		}
	}
	for _, col := range []string{"<th>optimizer</th>", ">β1</a>", ">lr</a>"} {
		if strings.Contains(head, col) {
			t.Errorf("a program sweep without an optimizer grid shows the engine's column %q", col)
		}
	}
	if strings.Contains(page, hostile) {
		t.Error("a parameter's markup is on the page unescaped")
	}
	// rows, in the order a sort gives: the first data row's cells
	firstRow := func(query string) string {
		t.Helper()
		_, _, p := get(t, nil, ts.URL+"/sweeps/"+id+query)
		body := p[strings.Index(p, "<tbody>"):]
		return body[:strings.Index(body, "</tr>")]
	}
	if r := firstRow("?sort=p:dropout&desc=1"); !strings.Contains(r, `<td class="num param">0.1</td>`) {
		t.Errorf("sorted by dropout, descending, the first row is not dropout 0.1:\n%s", r)
	}
	if r := firstRow("?sort=m:val_ppl"); !strings.Contains(r, `<td class="num metric">20</td>`) || strings.Contains(r, "small") {
		t.Errorf("sorted by val_ppl, the first row is not the one of 20 (dropout 0, the other model):\n%s", r)
	}
	if r := firstRow("?sort=m:val_ppl&desc=1"); !strings.Contains(r, `<td class="num metric">31</td>`) || !strings.Contains(r, "small") {
		t.Errorf("sorted by val_ppl, descending, the first row is not the one of 31:\n%s", r)
	}
	_, _, found := get(t, nil, ts.URL+"/sweeps/"+id+"?q=model%3Dsmall")
	if !strings.Contains(found, "· 2 trials") {
		t.Errorf("the filter model=small does not find the 2 trials of that model")
	}
	if !strings.Contains(page, "my-trainer dropout=0.1 model=small seed 1") {
		t.Error("a program trial's label is not its trainer and parameters")
	}
}
