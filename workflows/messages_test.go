package workflows

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/sfsweep/sfsweep/internal/probe"
)

// The inputs recorded in a history decode into today's types and encode back to the same
// bytes: the probes declared once (probe.Set) keep the flat form of recorded plans, and
// the activity inputs that embed a probe keep theirs.
func TestRecordedInputsRoundTrip(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "histories", "trial-probes.json"))
	if err != nil {
		t.Fatal(err)
	}
	var h struct {
		Events []map[string]json.RawMessage `json:"events"`
	}
	if err := json.Unmarshal(b, &h); err != nil {
		t.Fatal(err)
	}
	type attrs struct {
		WorkflowType *struct{ Name string } `json:"workflowType"`
		ActivityType *struct{ Name string } `json:"activityType"`
		Input        struct {
			Payloads []struct {
				Data []byte `json:"data"`
			} `json:"payloads"`
		} `json:"input"`
	}
	types := map[string]reflect.Type{
		"Trial":             reflect.TypeFor[TrialInput](),
		ActivityDecayProbe:  reflect.TypeFor[DecayProbeInput](),
		ActivityLRDecay:     reflect.TypeFor[LRDecayInput](),
		ActivityInterpolate: reflect.TypeFor[InterpolateInput](),
	}
	seen := map[string]int{}
	for _, ev := range h.Events {
		for _, raw := range ev {
			if !bytes.HasPrefix(raw, []byte("{")) {
				continue
			}
			var a attrs
			if json.Unmarshal(raw, &a) != nil || len(a.Input.Payloads) != 1 {
				continue
			}
			kind := ""
			switch {
			case a.WorkflowType != nil:
				kind = a.WorkflowType.Name
			case a.ActivityType != nil:
				kind = a.ActivityType.Name
			}
			typ, ok := types[kind]
			if !ok {
				continue
			}
			recorded := a.Input.Payloads[0].Data
			v := reflect.New(typ)
			if err := json.Unmarshal(recorded, v.Interface()); err != nil {
				t.Fatalf("%s: %v", kind, err)
			}
			again, err := json.Marshal(v.Interface())
			if err != nil {
				t.Fatalf("%s: %v", kind, err)
			}
			if !bytes.Equal(again, recorded) {
				t.Errorf("%s input:\nrecorded %s\nencoded  %s", kind, recorded, again)
			}
			seen[kind]++
		}
	}
	want := map[string]int{"Trial": 1, ActivityDecayProbe: 1, ActivityLRDecay: 2, ActivityInterpolate: 2}
	if !reflect.DeepEqual(seen, want) {
		t.Errorf("inputs checked %v, want %v", seen, want)
	}
}

// A plan entry's probes survive its JSON, the decay probe's shape included, and a plan
// with no shape encodes as plans did before shapes existed.
func TestTrialRefJSON(t *testing.T) {
	ref := TrialRef{ID: "t", Queue: "train-cpu", Probes: probe.Set{
		Decay:       &probe.Decay{At: []int{10}, Steps: 4, PeakLR: 1e-4, Shape: probe.ShapeSqrt},
		LRDecay:     &probe.LRDecay{At: []int{10}, Frac: 0.2},
		Interpolate: &probe.Interpolation{From: 10, To: 20, Points: 11},
	}}
	b, err := json.Marshal(ref)
	if err != nil {
		t.Fatal(err)
	}
	var back TrialRef
	if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, ref) {
		t.Errorf("round trip of %s: %+v (%v)", b, back, err)
	}
	ref.Probes.Decay.Shape = ""
	b, _ = json.Marshal(ref)
	want := `{"id":"t","queue":"train-cpu","decay_at":[10],"decay_steps":4,"decay_lr":0.0001,"branch_at":[10],"branch_frac":0.2,"interp":{"from":10,"to":20,"points":11}}`
	if string(b) != want {
		t.Errorf("encoded %s, want %s", b, want)
	}
}

// A sweep's progress keeps the latest MaxFailuresShown failures with their reasons, and
// counts them all.
func TestProgressFailures(t *testing.T) {
	var p SweepProgress
	for i := range MaxFailuresShown + 5 {
		p.failed(fmt.Sprintf("t%d", i), fmt.Sprintf("reason %d", i))
	}
	if p.Failed != MaxFailuresShown+5 || len(p.Failures) != MaxFailuresShown || p.Failures[0].TrialID != "t5" || p.Failures[MaxFailuresShown-1].Reason != fmt.Sprintf("reason %d", MaxFailuresShown+4) {
		t.Errorf("progress: %d failed, failures %v", p.Failed, p.Failures)
	}
}
