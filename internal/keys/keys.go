// Package keys is the object store's layout: it builds every key sfsweep reads or writes,
// and nothing else formats one. The layout, under the store's prefix:
//
//	sweeps/<sweep-id>/manifest.yaml                  the manifest as submitted (Manifest)
//	sweeps/<sweep-id>/plans/<run-id>/page-NNNNNN.json a Sweep run's plan, 1,000 trials a page (PlanPage)
//	sweeps/<sweep-id>/search/state.json              a search's state after its last decision (SearchState)
//	sweeps/<sweep-id>/search/decisions/NNNNNNNN.json each decision of a search: what it saw, what it started (SearchDecision)
//	trials/<trial-id>/config.json                    a trial's run config; the ID is its hash (RunConfig)
//	trials/<trial-id>/curves.jsonl                   its evaluations as they land (RunCurves)
//	trials/<trial-id>/result.json                    its result, written once (RunResult)
//	trials/<trial-id>/failed.json                    why it failed after its retries (TrialFailed)
//	trials/<trial-id>/attempts.json                  the attempts of its training, once it was retried (TrialAttempts)
//	trials/<trial-id>/model.safetensors, model.json  the final model at the reported iterate (RunModel)
//	trials/<trial-id>/checkpoints/step-NNNNNNNN.safetensors (+ .json sidecar) (Checkpoint)
//	trials/<trial-id>/probes/decay-[<iterate>-]step-NNNNNNNN.json        decay probe (DecayProbe)
//	trials/<trial-id>/probes/lr-decay-<frac>-step-NNNNNNNN.json          LR-decay branch (LRDecay)
//	trials/<trial-id>/probes/interp-NNNNNNNN-NNNNNNNN[-decayed]-n<P>.json interpolation (Interpolation)
//	<output>/tables/<name>.{md,csv,tex,json}         a manifest's tables (Table)
//	<output>/plots/<name>.{png,svg}                  its plots (Plot)
//	<output>/owner.json                              the trials whose sweep writes there (Owner)
//	<output>/trials.json                             every trial at a glance: config, outcome, losses (TrialIndex)
//
// <output> is the manifest's output.prefix, or sweeps/<name> (Output). A run outside a
// sweep (sfsweep train) keeps the same names under a prefix of its own (RunConfig(prefix)
// and so on). A data set under data.path keeps the files of its format (training/data).
package keys

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
)

// Trials is the prefix of every trial's objects.
const Trials = "trials/"

// Names of a run's objects under its prefix.
const (
	ConfigName     = "config.json"
	CurvesName     = "curves.jsonl"
	ResultName     = "result.json"
	FailedName     = "failed.json"
	ModelName      = "model.safetensors"
	ModelCardName  = "model.json"
	CheckpointsDir = "checkpoints"
	probesDir      = "probes"
)

// Join puts name under prefix; an empty prefix leaves name as it is.
func Join(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "/" + name
}

// Trial is the prefix of a trial's objects: the prefix of its run.
func Trial(id string) string { return Trials + id }

// RunConfig, RunCurves and RunResult are the keys of a run's config, evaluations and
// result under its prefix; Checkpoints is the prefix of its checkpoints.
func RunConfig(prefix string) string   { return Join(prefix, ConfigName) }
func RunCurves(prefix string) string   { return Join(prefix, CurvesName) }
func RunResult(prefix string) string   { return Join(prefix, ResultName) }
func Checkpoints(prefix string) string { return Join(prefix, CheckpointsDir) }

// RunModel and RunModelCard are the keys of a finished run's model (safetensors, PyTorch
// names) and of the small JSON that describes it.
func RunModel(prefix string) string     { return Join(prefix, ModelName) }
func RunModelCard(prefix string) string { return Join(prefix, ModelCardName) }

// Checkpoint is the key of the weights of the checkpoint at step under a checkpoints
// prefix, and CheckpointSidecar that of its sidecar (optimizer state, metadata).
func Checkpoint(checkpoints string, step int64) string {
	return Join(checkpoints, fmt.Sprintf("step-%08d.safetensors", step))
}
func CheckpointSidecar(checkpoints string, step int64) string {
	return Join(checkpoints, fmt.Sprintf("step-%08d.json", step))
}

// TrialFailed is the key of the object that marks a trial failed after its retries.
func TrialFailed(id string) string { return Join(Trial(id), FailedName) }

// TrialAttempts is the key of the record of how many attempts a trial's training took,
// written when one is retried (a trial without it trained in one attempt).
func TrialAttempts(id string) string { return Join(Trial(id), "attempts.json") }

