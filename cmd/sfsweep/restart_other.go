//go:build !unix

package main

import "errors"

// execSelf cannot replace a process where the system has no exec; sfsweep run then ends
// and asks to be run again.
func execSelf() error { return errors.New("this system cannot restart a process in place") }
