// Package activities will hold the Temporal activities: thin adapters that call training
// and analysis, heartbeat, and read and write the object store. Nothing here is
// implemented yet.
package activities
