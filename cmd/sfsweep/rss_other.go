//go:build !linux

package main

// peakRSS returns 0: the peak resident set size is read only on Linux.
func peakRSS() int64 { return 0 }

// currentRSS returns 0: the resident set size is read only on Linux.
func currentRSS() int64 { return 0 }
