package activities

import (
	"context"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"go.temporal.io/sdk/temporal"

	"github.com/sfsweep/sfsweep/internal/blob"
	"github.com/sfsweep/sfsweep/training"
	"github.com/sfsweep/sfsweep/workflows"
)

// A paged plan is the inline plan cut into pages in the store: 2,002 trials (two C values
// by 1,001 seeds) make three pages, which ReadPlan returns in order.
func TestPlanPaged(t *testing.T) {
	a, env, store := setup(t)
	env.RegisterActivity(a.ReadPlan)
	ctx := context.Background()
	seeds := make([]string, 1001)
	for i := range seeds {
		seeds[i] = strconv.Itoa(i + 1)
	}
	big := strings.Replace(manifest, "seeds: [1]", "seeds: ["+strings.Join(seeds, ", ")+"]", 1)
	if err := store.Put(ctx, "sweeps/big/manifest.yaml", []byte(big)); err != nil {
		t.Fatal(err)
	}
	in := workflows.PlanInput{SweepID: "big", ManifestKey: "sweeps/big/manifest.yaml"}
	inline := execPlan(t, env, in)
	in.Paged = true
	paged := execPlan(t, env, in)
	if len(inline.Trials) != 2002 || paged.Total != 2002 || paged.Skipped != 0 || len(paged.Trials) != 0 ||
		paged.PageSize != workflows.PlanPageSize || !strings.HasPrefix(paged.Prefix, "sweeps/big/plans/") {
		t.Fatalf("inline plan of %d trials; paged plan %+v", len(inline.Trials), paged)
	}
	var read []workflows.TrialRef
	for n := 0; n*paged.PageSize < paged.Total; n++ {
		v, err := env.ExecuteActivity(workflows.ActivityReadPlan, workflows.ReadPlanInput{Prefix: paged.Prefix, Page: n})
		var page []workflows.TrialRef
		if err == nil {
			err = v.Get(&page)
		}
		if err != nil {
			t.Fatal(err)
		}
		if want := min(paged.PageSize, paged.Total-n*paged.PageSize); len(page) != want {
			t.Errorf("page %d holds %d trials, want %d", n, len(page), want)
		}
		read = append(read, page...)
	}
	if !reflect.DeepEqual(read, inline.Trials) {
		t.Error("the pages read back differ from the inline plan")
	}
	if _, err := env.ExecuteActivity(workflows.ActivityReadPlan, workflows.ReadPlanInput{Prefix: paged.Prefix, Page: 3}); !errors.Is(err, blob.ErrNotFound) && (err == nil || !strings.Contains(err.Error(), "not found")) {
		t.Errorf("a page past the end: %v", err)
	}
}

// Plan routes each trial to the training queue of its backend's device; a trial whose
// backend this build lacks (reached through the queue of older plans) is one attempt, not
// retried, with an error that names the backend and how to build it in.
func TestBackendRouting(t *testing.T) {
	_, env, store := setup(t)
	ctx := context.Background()
	cuda := strings.Replace(manifest, "name: act\n", "name: act\nbackend: cuda-tf32\n", 1)
	if cuda == manifest {
		t.Fatal("the test manifest has no name line")
	}
	if err := store.Put(ctx, "sweeps/cuda/manifest.yaml", []byte(cuda)); err != nil {
		t.Fatal(err)
	}
	for key, queue := range map[string]string{"sweeps/s/manifest.yaml": "train-cpu", "sweeps/cuda/manifest.yaml": "train-cuda"} {
		plan := execPlan(t, env, workflows.PlanInput{SweepID: "s", ManifestKey: key})
		for _, tr := range plan.Trials {
			if tr.Queue != queue {
				t.Errorf("%s: trial %s planned on queue %q, want %q", key, tr.ID, tr.Queue, queue)
			}
		}
		if key != "sweeps/cuda/manifest.yaml" {
			continue
		}
		_, err := env.ExecuteActivity(workflows.ActivityTrain, workflows.TrainInput{TrialID: plan.Trials[0].ID})
		var ae *temporal.ApplicationError
		if !errors.As(err, &ae) || !ae.NonRetryable() || ae.Type() != workflows.ErrorInvalidConfig ||
			!strings.Contains(err.Error(), `backend = "cuda-tf32": not in this build`) || !strings.Contains(err.Error(), "-tags cuda") {
			t.Errorf("Train of a cuda trial on a cpu build: %v, want a non-retryable error naming the backend and the build", err)
		}
		if keys, err := store.List(ctx, "trials/"+plan.Trials[0].ID+"/checkpoints/"); err != nil || len(keys) > 0 {
			t.Errorf("the refused trial wrote checkpoints %v (%v)", keys, err)
		}
	}
}

// A trial's queue is its backend's route: its device's for the backends every build of the
// family has, its own for an arithmetic added later (cuda-bf16-flash), which an older
// build's workers do not poll.
func TestTrainQueueRoute(t *testing.T) {
	for b, want := range map[string]string{"cpu": "train-cpu", "cuda-bf16": "train-cuda", "cuda-bf16-flash": "train-cuda-bf16-flash"} {
		cfg := training.Config{Setup: training.Setup{Backend: b}}
		if got := trainQueue(cfg); got != want {
			t.Errorf("backend %s: queue %q, want %q", b, got, want)
		}
	}
}
