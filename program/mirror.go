package program

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sfsweep/sfsweep/internal/blob"
)

// Mirror keeps a program's checkpoint directory and a store prefix the same
// (docs/trainer.md, "Checkpoints"): the file Dir/a/b is the object Prefix/a/b. Names
// starting with "." or ending in ".tmp", at any depth, are a program's files in the making
// and are never copied. A Mirror is not safe for concurrent use.
type Mirror struct {
	Store  blob.Store
	Prefix string
	Dir    string

	known map[string]fileState // what the store holds, by relative path; nil: not yet listed
}

// fileState is what Push last saw of a file: size and mtime tell a change cheaply, the
// hash tells a rewrite with the same bytes from a change.
type fileState struct {
	size    int64
	mtime   time.Time
	hash    [sha256.Size]byte
	checked time.Time // when it was hashed
}

// racy is how close to its hashing a file's mtime makes size and mtime no proof of no
// change: a file system's clock is coarse (ticks of milliseconds, or seconds), so a file
// rewritten just after it was hashed can keep its size and mtime.
const racy = 2 * time.Second

// unchanged reports whether fi shows the file st saw, without reading it.
func (st fileState) unchanged(fi os.FileInfo) bool {
	return st.size == fi.Size() && st.mtime.Equal(fi.ModTime()) && st.mtime.Before(st.checked.Add(-racy))
}

func (m *Mirror) prefix() (string, error) {
	p := strings.TrimSuffix(m.Prefix, "/")
	if err := blob.ValidKey(p); err != nil {
		return "", fmt.Errorf("program: checkpoint prefix: %w", err)
	}
	return p + "/", nil
}

// skipped reports whether rel, a slash path, is a file in the making.
func skipped(rel string) bool {
	for seg := range strings.SplitSeq(rel, "/") {
		if strings.HasPrefix(seg, ".") || strings.HasSuffix(seg, ".tmp") {
			return true
		}
	}
	return false
}

// Restore fills Dir (creating it) from the store with what an attempt needs, so that a
// retried attempt resumes from the newest checkpoint on any machine: every file not named
// with a step (stepOf), and the checkpoint of the newest step (step-120.pt, or every file
// of step-000120/), or, given steps, those of the steps given instead (a probe's). Older
// checkpoints stay in the store, unknown to Push, which so never deletes one it did not
// restore. Files of Dir the store does not hold are left, and the next Push uploads them.
func (m *Mirror) Restore(ctx context.Context, steps ...int) error {
	prefix, err := m.prefix()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(m.Dir, 0o755); err != nil {
		return fmt.Errorf("program: restore: %w", err)
	}
	keys, err := m.Store.List(ctx, prefix)
	if err != nil {
		return fmt.Errorf("program: restore: %w", err)
	}
	want := steps
	if len(want) == 0 { // the newest
		newest := -1
		for _, k := range keys {
			if n, ok := stepOf(strings.TrimPrefix(k, prefix)); ok {
				newest = max(newest, n)
			}
		}
		want = []int{newest}
	}
	m.known = map[string]fileState{}
	for _, k := range keys {
		rel := strings.TrimPrefix(k, prefix)
		if skipped(rel) || blob.ValidKey(rel) != nil {
			continue
		}
		if n, ok := stepOf(rel); ok && !slices.Contains(want, n) {
			continue
		}
		p := filepath.Join(m.Dir, filepath.FromSlash(rel))
		hash, err := m.fetch(ctx, k, p)
		if err != nil {
			return fmt.Errorf("program: restore %s: %w", k, err)
		}
		fi, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("program: restore %s: %w", k, err)
		}
		m.known[rel] = fileState{size: fi.Size(), mtime: fi.ModTime(), hash: hash, checked: time.Now()}
	}
	return nil
}

// fetch streams the object key to the file p, hashing it as it goes, through a temporary
// file renamed into place, so that a program never reads half a checkpoint, and returns
// its hash.
func (m *Mirror) fetch(ctx context.Context, key, p string) (hash [sha256.Size]byte, err error) {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return hash, err
	}
	tmp := filepath.Join(filepath.Dir(p), "."+filepath.Base(p)+".restore.tmp")
	f, err := os.Create(tmp)
	if err != nil {
		return hash, err
	}
	h := sha256.New()
	_, err = blob.GetStream(ctx, m.Store, key, io.MultiWriter(f, h))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, p)
	}
	if err != nil {
		os.Remove(tmp)
		return hash, err
	}
	return [sha256.Size]byte(h.Sum(nil)), nil
}

