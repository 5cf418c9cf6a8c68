package main

import (
	"bytes"
	"context"
	"fmt"
	"html"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"go.temporal.io/sdk/activity"

	"github.com/sfsweep/sfsweep/activities"
	"github.com/sfsweep/sfsweep/infra/devserver"
	"github.com/sfsweep/sfsweep/training"
	"github.com/sfsweep/sfsweep/training/backend"
	"github.com/sfsweep/sfsweep/web"
	"github.com/sfsweep/sfsweep/workflows"
)

// Environment of the browser test: where the tests must find a browser (CI sets
// requireBrowserEnv, having installed Debian's chromium), and where the screenshots of the
// page go when asked for (the README's).
const (
	requireBrowserEnv = "SFSWEEP_REQUIRE_BROWSER"
	chromiumEnv       = "SFSWEEP_CHROMIUM"
	screenshotsEnv    = "SFSWEEP_SCREENSHOTS"
)

// chromium finds the browser: $SFSWEEP_CHROMIUM, else chromium on the PATH.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{os.Getenv(chromiumEnv), "chromium", "chromium-browser", "google-chrome"} {
		if name == "" {
			continue
		}
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "no chromium on the PATH (Debian: apt-get install chromium; .ci/run installs it)"
	if os.Getenv(requireBrowserEnv) != "" {
		t.Fatal(msg + ", and " + requireBrowserEnv + " is set")
	}
	t.Skip(msg)
	return ""
}

// slowEngine is the real engine, slowed so that a person, or a browser, sees the steps go.
type slowEngine struct {
	backend.HostEngine
	delay time.Duration
}

func (s *slowEngine) Backward() error {
	time.Sleep(s.delay)
	return s.HostEngine.Backward()
}

