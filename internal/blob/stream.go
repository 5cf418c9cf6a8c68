package blob

import (
	"bytes"
	"context"
	"fmt"
	"io"
)

// Streams is a Store that moves an object from a reader and to a writer without holding
// it whole in memory: a checkpoint of gigabytes goes through a few buffers. PutStream and
// GetStream use it where a store has it.
type Streams interface {
	// PutReader writes the size bytes r gives under key, replacing any object there,
	// atomically: the object is there whole once r has given them all, or not at all. A
	// reader that gives another number of bytes fails the put.
	PutReader(ctx context.Context, key string, r io.Reader, size int64) error
	// GetWriter writes the object under key to w and returns its size; a missing key is
	// an error wrapping ErrNotFound, with nothing written. On another error w may hold a
	// part of the object.
	GetWriter(ctx context.Context, key string, w io.Writer) (int64, error)
}

// PutStream writes the size bytes of r under key in s: streamed where s is a Streams,
// else read into memory and put whole.
func PutStream(ctx context.Context, s Store, key string, r io.Reader, size int64) error {
	if ss, ok := s.(Streams); ok {
		return ss.PutReader(ctx, key, r, size)
	}
	data, err := readSize(r, size)
	if err != nil {
		return fmt.Errorf("blob: put %s: %w", key, err)
	}
	return s.Put(ctx, key, data)
}

// GetStream writes the object under key in s to w and returns its size: streamed where s
// is a Streams, else got whole and written.
func GetStream(ctx context.Context, s Store, key string, w io.Writer) (int64, error) {
	if ss, ok := s.(Streams); ok {
		return ss.GetWriter(ctx, key, w)
	}
	data, err := s.Get(ctx, key)
	if err != nil {
		return 0, err
	}
	n, err := w.Write(data)
	return int64(n), err
}

// readSize reads exactly size bytes from r, and fails if r gives fewer or more.
func readSize(r io.Reader, size int64) ([]byte, error) {
	var buf bytes.Buffer
	if _, err := io.Copy(&buf, Exact(r, size)); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// SizeError is a stream that gave another number of bytes than its size: a file that
// changed while it was read.
type SizeError struct{ Want, Got int64 }

func (e SizeError) Error() string {
	if e.Got > e.Want {
		return fmt.Sprintf("the stream gave more than its %d bytes", e.Want)
	}
	return fmt.Sprintf("the stream gave %d of its %d bytes", e.Got, e.Want)
}

// Exact is r, which must give exactly size bytes: a read past them that finds more, or an
// end before them, fails with a SizeError, so that a put fed by it fails before it makes
// an object of the wrong bytes.
func Exact(r io.Reader, size int64) io.Reader { return &exactReader{r: r, left: size, size: size} }

type exactReader struct {
	r          io.Reader
	left, size int64
}

func (e *exactReader) Read(p []byte) (int, error) {
	if e.left <= 0 {
		var one [1]byte
		n, err := io.ReadFull(e.r, one[:])
		if n > 0 {
			return 0, SizeError{Want: e.size, Got: e.size + 1}
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return 0, io.EOF
		}
		return 0, err
	}
	if int64(len(p)) > e.left {
		p = p[:e.left]
	}
	n, err := e.r.Read(p)
	e.left -= int64(n)
	if err == io.EOF && e.left > 0 {
		return n, SizeError{Want: e.size, Got: e.size - e.left}
	}
	if err == io.EOF {
		err = nil // the end is told by the next read, once it has looked for more
	}
	return n, err
}
