//go:build !unix

package data

import "os"

// readFile returns the contents of a local file, read into memory.
func readFile(path string) (b []byte, mapped bool, err error) {
	b, err = os.ReadFile(path)
	return b, false, err
}
