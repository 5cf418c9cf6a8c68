package main

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	"github.com/sfsweep/sfsweep/infra/devserver"
)

// A sweep of 2,000 one-step trials through the embedded stack completes, every trial once,
// with each run of the Sweep workflow's history far below Temporal's limits (51,200 events):
// continue-as-new keeps it bounded. Reports trials per second and the process's peak RSS.
func TestLoad2000(t *testing.T) {
	if testing.Short() {
		t.Skip("2,000 trials through the embedded stack (-short)")
	}
	const n = 2000
	dir := t.TempDir()
	manifest := filepath.Join(dir, "load.yaml")
	os.WriteFile(manifest, []byte(overheadManifest("load", n, 0)), 0o644)
	state := filepath.Join(dir, "state")
	start := time.Now()
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	args := []string{"run", "-ui=false", "-slots", "4", "-window", "16", "-dir", state, "-out", filepath.Join(dir, "out"), manifest}
	if code := runMain(ctx, args, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	el := time.Since(start)
	if !strings.Contains(errb.String(), "sweep done: 2000 trials, 2000 run now (2000 completed") {
		t.Fatalf("sweep summary:\n%s", errb.String())
	}
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
	runs, worst := 0, 0
	for _, ex := range list.Executions {
		it := c.GetWorkflowHistory(ctx, ex.Execution.WorkflowId, ex.Execution.RunId, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		events := 0
		for it.HasNext() {
			if _, err := it.Next(); err != nil {
				t.Fatal(err)
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
	t.Logf("%d trials in %.1f s: %.1f trials/s; %d Sweep runs, at most %d events each; peak RSS %.0f MiB",
		n, el.Seconds(), n/el.Seconds(), runs, worst, float64(peakRSS())/(1<<20))
}