// Push uploads the files of Dir that appeared or changed since the last Push (or Restore)
// and deletes from the store those deleted from Dir since; objects Dir never held are left
// alone. It reports whether it changed the store. It goes on past a file it cannot copy
// and returns the errors joined; a missing Dir is an error.
//
// settle, if not nil, is called once Dir has been walked and before anything is uploaded,
// and an error from it uploads nothing. The files uploaded are those Dir held before
// settle, with the bytes they held then: each is opened in the walk, and a file renamed
// over keeps its old bytes open. So what settle records of the program's progress (its
// metrics lines) is stored before any checkpoint the program wrote after it.
func (m *Mirror) Push(ctx context.Context, settle func() error) (bool, error) {
	prefix, err := m.prefix()
	if err != nil {
		return false, err
	}
	if m.known == nil {
		m.known = map[string]fileState{}
	}
	seen := map[string]bool{}
	var pending []*pendingFile
	defer func() {
		for _, f := range pending {
			f.f.Close()
		}
	}()
	err = filepath.WalkDir(m.Dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			if p != m.Dir && errors.Is(err, fs.ErrNotExist) {
				return nil // renamed or deleted while we walked
			}
			return err // a missing Dir is no reason to empty the store
		}
		if p == m.Dir {
			return nil
		}
		rel, err := filepath.Rel(m.Dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if skipped(rel) {
			if e.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !e.Type().IsRegular() {
			return nil // directories are walked; links and devices are not checkpoints
		}
		f, err := m.open(p, rel)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		seen[rel] = true
		if f != nil {
			pending = append(pending, f)
		}
		if err != nil {
			pending = append(pending, &pendingFile{rel: rel, err: err})
		}
		return ctx.Err()
	})
	if err != nil {
		return false, fmt.Errorf("program: push: %w", err)
	}
	if settle != nil {
		if err := settle(); err != nil {
			return false, err
		}
	}
	changed := false
	var errs []error
	for _, f := range pending {
		up, err := m.push(ctx, prefix, f)
		if err != nil {
			errs = append(errs, err)
		}
		changed = changed || up
	}
	for _, rel := range sortedKeys(m.known) {
		if seen[rel] {
			continue
		}
		if err := m.Store.Delete(ctx, prefix+rel); err != nil {
			errs = append(errs, err)
			continue
		}
		delete(m.known, rel)
		changed = true
	}
	return changed, errors.Join(errs...)
}

// pendingFile is a file Push found new or changed, open since the walk (or the error of
// opening it).
type pendingFile struct {
	rel    string
	f      *os.File
	fi     os.FileInfo
	opened time.Time
	err    error
}

// open opens the file p (rel in Dir) if it is not the one Push last saw; nil if it is.
func (m *Mirror) open(p, rel string) (*pendingFile, error) {
	opened := time.Now()
	fi, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if old, had := m.known[rel]; had && old.unchanged(fi) {
		return nil, nil
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	if fi, err = f.Stat(); err != nil { // of what was opened, if it was renamed over since
		f.Close()
		return nil, err
	}
	return &pendingFile{rel: rel, f: f, fi: fi, opened: opened}, nil
}

// push uploads one opened file if its bytes changed, and reports whether it did. The file
// streams to the store (blob.PutStream), never whole in memory: a new file is hashed as it
// goes up; one the store holds is hashed first, and goes up only if its bytes changed. A
// file whose size changes from the one it had when it was opened fails its upload, which
// leaves the stored object as it was, and the next Push sends it again.
func (m *Mirror) push(ctx context.Context, prefix string, pf *pendingFile) (bool, error) {
	if pf.err != nil {
		return false, pf.err
	}
	rel, size := pf.rel, pf.fi.Size()
	key := prefix + rel
	if err := blob.ValidKey(key); err != nil {
		return false, fmt.Errorf("program: push %s: %w", rel, err)
	}
	st := fileState{size: size, mtime: pf.fi.ModTime(), checked: pf.opened}
	// the file from its start, which must hold the size it had when opened
	file := func() io.Reader { return blob.Exact(io.NewSectionReader(pf.f, 0, math.MaxInt64), size) }
	h := sha256.New()
	old, had := m.known[rel]
	if had {
		if _, err := io.Copy(h, file()); err != nil {
			return false, fmt.Errorf("program: push %s: %w", rel, err)
		}
		if st.hash = [sha256.Size]byte(h.Sum(nil)); old.hash == st.hash {
			m.known[rel] = st
			return false, nil
		}
		h = nil // hashed
	}
	r := file()
	if h != nil {
		r = io.TeeReader(r, h)
	}
	if err := blob.PutStream(ctx, m.Store, key, r, size); err != nil {
		return false, err
	}
	if h != nil {
		st.hash = [sha256.Size]byte(h.Sum(nil))
	}
	m.known[rel] = st
	return true, nil
}

// stepName is a checkpoint named with its step: step-120.pt, step-000120 (a directory).
var stepName = regexp.MustCompile(`^step-(\d+)(\.[^/]*)?$`)

// Steps returns the steps of the checkpoints stored under Prefix, from their names
// (step-120.pt, step-000120/...), sorted, each once: those a probe can start from.
func (m *Mirror) Steps(ctx context.Context) ([]int, error) {
	prefix, err := m.prefix()
	if err != nil {
		return nil, err
	}
	keys, err := m.Store.List(ctx, prefix)
	if err != nil {
		return nil, fmt.Errorf("program: checkpoint steps: %w", err)
	}
	var steps []int
	for _, k := range keys {
		if rel := strings.TrimPrefix(k, prefix); !skipped(rel) {
			if n, ok := stepOf(rel); ok {
				steps = append(steps, n)
			}
		}
	}
	slices.Sort(steps)
	return slices.Compact(steps), nil
}

// stepOf is the step of the checkpoint the stored file rel (a slash path) belongs to: that
// of its first segment named with a step (step-120.pt, step-000120/model.pt); ok is false
// for a file of no step's checkpoint.
func stepOf(rel string) (step int, ok bool) {
	for seg := range strings.SplitSeq(rel, "/") {
		if sm := stepName.FindStringSubmatch(path.Base(seg)); sm != nil {
			n, err := strconv.Atoi(sm[1])
			return n, err == nil
		}
	}
	return 0, false
}