// The sweep page of a running embedded sweep, in headless Chromium: the trials advance
// and the sweep's progress grows without a reload, a trial's failure shows with its error
// while it is retried and once it has failed, the table appears, the chart draws the
// ticked trials and its iterate toggles remove lines, and the page fits 1280×800 and a
// phone's width with no sideways scroll of the page itself.
func TestSweepPageInBrowser(t *testing.T) {
	path := chromium(t)
	ctx := serverTest(t, 4*time.Minute, "starts the embedded Temporal server, trains and drives a browser")

	var failedID string
	var mu sync.Mutex
	steps := map[string]training.Progress{}
	acts := &activities.Activities{
		Progress: func(trial string, p training.Progress) { mu.Lock(); steps[trial] = p; mu.Unlock() },
	}
	acts.WrapEngine = func(ctx context.Context, trialID string, e backend.Engine) backend.Engine {
		host := e.(backend.HostEngine)
		mu.Lock()
		defer mu.Unlock()
		if trialID == failedID {
			return &faultyEngine{HostEngine: &slowEngine{HostEngine: host, delay: 250 * time.Millisecond}, failAt: 6, failed: func() {},
				err: fmt.Errorf("CUDA error: device unavailable <b>on attempt %d</b>", activity.GetInfo(ctx).Attempt)}
		}
		return &slowEngine{HostEngine: host, delay: 250 * time.Millisecond}
	}
	// the retry's wait is the window in which the page must show the first error: wide
	// enough for the page's poll and the DOM reads on a loaded 2-core machine
	retry := workflows.TrainRetry{MaxAttempts: 2, InitialInterval: 5 * time.Second, MaximumInterval: 5 * time.Second}
	fs, run := startFaultStack(ctx, t, faultsManifest, acts, trialFlags{heartbeat: 30 * time.Second, stall: time.Minute, retry: retry}, nil)
	mu.Lock()
	failedID = fs.trialByC(t, 20).ID
	mu.Unlock()

	srv, err := web.New(web.Options{Store: fs.store, Temporal: fs.client, Namespace: devserver.DefaultNamespace, UI: "http://127.0.0.1:1",
		Poll: 400 * time.Millisecond, Steps: func(id string) (training.Progress, bool) {
			mu.Lock()
			defer mu.Unlock()
			p, ok := steps[id]
			return p, ok && p.Step < p.Steps
		}})
	if err != nil {
		t.Fatal(err)
	}
	pageURL, stop, err := web.Listen(ctx, "127.0.0.1:0", srv)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-sync", true), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 800))
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	sweepURL := strings.TrimSuffix(pageURL, "/") + "/sweeps/" + fs.sweepID
	if err := chromedp.Do(bctx, chromedp.EmulateViewport(1280, 800), chromedp.Navigate(sweepURL)); err != nil {
		t.Fatal(err)
	}

	// what the page shows, read every 100 ms from its DOM (the page is never reloaded)
	type seen struct {
		Done     string   `json:"done"`
		Training []string `json:"training"` // the progress cells of trials training
		Failures string   `json:"failures"`
		Tables   int      `json:"tables"`
		Phase    string   `json:"phase"`
		Lines    int      `json:"lines"`
	}
	const read = `(() => ({
		done: (document.getElementById("done") || {}).textContent || "",
		training: Array.from(document.querySelectorAll('tr[data-state="training"] td.progress')).map(e => e.textContent),
		failures: (document.getElementById("failures") || {}).textContent || "",
		tables: document.querySelectorAll("#tables table.paper").length,
		phase: (document.getElementById("phase") || {}).textContent || "",
		lines: document.querySelectorAll("#chart path").length,
	}))()`
	var (
		stepsSeen   = map[string]bool{}
		doneSeen    = map[string]bool{}
		retryingErr bool
		failedErr   bool
		tableSeen   bool
		last        seen
		shots       = os.Getenv(screenshotsEnv)
		shotLive    bool
	)
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		var err error
		if last, err = chromedp.Run(bctx, chromedp.Evaluate[seen](read)); err != nil {
			t.Fatal(err)
		}
		for _, s := range last.Training {
			stepsSeen[s] = true
		}
		doneSeen[last.Done] = true
		// the error, escaped: the markup of the message is text on the page
		if strings.Contains(last.Failures, "device unavailable <b>on attempt 1</b>") && strings.Contains(last.Failures, "retrying") {
			retryingErr = true
		}
		if strings.Contains(last.Failures, "device unavailable <b>on attempt 2</b>") && strings.Contains(last.Failures, "failed") {
			failedErr = true
		}
		tableSeen = tableSeen || last.Tables > 0
		// the README's picture: a trial training past its first evaluation, a failure, a table
		pastEval := slices.ContainsFunc(last.Training, func(s string) bool {
			var n, of int
			_, err := fmt.Sscanf(s, "step %d/%d", &n, &of)
			return err == nil && n > 6
		})
		if shots != "" && !shotLive && pastEval && last.Failures != "" && last.Tables > 0 {
			shotLive = true
			screenshot(t, bctx, filepath.Join(shots, "sweep_page.png"), false)
		}
		if last.Phase == "completed" && failedErr {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	var res workflows.SweepResult
	if err := run.Get(ctx, &res); err != nil {
		t.Fatal(err)
	}
	t.Logf("steps seen: %d distinct; progress seen: %v; last: %+v", len(stepsSeen), doneSeen, last)
	if len(stepsSeen) < 3 {
		t.Errorf("the page showed %d distinct training steps (%v), want the steps to advance", len(stepsSeen), stepsSeen)
	}
	if len(doneSeen) < 3 || !doneSeen["4/4 trials (100%)"] {
		t.Errorf("the sweep's progress on the page went through %v, want it to grow to 4/4", doneSeen)
	}
	if !retryingErr {
		t.Error("the failing trial's first error never showed while it was retried")
	}
	if !failedErr {
		t.Errorf("the failed trial's error never showed; failures read %q", last.Failures)
	}
	if !tableSeen {
		t.Error("no table appeared")
	}
	if last.Phase != "completed" {
		t.Errorf("phase %q, want completed", last.Phase)
	}
	// the failed trial's row says how many attempts it took, once the tables have caught up
	if err := chromedp.Do(bctx, chromedp.Poll[chromedp.Void](`(document.querySelector('tr[data-state="failed"] td.attempts') || {}).textContent === "2"`,
		chromedp.WithPollingTimeout(15*time.Second))); err != nil {
		t.Errorf("the failed trial's row never showed its 2 attempts: %v", err)
	}

	// the chart: the default trials are drawn at every iterate; unticking y removes lines
	count := chromedp.Evaluate[int](`document.querySelectorAll("#chart path").length`)
	if err := chromedp.Do(bctx, chromedp.Poll[chromedp.Void](`document.querySelectorAll("#chart path").length > 0`, chromedp.WithPollingTimeout(10*time.Second))); err != nil {
		t.Fatal(err)
	}
	lines, err := chromedp.Run(bctx, count)
	if err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(bctx, chromedp.Click(chromedp.CSS(`input.iter[value="y"]`))); err != nil {
		t.Fatal(err)
	}
	fewer, err := chromedp.Run(bctx, count)
	if err != nil {
		t.Fatal(err)
	}
	if lines == 0 || fewer >= lines {
		t.Errorf("chart: %d lines, %d once y is unticked", lines, fewer)
	}

	// a completed trial's page, from its link in the table: its curves drawn, its config, the
	// loader of its final model
	var done string
	for _, tr := range fs.trials {
		if tr.ID != failedID {
			done = tr.ID
			break
		}
	}
	if err := chromedp.Do(bctx, chromedp.Click(chromedp.CSS(`#trial-table a[href$="/trials/`+done+`"]`)),
		chromedp.WaitVisible(chromedp.CSS("#config")),
		chromedp.Poll[chromedp.Void](`document.querySelectorAll("#chart path").length > 0`, chromedp.WithPollingTimeout(10*time.Second))); err != nil {
		t.Fatalf("the trial page of %s: %v", done, err)
	}
	if got, err := chromedp.Run(bctx, chromedp.Evaluate[string](`[location.pathname, (document.querySelector("#torch-loader") || {}).textContent || "",
		document.querySelectorAll("table.settings tbody tr").length].join("|")`)); err != nil ||
		!strings.HasSuffix(strings.Split(got, "|")[0], "/trials/"+done) || !strings.Contains(got, "torch_llama.from_files(") {
		t.Errorf("the trial page: %q, %v", got, err)
	}
	if shots != "" {
		screenshot(t, bctx, filepath.Join(shots, "trial_page.png"), true)
	}

	// no credential of the store reaches any page, fragment or file the page links to
	creds := fs.gw.StoreConfig("").Credentials
	if creds == nil || creds.SecretAccessKey == "" {
		t.Fatal("the embedded gateway has no credentials to look for")
	}
	crawled := crawlPage(t, strings.TrimSuffix(pageURL, "/"), []string{"/", "/live", "/sweeps/" + fs.sweepID, "/sweeps/" + fs.sweepID + "/live",
		"/sweeps/" + fs.sweepID + "/results", "/sweeps/" + fs.sweepID + "/curves?trial=" + failedID + "&trial=" + fs.trials[0].ID},
		func(url, body string) {
			if strings.Contains(body, creds.SecretAccessKey) || strings.Contains(body, creds.AccessKeyID) {
				t.Errorf("%s holds the store's credentials", url)
			}
		})
	if crawled < 12 {
		t.Errorf("crawled %d addresses, want the pages and every table and plot file", crawled)
	}

	// usable at 1280×800 and at a phone's width: the page itself never scrolls sideways
	for _, size := range [][2]int64{{1280, 800}, {390, 844}} {
		if err := chromedp.Do(bctx, chromedp.EmulateViewport(size[0], size[1]), chromedp.Navigate(sweepURL),
			chromedp.WaitVisible(chromedp.CSS("#trial-table")),
			chromedp.Poll[chromedp.Void](`document.querySelectorAll("#chart path").length > 0`, chromedp.WithPollingTimeout(10*time.Second))); err != nil {
			t.Fatal(err)
		}
		over, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > window.innerWidth + 1`))
		if err != nil {
			t.Fatal(err)
		}
		if over {
			t.Errorf("at %d×%d the page scrolls sideways", size[0], size[1])
		}
		if shots != "" {
			screenshot(t, bctx, filepath.Join(shots, map[int64]string{1280: "sweep_page_full.png", 390: "sweep_page_narrow.png"}[size[0]]), true)
		}
	}
}

// screenshot writes what the browser shows, the viewport or the whole page, as PNG.
func screenshot(t *testing.T, ctx context.Context, file string, full bool) {
	t.Helper()
	shot := chromedp.CaptureScreenshot()
	if full {
		shot = chromedp.FullScreenshot(100)
	}
	b, err := chromedp.Run(ctx, shot)
	if err == nil {
		err = os.WriteFile(file, b, 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// crawlPage fetches each address under base and every same-site address its pages link
// to (href, src, data-live-src), calling check with each body; it returns how many it
// fetched. An address that does not answer 200 fails the test.
func crawlPage(t *testing.T, base string, start []string, check func(url, body string)) int {
	t.Helper()
	link := regexp.MustCompile(`(?:href|src|data-live-src)="(/[^"]*)"`)
	seen := map[string]bool{}
	queue := slices.Clone(start)
	for len(queue) > 0 {
		u := html.UnescapeString(queue[0])
		queue = queue[1:]
		if seen[u] {
			continue
		}
		seen[u] = true
		resp, err := http.Get(base + u)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 200 {
			t.Errorf("%s: %d %.200s", u, resp.StatusCode, b)
			continue
		}
		check(u, string(b))
		if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
			for _, m := range link.FindAllStringSubmatch(string(b), -1) {
				queue = append(queue, m[1])
			}
		}
	}
	return len(seen)
}

