package loadtest

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"google.golang.org/protobuf/proto"

	"github.com/sfsweep/sfsweep/infra/devserver"
)

// sfsweep is the command built from this tree by TestMain.
var sfsweep string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sfsweep-loadtest-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	sfsweep = filepath.Join(dir, "sfsweep")
	build := exec.Command("go", "build", "-o", sfsweep, "github.com/sfsweep/sfsweep/cmd/sfsweep")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "loadtest: build sfsweep:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// loadManifest is a sweep of n one-step trials of a minute model, one per seed.
func loadManifest(name string, n int) string {
	seeds := make([]string, n)
	for i := range seeds {
		seeds[i] = strconv.Itoa(i)
	}
	return fmt.Sprintf(`name: %s
model_config: {arch: llama, vocab: 257, dim: 8, layers: 1, heads: 2, context: 8, hidden: 8, batch: 1}
data: {default: byte, max_bytes: 100000}
batch_tokens: 8
steps: 1
eval_seqs: 1
test_seqs: 1
max_trials: 100000
seeds: [%s]
optimizers:
  - {name: sfadamw, lr: 1e-3, betas: [[0.9, 0.99]]}
tables:
  - {kind: hyperparameters, name: overhead}
`, name, strings.Join(seeds, ", "))
}

// A sweep of 2,000 one-step trials through the embedded stack of sfsweep run completes,
// every trial once, with each run of the Sweep workflow's history far below Temporal's
// limits (51,200 events): continue-as-new keeps it bounded. Reports trials per second, the
// largest input a Sweep run started with (the carried plan) and the command's peak RSS.
// SFSWEEP_LOAD_TRIALS sets another size (10000: about 10 minutes here).
func TestLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("2,000 trials through the embedded stack (-short)")
	}
	n := 2000
	if v := os.Getenv("SFSWEEP_LOAD_TRIALS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			t.Fatalf("SFSWEEP_LOAD_TRIALS=%q: want a positive count", v)
		}
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "load.yaml"), []byte(loadManifest("load", n)), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute+time.Duration(n)*100*time.Millisecond)
	defer cancel()
	start := time.Now()
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, sfsweep, "run", "-ui=false", "-slots", "4", "-window", "16", "-dir", "state", "-out", "out", "load.yaml")
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("sfsweep run: %v\n%s", err, errb.String())
	}
	el := time.Since(start)
	var rss int64
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		rss = ru.Maxrss * 1024 // kilobytes on Linux
	}
	if want := fmt.Sprintf("sweep done: %d trials, %d run now (%d completed", n, n, n); !strings.Contains(errb.String(), want) {
		t.Fatalf("sweep summary:\n%s", errb.String())
	}
	state := filepath.Join(dir, "state")
	results, _ := filepath.Glob(filepath.Join(state, "s3", "*", "trials", "*", "result.json"))
	if len(results) != n {
		t.Errorf("%d results, want %d", len(results), n)
	}
	// the histories of the Sweep workflow's runs, from the same database
	srv, err := devserver.Start(ctx, devserver.Options{DBPath: filepath.Join(state, "temporal.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	c, err := client.Dial(client.Options{HostPort: srv.HostPort(), Logger: sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler))})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	list, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
		Namespace: devserver.DefaultNamespace, Query: "WorkflowType = 'Sweep'"})
	if err != nil {
		t.Fatal(err)
	}
	runs, worst, input := 0, 0, 0
	for _, ex := range list.Executions {
		it := c.GetWorkflowHistory(ctx, ex.Execution.WorkflowId, ex.Execution.RunId, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		events := 0
		for it.HasNext() {
			ev, err := it.Next()
			if err != nil {
				t.Fatal(err)
			}
			if a := ev.GetWorkflowExecutionStartedEventAttributes(); a != nil {
				input = max(input, proto.Size(a.GetInput()))
			}
			events++
		}
		runs++
		worst = max(worst, events)
	}
	if wantRuns := (n + 499) / 500; runs < wantRuns {
		t.Errorf("%d runs of the Sweep workflow, want at least %d (continue-as-new every 500 children)", runs, wantRuns)
	}
	if worst > 10240 {
		t.Errorf("a Sweep run holds %d history events, above Temporal's warning level 10,240", worst)
	}
	if input > 2<<20 {
		t.Errorf("a Sweep run started with a %d-byte input, above Temporal's 2 MiB payload limit", input)
	}
	t.Logf("%d trials in %.1f s: %.1f trials/s; %d Sweep runs, at most %d events each, largest input %d bytes; peak RSS %.0f MiB",
		n, el.Seconds(), float64(n)/el.Seconds(), runs, worst, input, float64(rss)/(1<<20))
}