// CheckpointOf tells the trial and the step of a checkpoint's weights key (the inverse of
// Checkpoint(Checkpoints(Trial(id)), step)).
func CheckpointOf(key string) (id string, step int, ok bool) {
	rest, ok := strings.CutPrefix(key, Trials)
	if !ok {
		return "", 0, false
	}
	id, name, ok := strings.Cut(rest, "/"+CheckpointsDir+"/step-")
	if !ok || strings.Contains(id, "/") {
		return "", 0, false
	}
	digits, ok := strings.CutSuffix(name, ".safetensors")
	if !ok {
		return "", 0, false
	}
	step, err := strconv.Atoi(digits)
	return id, step, err == nil && step >= 0
}

// DecayProbe is the key of a trial's decay probe from its checkpoint at step, started from
// iterate ("": the evaluated iterate, whose key has no iterate part).
func DecayProbe(id string, step int, iterate string) string {
	if iterate != "" {
		iterate += "-"
	}
	return fmt.Sprintf("%s/%s/decay-%sstep-%08d.json", Trial(id), probesDir, iterate, step)
}

// LRDecay is the key of a trial's LR-decay branch from its checkpoint at step, decaying
// over frac of the steps before it.
func LRDecay(id string, step int, frac float64) string {
	return fmt.Sprintf("%s/%s/lr-decay-%s-step-%08d.json", Trial(id), probesDir, strconv.FormatFloat(frac, 'g', -1, 64), step)
}

// Interpolation is the key of a trial's interpolation between its checkpoints at from and
// to at points values of α, or, decayed, to the end of an LR-decay branch from from.
func Interpolation(id string, from, to, points int, decayed bool) string {
	kind := ""
	if decayed {
		kind = "-decayed"
	}
	return fmt.Sprintf("%s/%s/interp-%08d-%08d%s-n%d.json", Trial(id), probesDir, from, to, kind, points)
}

// SweepID is a manifest's sweep: its name and the hash of its bytes, so the same manifest
// submitted twice is one sweep.
func SweepID(name string, src []byte) string {
	sum := sha256.Sum256(src)
	return "sweep-" + name + "-" + hex.EncodeToString(sum[:])[:8]
}

// Manifest is the key of a sweep's manifest.
func Manifest(sweepID string) string { return "sweeps/" + sweepID + "/manifest.yaml" }

// PlanPrefix is the prefix of the plan of one run of a sweep's Sweep workflow (a sweep
// submitted again plans anew and never rewrites the pages a running sweep reads).
func PlanPrefix(sweepID, runID string) string { return "sweeps/" + sweepID + "/plans/" + runID }

// SearchState is the key of a search's state after its last decision.
func SearchState(sweepID string) string { return "sweeps/" + sweepID + "/search/state.json" }

// SearchDecision is the key of decision seq (0, 1, ...) of a search.
func SearchDecision(sweepID string, seq int) string {
	return fmt.Sprintf("sweeps/%s/search/decisions/%08d.json", sweepID, seq)
}

// PlanPage is the key of page n (0, 1, ...) of the plan under prefix.
func PlanPage(prefix string, n int) string { return fmt.Sprintf("%s/page-%06d.json", prefix, n) }

// Output is where a manifest's tables and plots go: its output prefix, or sweeps/<name>.
func Output(name, prefix string) string {
	if prefix != "" {
		return prefix
	}
	return "sweeps/" + name
}

// TablesDir and PlotsDir are the prefixes of an output's tables and plots.
func TablesDir(output string) string { return output + "/tables/" }
func PlotsDir(output string) string  { return output + "/plots/" }

// Table and Plot are the keys of a table or a plot of an output, in the format of ext.
func Table(output, name, ext string) string { return TablesDir(output) + name + "." + ext }
func Plot(output, name, ext string) string  { return PlotsDir(output) + name + "." + ext }

// Owner is the key of the record of whose tables an output holds.
func Owner(output string) string { return output + "/owner.json" }

// TrialIndex is the key of an output's index of trials: each trial's configuration,
// outcome and final losses in one object, read by the sweep page.
func TrialIndex(output string) string { return output + "/trials.json" }

// Runs is the key of an output's table of its trials, a row each (report.WriteRuns).
func Runs(output string) string { return output + "/runs.csv" }

// ProgramCheckpoints is the prefix under which a program trainer's checkpoint directory
// is kept for trial id (docs/trainer.md, "Checkpoints").
func ProgramCheckpoints(id string) string { return Join(Trial(id), "program/checkpoints") }

// ProgramLog is the key of the log stream ("stdout", "stderr", or "json" for its summary)
// of attempt of a program trainer's trial id, training to until (a search's rung; 0: the
// end): a trial promoted past a rung is trained again, from attempt 1.
func ProgramLog(id string, until, attempt int, stream string) string {
	if until > 0 {
		return Join(Trial(id), fmt.Sprintf("program/logs/until-%d-attempt-%d.%s", until, attempt, stream))
	}
	return Join(Trial(id), fmt.Sprintf("program/logs/attempt-%d.%s", attempt, stream))
}
