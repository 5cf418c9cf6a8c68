// Package loadtest runs the sfsweep command, built from this tree, under load: a sweep of
// thousands of trials through the embedded stack, as a process of its own. It is a
// package apart from cmd/sfsweep so that the two test binaries each keep well under go
// test's default timeout; it holds tests only.
package loadtest
