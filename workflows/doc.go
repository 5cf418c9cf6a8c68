// Package workflows holds sfsweep's Temporal workflows: Sweep fans a manifest out into one
// Trial child workflow per trial, with a bounded window in flight and continue-as-new
// before the history grows large; Trial trains, probes and reports; Tables rebuilds the
// sweep's tables, debounced, whenever a trial result lands.
//
// Orchestration only: no I/O, no clock, no randomness, no map iteration, so every
// workflow replays deterministically. The work is done by activities, referred to here by
// name (the activities package registers them under these names), so this package does
// not import training or the object store.
//
// The files follow the workflows: names.go holds the names (task queues, activities,
// signals, queries, change IDs), the retry policies and every default; messages.go the
// inputs, outputs and states; sweep.go, trial.go and tables.go one workflow each.
package workflows
