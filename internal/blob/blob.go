// Package blob is the object-store interface every part of sfsweep writes results,
// checkpoints and tables through, and its local-directory implementation. The S3
// implementation (aws-sdk-go-v2) lives in infra; training and analysis know only this
// interface.
//
// Objects are written whole and atomically: a reader sees either the previous object or
// the complete new one, never a part. Keys are slash-separated relative paths; ValidKey
// rejects those that could escape a prefix.
package blob

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// ErrNotFound is returned (wrapped) by Get for a key that does not exist.
var ErrNotFound = errors.New("blob: not found")

// Store is an object store.
type Store interface {
	// Put writes data under key, replacing any object there, atomically.
	Put(ctx context.Context, key string, data []byte) error
	// Get returns the object under key in a slice the caller owns (it may keep or modify
	// it); a missing key is an error wrapping ErrNotFound.
	Get(ctx context.Context, key string) ([]byte, error)
	// List returns the keys that start with prefix, in lexical order.
	List(ctx context.Context, prefix string) ([]string, error)
	// Delete removes the object under key; deleting a missing key is not an error.
	Delete(ctx context.Context, key string) error
}

// ValidKey reports why key is not a valid object key: empty, absolute, with an empty, "."
// or ".." segment, a backslash, or a control character.
func ValidKey(key string) error {
	if key == "" {
		return errors.New("blob: empty key")
	}
	if strings.HasPrefix(key, "/") {
		return fmt.Errorf("blob: key %q: must be relative", key)
	}
	for _, r := range key {
		if r < 0x20 || r == 0x7f || r == '\\' {
			return fmt.Errorf("blob: key %q: contains %q", key, r)
		}
	}
	for _, seg := range strings.Split(key, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("blob: key %q: segment %q is not allowed", key, seg)
		}
	}
	return nil
}
