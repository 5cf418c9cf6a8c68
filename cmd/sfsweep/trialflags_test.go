package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/sfsweep/sfsweep/workflows"
)

// Heartbeat and retry flags out of range are refused, naming the flag and the value, by
// run and submit alike, before anything starts.
func TestTrialFlags(t *testing.T) {
	for _, c := range []struct{ args, want string }{
		{"-window 0", "-window = 0: must be ≥ 1"},
		{"-heartbeat 0s", "-heartbeat = 0s: must be > 0"},
		{"-heartbeat -3s", "-heartbeat = -3s: must be > 0"},
		{"-attempts 0", "-attempts = 0: must be ≥ 1"},
		{"-stall-timeout 0s", "-stall-timeout = 0s: must be > 0"},
		{"-retry-initial 0s", "-retry-initial = 0s: must be > 0"},
		{"-retry-initial 2m", "-retry-max = 1m0s: must be ≥ -retry-initial (2m0s)"},
		{"-retry-max 10ms", "-retry-max = 10ms: must be ≥ -retry-initial (1s)"},
	} {
		for _, cmd := range []string{"run", "submit"} {
			var out, errb bytes.Buffer
			args := append(append([]string{cmd}, strings.Fields(c.args)...), "sweep.yaml")
			if code := runMain(context.Background(), args, &out, &errb); code != 2 || !strings.Contains(errb.String(), c.want) {
				t.Errorf("%s %s: exit %d, %q; want exit 2 and %q", cmd, c.args, code, errb.String(), c.want)
			}
		}
	}
}

// The Sweep workflow's input that run and submit send with their default flags: the JSON a
// sweep's history records (workflows/testdata/histories/sweep-paged.json was recorded by run).
func TestSweepInputDefaults(t *testing.T) {
	for _, c := range []struct {
		cmd    string
		window int
		want   string
	}{
		{"run", workflows.DefaultLocalWindow, `{"sweep_id":"s","manifest_key":"k","window":2,"heartbeat_timeout":120000000000,"retry":{"max_attempts":8,"initial_interval":1000000000,"maximum_interval":60000000000},"stall_timeout":900000000000,"progress":{"total":0,"skipped":0,"completed":0,"diverged":0,"failed":0,"running":null,"runs":0}}`},
		{"submit", workflows.DefaultWindow, `{"sweep_id":"s","manifest_key":"k","window":8,"heartbeat_timeout":120000000000,"retry":{"max_attempts":8,"initial_interval":1000000000,"maximum_interval":60000000000},"stall_timeout":900000000000,"progress":{"total":0,"skipped":0,"completed":0,"diverged":0,"failed":0,"running":null,"runs":0}}`},
	} {
		var tf trialFlags
		fs := newFlagSet(c.cmd, io.Discard)
		tf.register(fs, c.window)
		if err := fs.Parse(nil); err != nil {
			t.Fatal(err)
		}
		if err := tf.check(); err != nil {
			t.Errorf("%s: defaults refused: %v", c.cmd, err)
		}
		b, err := json.Marshal(tf.input("s", "k"))
		if err != nil || string(b) != c.want {
			t.Errorf("%s: input %s (%v), want %s", c.cmd, b, err, c.want)
		}
	}
}
