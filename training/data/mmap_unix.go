//go:build unix

package data

import (
	"fmt"
	"os"
	"syscall"
)

// readFile returns the bytes of a local file: a read-only shared mapping where the file
// can be mapped (mapped = true; the pages are the page cache's, shared by every process that
// maps the file, and read on demand), else its contents read into memory. A mapping is
// never unmapped: the tokens viewed through it live as long as the process.
func readFile(path string) (b []byte, mapped bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, false, err
	}
	size := fi.Size()
	if size == 0 || !fi.Mode().IsRegular() {
		b, err := os.ReadFile(path)
		return b, false, err
	}
	if int64(int(size)) != size {
		return nil, false, fmt.Errorf("%s: %d bytes do not fit in memory", path, size)
	}
	b, err = syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil { // a file system that cannot map: read it
		b, err := os.ReadFile(path)
		return b, false, err
	}
	return b, true, nil
}
