package checkpoint

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/sfsweep/sfsweep/internal/blob"
	"github.com/sfsweep/sfsweep/internal/keys"
)

// Reasons a checkpoint in a store does not count, wrapped by Skipped.Reason and by the
// errors of Load.
var (
	// ErrNoSidecar: the data exists but its sidecar does not (a save was interrupted).
	ErrNoSidecar = errors.New("checkpoint: no sidecar")
	// ErrNoData: the sidecar exists but the data does not.
	ErrNoData = errors.New("checkpoint: no data")
	// ErrMismatch: the data's size or SHA-256 differs from its sidecar's, or the sidecar is
	// unreadable (corrupt or truncated).
	ErrMismatch = errors.New("checkpoint: data does not match its sidecar")
)

// Info describes a checkpoint in a store, from its sidecar.
type Info struct {
	Step   int64
	Key    string // the key of the safetensors file
	Size   int64  // its size in bytes
	SHA256 string // the hexadecimal SHA-256 of its bytes
}

// Skipped is a checkpoint that Latest passed over, and why. Reason wraps ErrNoSidecar,
// ErrNoData, ErrMismatch or ErrInvalid.
type Skipped struct {
	Step   int64
	Reason error
}

func (s Skipped) String() string { return fmt.Sprintf("step %d: %v", s.Step, s.Reason) }

// sidecar is the JSON object stored beside each checkpoint file.
type sidecar struct {
	Step    int64  `json:"step"`
	SHA256  string `json:"sha256"`
	Size    int64  `json:"size"`
	Version int    `json:"version"` // the format version that wrote the file
}

// Key returns the key of the safetensors file of step under prefix.
func Key(prefix string, step int64) string { return keys.Checkpoint(prefix, step) }

// SidecarKey returns the key of the sidecar of step under prefix.
func SidecarKey(prefix string, step int64) string { return keys.CheckpointSidecar(prefix, step) }

func checkPrefix(prefix string) error {
	if prefix == "" {
		return nil
	}
	if err := blob.ValidKey(prefix); err != nil {
		return fmt.Errorf("checkpoint: prefix %q: %w", prefix, err)
	}
	return nil
}

// Save writes c under prefix: the safetensors file, then its sidecar. Saving the same
// checkpoint again writes the same bytes. The file streams to the store (blob.PutStream),
// hashed as it goes, with no copy of the checkpoint in memory where the store streams.
func Save(ctx context.Context, store blob.Store, prefix string, c *Checkpoint) error {
	if err := checkPrefix(prefix); err != nil {
		return err
	}
	size, err := c.EncodedSize()
	if err != nil {
		return err
	}
	h := sha256.New()
	pr, pw := io.Pipe()
	written := make(chan struct{})
	go func() {
		defer close(written)
		_, err := c.WriteTo(io.MultiWriter(pw, h))
		pw.CloseWithError(err)
	}()
	err = blob.PutStream(ctx, store, Key(prefix, c.Step), pr, int64(size))
	pr.CloseWithError(errors.New("checkpoint: save: the store stopped reading")) // ends the writer, if it waits
	<-written
	if err != nil {
		return fmt.Errorf("checkpoint: save step %d: %w", c.Step, err)
	}
	side, err := json.Marshal(sidecar{Step: c.Step, SHA256: hex.EncodeToString(h.Sum(nil)), Size: int64(size), Version: Version})
	if err != nil {
		return fmt.Errorf("checkpoint: save step %d: %w", c.Step, err)
	}
	if err := store.Put(ctx, SidecarKey(prefix, c.Step), side); err != nil {
		return fmt.Errorf("checkpoint: save step %d: sidecar: %w", c.Step, err)
	}
	return nil
}

// entry is what the listing of a prefix shows of one step.
type entry struct {
	step            int64
	data, hasSide   bool
	dataKey, sidKey string
}

