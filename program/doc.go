// Package program runs one attempt of a trial's training program: any program that
// follows the protocol of docs/trainer.md.
//
// A Spec says how to start a trainer and what its identity is; a Registry holds the
// trainers a worker's operator registered. Argv turns a trial's parameters into the
// program's argv (never through a shell), Run starts it in its own process group with a
// scrubbed environment, tails the metrics file it appends to and maps its exit to a
// Status, and Mirror keeps its checkpoint directory and the store the same.
//
// The package knows nothing of sfsweep's own training types or of Temporal: the caller
// builds the attempt's environment, turns metric lines into curves and heartbeats, and
// decides about retries from the Outcome.
//
// Ending a program is always the same: SIGTERM to its process group, a grace period,
// SIGKILL to the group, and Run returns only once no process of the group is left.
package program