// serveState runs sfsweep serve on run's state directory, with the arguments more: get
// fetches a path of its page (a status other than 200 fails the test), stop ends it,
// checking it exited 0, and returns what it printed.
func serveState(ctx context.Context, t *testing.T, state string, more ...string) (get func(path string) string, stop func() string) {
	t.Helper()
	sctx, cancel := context.WithCancel(ctx)
	var stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- runMain(sctx, append([]string{"serve", "-dir", state, "-page", "127.0.0.1:0"}, more...), io.Discard, &stderr)
	}()
	var addr string
	for deadline := time.Now().Add(30 * time.Second); addr == "" && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if m := regexp.MustCompile(`Sweep page: (http://\S+)`).FindStringSubmatch(stderr.String()); m != nil {
			addr = strings.TrimSuffix(m[1], "/")
		}
	}
	if addr == "" {
		cancel()
		t.Fatalf("serve printed no address: %s", stderr.String())
	}
	get = func(path string) string {
		t.Helper()
		resp, err := http.Get(addr + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", path, resp.StatusCode, b)
		}
		return string(b)
	}
	return get, func() string {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("serve exited %d: %s", code, stderr.String())
		}
		return stderr.String()
	}
}

// sfsweep run prints the page's address, and sfsweep serve serves a finished sweep from
// run's state directory alone: its list, its page with every trial's outcome, and its
// table; serve refuses to listen beyond loopback without a token, and -page off.
func TestServeFinishedSweep(t *testing.T) {
	ctx := serverTest(t, 4*time.Minute, "starts the embedded Temporal server and trains")
	dir := t.TempDir()
	manifest := filepath.Join(dir, "e2e.yaml")
	if err := os.WriteFile(manifest, []byte(e2eManifest), 0o644); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, "state")
	log := runCommand(t, state, filepath.Join(dir, "out"), manifest)
	if !regexp.MustCompile(`Sweep page: http://127\.0\.0\.1:\d+/\n`).MatchString(log) || !strings.Contains(log, "sfsweep serve -dir "+state) {
		t.Errorf("run printed no page address:\n%s", log)
	}

	get, stop := serveState(ctx, t, state)
	list := get("/")
	m := regexp.MustCompile(`href="/sweeps/(sweep-e2e-[0-9a-f]{8})"`).FindStringSubmatch(list)
	if m == nil || !strings.Contains(list, "finished") {
		t.Fatalf("list:\n%s", list)
	}
	page := get("/sweeps/" + m[1])
	for _, want := range []string{"3/3 trials (100%)", ">2 completed<", ">1 diverged<", "diverged (step ", "end-to-end sweep", "Decay probe"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	stop()

	// serve by the sweep's name prints the address of its page
	get, stop = serveState(ctx, t, state, "e2e")
	if page := get("/sweeps/" + m[1]); !strings.Contains(page, "3/3 trials (100%)") {
		t.Errorf("the page of %s:\n%s", m[1], page)
	}
	if printed := stop(); !regexp.MustCompile(`Sweep page of e2e: http://127\.0\.0\.1:\d+/sweeps/` + m[1] + "\n").MatchString(printed) {
		t.Errorf("serve e2e printed no address of its page:\n%s", printed)
	}
	var stderr bytes.Buffer
	if code := runMain(ctx, []string{"serve", "-dir", state, "-page", "127.0.0.1:0", "nosuch"}, io.Discard, &stderr); code == 0 || !strings.Contains(stderr.String(), "nosuch: -dir "+state+" has no sweep of that name") {
		t.Errorf("serve of an unknown sweep: exit %d, %s", code, stderr.String())
	}

	// bad addresses are refused, naming the flag, the value and why, before anything starts
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "-dir", state, "-page", "0.0.0.0:0"}, `-page = "0.0.0.0:0": beyond loopback the page needs a token`},
		{[]string{"serve", "-dir", state, "-page", "off"}, "-page = off: serve has nothing else to do"},
		{[]string{"serve", "-dir", state, "-page", "nonsense"}, `-page = "nonsense": address nonsense: missing port in address`},
		{[]string{"run", "-dir", state, "-page", "0.0.0.0:0", manifest}, `-page = "0.0.0.0:0": beyond loopback`},
	} {
		var out syncBuffer
		if code := runMain(ctx, c.args, io.Discard, &out); code != 2 || !strings.Contains(out.String(), c.want) {
			t.Errorf("%v: exit %d, %s; want 2 and %q", c.args, code, out.String(), c.want)
		}
	}
}
