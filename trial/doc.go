// Package trial is what a trial leaves in the object store, read and written in one place:
// its config, its evaluations (curves), its final model, its result, why it failed, the
// attempts of its training and its probe results (decay probe, LR-decay branch,
// interpolation), at the keys of internal/keys; the Recorder a trainer writes its runs
// through (training.Run's Record, for a trial or a run outside a sweep); the rule by
// which a stored probe result answers a request (Accepts); a trial's outcome; and which
// of its probes are still missing.
//
// What it promises:
//   - A trial's ID is the hash of its config, and its result.json is written once, at the
//     end of its run: a result read may be kept for good.
//   - An object that does not decode reads as none (a result, a probe result) so that it
//     is computed again; a store that fails is an error, to be retried.
//   - A curves line that does not decode (an evaluation whose loss was not finite is
//     written as an empty line) is left out; a failed.json that gives no reason reads
//     "failed"; attempts.json that cannot be read reads as 0 (unknown).
//   - Every object is written with the bytes it always had (the same JSON fields, the same
//     indentation), so that a store an older build wrote reads the same.
//
// What it does not do: build keys (internal/keys does), train or probe (training does), or
// decide how an outcome is shown (report does). It sits above training,
// training/checkpoint (whose encoding the model file has), internal/blob, internal/keys
// and internal/status, and below activities, report and web.
package trial