// scan lists the checkpoint objects directly under prefix, newest step first. Other keys
// are ignored.
func scan(ctx context.Context, store blob.Store, prefix string) ([]entry, error) {
	if err := checkPrefix(prefix); err != nil {
		return nil, err
	}
	dir := ""
	if prefix != "" {
		dir = prefix + "/"
	}
	keys, err := store.List(ctx, dir)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: list %s: %w", prefix, err)
	}
	byStep := map[int64]*entry{}
	for _, k := range keys {
		name := strings.TrimPrefix(k, dir)
		rest, ok := strings.CutPrefix(name, "step-")
		if !ok {
			continue
		}
		digits, ext, ok := strings.Cut(rest, ".")
		if !ok || (ext != "safetensors" && ext != "json") {
			continue
		}
		step, err := strconv.ParseInt(digits, 10, 64)
		want := Key(prefix, step)
		if ext == "json" {
			want = SidecarKey(prefix, step)
		}
		if err != nil || step < 0 || want != k {
			continue // not a name Save writes
		}
		e := byStep[step]
		if e == nil {
			e = &entry{step: step, dataKey: Key(prefix, step), sidKey: SidecarKey(prefix, step)}
			byStep[step] = e
		}
		if ext == "json" {
			e.hasSide = true
		} else {
			e.data = true
		}
	}
	out := make([]entry, 0, len(byStep))
	for _, e := range byStep {
		out = append(out, *e)
	}
	slices.SortFunc(out, func(a, b entry) int { return -cmpInt(a.step, b.step) })
	return out, nil
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// readSidecar fetches and parses the sidecar of step. A missing sidecar wraps
// ErrNoSidecar; an unreadable one ErrMismatch; a store failure neither.
func readSidecar(ctx context.Context, store blob.Store, prefix string, step int64) (sidecar, error) {
	var s sidecar
	b, err := store.Get(ctx, SidecarKey(prefix, step))
	if errors.Is(err, blob.ErrNotFound) {
		return s, ErrNoSidecar
	}
	if err != nil {
		return s, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return s, fmt.Errorf("%w: sidecar: %v", ErrMismatch, err)
	}
	switch {
	case s.Version < 1 || s.Version > Version:
		return s, fmt.Errorf("%w: sidecar: version = %d: this package reads versions 1 to %d", ErrMismatch, s.Version, Version)
	case s.Step != step:
		return s, fmt.Errorf("%w: sidecar: step = %d, its key is of step %d", ErrMismatch, s.Step, step)
	case s.Size < 0:
		return s, fmt.Errorf("%w: sidecar: size = %d: must be ≥ 0", ErrMismatch, s.Size)
	case len(s.SHA256) != 2*sha256.Size || strings.ToLower(s.SHA256) != s.SHA256:
		return s, fmt.Errorf("%w: sidecar: sha256 = %q: want %d lower-case hexadecimal digits", ErrMismatch, s.SHA256, 2*sha256.Size)
	}
	if _, err := hex.DecodeString(s.SHA256); err != nil {
		return s, fmt.Errorf("%w: sidecar: sha256 = %q: want %d lower-case hexadecimal digits", ErrMismatch, s.SHA256, 2*sha256.Size)
	}
	return s, nil
}

// IsBad reports whether err says why a checkpoint does not count (as opposed to a
// failure of the store or a cancelled context, which is no verdict on the checkpoint and
// may pass on a retry).
func IsBad(err error) bool {
	return errors.Is(err, ErrNoSidecar) || errors.Is(err, ErrNoData) || errors.Is(err, ErrMismatch) || errors.Is(err, ErrInvalid)
}

// fetch reads the checkpoint of step and verifies it.
func fetch(ctx context.Context, store blob.Store, prefix string, step int64) (*Checkpoint, error) {
	side, err := readSidecar(ctx, store, prefix, step)
	if err != nil {
		return nil, err
	}
	data, err := store.Get(ctx, Key(prefix, step))
	if errors.Is(err, blob.ErrNotFound) {
		return nil, ErrNoData
	}
	if err != nil {
		return nil, err
	}
	return verify(data, side)
}

// verify checks data against its sidecar and decodes it, sharing memory with data (the
// bytes a Get returned, which nothing else holds).
func verify(data []byte, side sidecar) (*Checkpoint, error) {
	if int64(len(data)) != side.Size {
		return nil, fmt.Errorf("%w: size %d bytes, the sidecar says %d", ErrMismatch, len(data), side.Size)
	}
	sum := sha256.Sum256(data)
	if got := hex.EncodeToString(sum[:]); got != side.SHA256 {
		return nil, fmt.Errorf("%w: sha256 %s, the sidecar says %s", ErrMismatch, got, side.SHA256)
	}
	c, err := decode(data, true)
	if err != nil {
		return nil, err
	}
	if c.Step != side.Step {
		return nil, fmt.Errorf("%w: the file holds step %d", ErrInvalid, c.Step)
	}
	return c, nil
}

