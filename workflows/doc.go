// Package workflows will hold the Temporal workflows (Sweep → Trial children → Tables):
// orchestration only, deterministic and replay-tested. Nothing here is implemented yet.
package workflows
