package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/sfsweep/sfsweep/internal/blob"
	"github.com/sfsweep/sfsweep/internal/keys"
	"github.com/sfsweep/sfsweep/internal/status"
	"github.com/sfsweep/sfsweep/sweeps"
	"github.com/sfsweep/sfsweep/training"
	"github.com/sfsweep/sfsweep/trial"
	"github.com/sfsweep/sfsweep/workflows"
)

// recordedTrainAttempt is trainAttempt on a history that sfsweep run -record-histories wrote.
func recordedTrainAttempt(t *testing.T, path string) (int, string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var h historypb.History
	if err := protojson.Unmarshal(b, &h); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return attemptOf(t, h.Events, path)
}

// resultFile is a result.json as found on disk.
type resultFile struct {
	mtime time.Time
	data  []byte
}

func statResult(t *testing.T, trialDir string) (resultFile, bool) {
	t.Helper()
	p := filepath.Join(trialDir, keys.ResultName)
	fi, err := os.Stat(p)
	if err != nil {
		return resultFile{}, false
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return resultFile{fi.ModTime(), b}, true
}

// onlyTrial expands a one-trial manifest.
func onlyTrial(t *testing.T, src string) sweeps.Trial {
	t.Helper()
	m, err := sweeps.Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	trials, err := m.Expand()
	if err != nil || len(trials) != 1 {
		t.Fatalf("%d trials (%v), want 1", len(trials), err)
	}
	return trials[0]
}

// trainDirect trains a trial with training.Run alone, uninterrupted, into a local store.
func trainDirect(ctx context.Context, t *testing.T, tr sweeps.Trial, dir, cache string) (blob.Store, *training.Result) {
	t.Helper()
	store, err := blob.NewDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	ds, err := training.OpenData(ctx, tr.Config.Data, store, cache)
	if err != nil {
		t.Fatal(err)
	}
	b, err := training.NewBatches(tr.Config, ds)
	if err != nil {
		t.Fatal(err)
	}
	res, err := training.Run(ctx, tr.Config, training.Options{Store: store, Prefix: keys.Trial(tr.ID), Record: trial.Recorder{Store: store, Prefix: keys.Trial(tr.ID)}, Data: b})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != status.Completed {
		t.Fatalf("reference run: status %q", res.Status)
	}
	return store, res
}

// sameResult fails unless two results agree bit for bit in everything a run computes: the
// final parameters' digest, every curve point, the validation and test losses. Only the
// wall time and the resume step may differ. Go writes a float64 in JSON as the shortest
// decimal that reads back to the same bits, so equal JSON is equal bits.
func sameResult(t *testing.T, got, want *training.Result) {
	t.Helper()
	if got.ParamsHash != want.ParamsHash {
		t.Errorf("params_sha256 %s, the uninterrupted run's is %s", got.ParamsHash, want.ParamsHash)
	}
	g, w := *got, *want
	g.Seconds, w.Seconds, g.Resumed, w.Resumed = 0, 0, 0, 0
	gb, _ := json.MarshalIndent(g, "", " ")
	wb, _ := json.MarshalIndent(w, "", " ")
	if !bytes.Equal(gb, wb) {
		t.Errorf("result differs from the uninterrupted run's:\n%s", firstDiff(gb, wb))
	}
}

// firstDiff shows the first differing line of two texts.
func firstDiff(a, b []byte) string {
	al, bl := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := range min(len(al), len(bl)) {
		if al[i] != bl[i] {
			return fmt.Sprintf("line %d: got %s\n         want %s", i+1, al[i], bl[i])
		}
	}
	return fmt.Sprintf("%d lines, want %d", len(al), len(bl))
}

func readResult(t *testing.T, path string) *training.Result {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r training.Result
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return &r
}

// lastCurveStep is the step of the last evaluation in a trial's curves.jsonl, 0 if none.
func lastCurveStep(trialDir string) int {
	b, err := os.ReadFile(filepath.Join(trialDir, keys.CurvesName))
	if err != nil {
		return 0
	}
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	var p training.CurvePoint
	if json.Unmarshal(lines[len(lines)-1], &p) != nil {
		return 0
	}
	return p.Step
}

// trainAttempt returns the attempt on which a trial's Train activity completed and the
// failure of the attempt before it, from the trial workflow's history.
func trainAttempt(ctx context.Context, t *testing.T, c client.Client, workflowID string) (int, string) {
	t.Helper()
	var events []*historypb.HistoryEvent
	it := c.GetWorkflowHistory(ctx, workflowID, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatalf("history of %s: %v", workflowID, err)
		}
		events = append(events, ev)
	}
	return attemptOf(t, events, workflowID)
}

// attemptOf finds the Train activity's started event in a history. Temporal records the
// started event of the attempt that ended the activity only, with its attempt number and
// the failure of the attempt before.
func attemptOf(t *testing.T, events []*historypb.HistoryEvent, what string) (int, string) {
	t.Helper()
	scheduled := map[int64]string{}
	for _, ev := range events {
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil {
			scheduled[ev.GetEventId()] = a.GetActivityType().GetName()
		}
		if a := ev.GetActivityTaskStartedEventAttributes(); a != nil && scheduled[a.GetScheduledEventId()] == workflows.ActivityTrain {
			cause := "none"
			if f := a.GetLastFailure(); f != nil {
				cause = f.GetMessage()
			}
			return int(a.GetAttempt()), cause
		}
	}
	t.Fatalf("no Train activity started in %s", what)
	return 0, ""
}
