package cuda

import "testing"

// The micro-batch graph is warmed up eagerly, captured at the second micro-batch and
// replayed after; not at all without its path or in the timing mode; captured again when
// the paths change, the old graph dropped; and never again once a capture failed.
func TestGraphPlan(t *testing.T) {
	type call struct {
		fast      fastPaths
		profiling bool
		captureOK bool // the outcome of a capture this call makes
		want      graphStep
		drop      bool
	}
	on, onCE := fastGraph, fastGraph|fastCE
	for _, tc := range []struct {
		name  string
		calls []call
	}{
		{"off", []call{{fast: fastCE, want: runEager}, {fast: fastCE, want: runEager}, {fast: fastCE, want: runEager}}},
		{"on", []call{{fast: on, want: runEager}, {fast: on, captureOK: true, want: captureGraph}, {fast: on, want: replayGraph}, {fast: on, want: replayGraph}}},
		{"profiling", []call{{fast: on, profiling: true, want: runEager}, {fast: on, profiling: true, want: runEager}, {fast: on, want: runEager}, {fast: on, captureOK: true, want: captureGraph}}},
		{"paths change", []call{{fast: on, want: runEager}, {fast: on, captureOK: true, want: captureGraph}, {fast: onCE, want: runEager, drop: true},
			{fast: onCE, captureOK: true, want: captureGraph}, {fast: onCE, want: replayGraph}, {fast: fastCE, want: runEager}, {fast: onCE, want: replayGraph}}},
		{"paths change before a capture", []call{{fast: on, want: runEager}, {fast: onCE, want: runEager}, {fast: onCE, captureOK: true, want: captureGraph}}},
		{"capture fails", []call{{fast: on, want: runEager}, {fast: on, captureOK: false, want: captureGraph}, {fast: on, want: runEager}, {fast: onCE, want: runEager}}},
	} {
		var p graphPlan
		for i, c := range tc.calls {
			step, drop := p.next(c.fast, c.profiling)
			if step != c.want || drop != c.drop {
				t.Errorf("%s: call %d: next = %d, drop %v; want %d, drop %v", tc.name, i, step, drop, c.want, c.drop)
			}
			if step == captureGraph {
				p.captured(c.captureOK)
			}
		}
	}
}