// Load reads the checkpoint of step under prefix and verifies it. The error wraps
// ErrNoSidecar, ErrNoData, ErrMismatch or ErrInvalid when the checkpoint does not count.
func Load(ctx context.Context, store blob.Store, prefix string, step int64) (*Checkpoint, error) {
	if err := checkPrefix(prefix); err != nil {
		return nil, err
	}
	c, err := fetch(ctx, store, prefix, step)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: load %s: %w", Key(prefix, step), err)
	}
	return c, nil
}

// Latest returns the newest checkpoint under prefix whose bytes verify against its
// sidecar and decode, and the newer ones it skipped with the reason; nil (and no error)
// when there is none. A failure of the store (other than a missing object) is returned as
// an error rather than taken for a bad checkpoint, so a transient outage never makes a run
// fall back to an older step.
func Latest(ctx context.Context, store blob.Store, prefix string) (*Checkpoint, []Skipped, error) {
	entries, err := scan(ctx, store, prefix)
	if err != nil {
		return nil, nil, err
	}
	var skipped []Skipped
	for _, e := range entries {
		c, err := fetch(ctx, store, prefix, e.step)
		if err == nil {
			return c, skipped, nil
		}
		if !IsBad(err) {
			return nil, skipped, fmt.Errorf("checkpoint: latest under %s: step %d: %w", prefix, e.step, err)
		}
		skipped = append(skipped, Skipped{Step: e.step, Reason: err})
	}
	return nil, skipped, nil
}

// List returns the checkpoints under prefix that have a readable sidecar and data, oldest
// first. It reads the sidecars but not the data: Load and Latest verify the bytes.
func List(ctx context.Context, store blob.Store, prefix string) ([]Info, error) {
	entries, err := scan(ctx, store, prefix)
	if err != nil {
		return nil, err
	}
	var out []Info
	for _, e := range slices.Backward(entries) {
		if !e.hasSide || !e.data {
			continue
		}
		s, err := readSidecar(ctx, store, prefix, e.step)
		if IsBad(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("checkpoint: list %s: step %d: %w", prefix, e.step, err)
		}
		out = append(out, Info{Step: e.step, Key: e.dataKey, Size: s.Size, SHA256: s.SHA256})
	}
	return out, nil
}

// Prune deletes old checkpoints under prefix: it keeps the newest keepLast (≥ 1)
// checkpoints that verify (reading them to be sure) and those of keepSteps, and deletes
// every other checkpoint older than the oldest kept one, sidecar first. Nothing newer than
// that is deleted, so an interrupted or concurrent Save is never disturbed.
func Prune(ctx context.Context, store blob.Store, prefix string, keepLast int, keepSteps ...int64) error {
	if keepLast < 1 {
		return fmt.Errorf("checkpoint: prune %s: keepLast = %d: must be ≥ 1", prefix, keepLast)
	}
	entries, err := scan(ctx, store, prefix)
	if err != nil {
		return err
	}
	kept, oldest := 0, int64(-1)
	for _, e := range entries {
		if kept == keepLast {
			break
		}
		if _, err := fetch(ctx, store, prefix, e.step); err != nil {
			if IsBad(err) {
				continue
			}
			return fmt.Errorf("checkpoint: prune %s: step %d: %w", prefix, e.step, err)
		}
		kept++
		oldest = e.step
	}
	if kept < keepLast {
		return nil // no checkpoint is older than the kept ones
	}
	for _, e := range entries {
		if e.step >= oldest || slices.Contains(keepSteps, e.step) {
			continue
		}
		if err := store.Delete(ctx, e.sidKey); err != nil {
			return fmt.Errorf("checkpoint: prune %s: step %d: %w", prefix, e.step, err)
		}
		if err := store.Delete(ctx, e.dataKey); err != nil {
			return fmt.Errorf("checkpoint: prune %s: step %d: %w", prefix, e.step, err)
		}
	}
	return nil
}
