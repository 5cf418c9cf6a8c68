package blob

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Dir is a Store of plain files under a root directory: the object under key k is the
// file root/k. Put writes a temporary file in the same directory, syncs it and renames it
// into place, so a crash never leaves a partial object under its key.
type Dir struct{ root string }

var _ Streams = (*Dir)(nil)

// NewDir returns a Store rooted at root, creating the directory if needed.
func NewDir(root string) (*Dir, error) {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("blob: %w", err)
	}
	return &Dir{root: root}, nil
}

// Root returns the directory the store writes under.
func (d *Dir) Root() string { return d.root }

func (d *Dir) path(key string) (string, error) {
	if err := ValidKey(key); err != nil {
		return "", err
	}
	return filepath.Join(d.root, filepath.FromSlash(key)), nil
}

// Put writes data under key atomically.
func (d *Dir) Put(ctx context.Context, key string, data []byte) error {
	return d.PutReader(ctx, key, bytes.NewReader(data), int64(len(data)))
}

// PutReader writes the size bytes of r under key atomically, through a temporary file.
func (d *Dir) PutReader(ctx context.Context, key string, r io.Reader, size int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p, err := d.path(key)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("blob: put %s: %w", key, err)
	}
	f, err := os.CreateTemp(filepath.Dir(p), ".tmp-"+filepath.Base(p)+"-*")
	if err != nil {
		return fmt.Errorf("blob: put %s: %w", key, err)
	}
	tmp := f.Name()
	_, err = io.Copy(f, Exact(r, size))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, p)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("blob: put %s: %w", key, err)
	}
	return nil
}

// Get returns the object under key.
func (d *Dir) Get(ctx context.Context, key string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p, err := d.path(key)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("blob: get %s: %w", key, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("blob: get %s: %w", key, err)
	}
	return b, nil
}

// GetWriter copies the object under key to w.
func (d *Dir) GetWriter(ctx context.Context, key string, w io.Writer) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	p, err := d.path(key)
	if err != nil {
		return 0, err
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, fmt.Errorf("blob: get %s: %w", key, ErrNotFound)
	}
	if err != nil {
		return 0, fmt.Errorf("blob: get %s: %w", key, err)
	}
	defer f.Close()
	n, err := io.Copy(w, f)
	if err != nil {
		return n, fmt.Errorf("blob: get %s: %w", key, err)
	}
	return n, nil
}

// List returns the keys under the root that start with prefix, skipping temporary files.
// It walks only the directories that can hold such keys: from the directory part of the
// prefix down, pruning those whose path neither starts the prefix nor starts with it.
func (d *Dir) List(ctx context.Context, prefix string) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	start := d.root
	if i := strings.LastIndex(prefix, "/"); i > 0 {
		start = filepath.Join(d.root, filepath.FromSlash(prefix[:i]))
		if rel, err := filepath.Rel(d.root, start); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			start = d.root // a prefix that climbs out: walk everything, keep what matches
		}
	}
	if fi, err := os.Stat(start); err != nil || !fi.IsDir() {
		if err == nil || errors.Is(err, fs.ErrNotExist) {
			return nil, nil // no key can start with the prefix
		}
		return nil, fmt.Errorf("blob: list %s: %w", prefix, err)
	}
	var keys []string
	err := filepath.WalkDir(start, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(d.root, p)
		if err != nil {
			return err
		}
		k := filepath.ToSlash(rel)
		if e.IsDir() {
			if p != start && !strings.HasPrefix(k+"/", prefix) && !strings.HasPrefix(prefix, k+"/") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasPrefix(e.Name(), ".tmp-") && strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("blob: list %s: %w", prefix, err)
	}
	sort.Strings(keys)
	return keys, nil
}

// Delete removes the object under key.
func (d *Dir) Delete(ctx context.Context, key string) error {
	p, err := d.path(key)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("blob: delete %s: %w", key, err)
	}
	return nil
}
