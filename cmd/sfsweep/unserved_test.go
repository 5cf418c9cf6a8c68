package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/sfsweep/sfsweep/sweeps"
	"github.com/sfsweep/sfsweep/training"
	"github.com/sfsweep/sfsweep/training/backend"
)

// noPollers is a Temporal client whose task queues have no pollers; it records the queue
// asked about.
type noPollers struct {
	client.Client
	queue string
}

func (c *noPollers) DescribeTaskQueue(_ context.Context, queue string, _ enumspb.TaskQueueType) (*workflowservice.DescribeTaskQueueResponse, error) {
	c.queue = queue
	return &workflowservice.DescribeTaskQueueResponse{}, nil
}

// The warning for a sweep no worker serves names the backend its backend and precision
// resolve to, as its trials will run it; no backend is the default's.
func TestBackendUnservedResolvesPrecision(t *testing.T) {
	for _, tc := range []struct {
		backend   string
		precision backend.Precision
		want      string
		queue     string
	}{
		{"cuda", backend.BF16, "backend cuda-bf16 now", "train-cuda"},
		{"cuda-tf32", backend.FP32, "backend cuda now", "train-cuda"},
		{"", "", "backend cpu now", "train-cpu"},
	} {
		c := &noPollers{}
		var stderr bytes.Buffer
		m := &sweeps.Manifest{Setup: training.Setup{Backend: tc.backend, Precision: tc.precision}}
		if err := warnUnserved(context.Background(), c, m, &stderr); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(stderr.String(), tc.want) || c.queue != tc.queue {
			t.Errorf("backend %q, precision %q: asked queue %s, warned %q; want %s and %q", tc.backend, tc.precision, c.queue, stderr.String(), tc.queue, tc.want)
		}
	}
}
