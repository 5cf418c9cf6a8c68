package program

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sfsweep/sfsweep/internal/blob"
)

func newStore(t *testing.T) *blob.Dir {
	t.Helper()
	s, err := blob.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func writeAt(t *testing.T, dir, name, text string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func keys(t *testing.T, s blob.Store) []string {
	t.Helper()
	k, err := s.List(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func push(t *testing.T, m *Mirror, want bool) {
	t.Helper()
	changed, err := m.Push(context.Background(), nil)
	if err != nil || changed != want {
		t.Fatalf("Push = %v, %v; want %v", changed, err, want)
	}
}

func TestMirror(t *testing.T) {
	ctx := context.Background()
	store := newStore(t)
	dir := t.TempDir()
	m := &Mirror{Store: store, Prefix: "trials/abc/program/checkpoints/", Dir: dir}
	writeAt(t, dir, "step-10.pt", "ten")
	writeAt(t, dir, "step-000020/model.pt", "twenty")
	writeAt(t, dir, "step-000020/optim.pt", "opt")
	writeAt(t, dir, "step-30.pt.tmp", "half")
	writeAt(t, dir, ".step-30.pt", "half")
	writeAt(t, dir, ".partial/step-40.pt", "half")
	writeAt(t, dir, "upload.tmp/step-50.pt", "half")
	writeAt(t, dir, "latest.txt", "20")
	push(t, m, true)
	want := []string{
		"trials/abc/program/checkpoints/latest.txt",
		"trials/abc/program/checkpoints/step-000020/model.pt",
		"trials/abc/program/checkpoints/step-000020/optim.pt",
		"trials/abc/program/checkpoints/step-10.pt",
	}
	if got := keys(t, store); !slices.Equal(got, want) {
		t.Fatalf("store holds %q\nwant %q", got, want)
	}
	push(t, m, false)

	// a rewrite with the same bytes is no change; new bytes are
	writeAt(t, dir, "latest.txt", "20")
	push(t, m, false)
	writeAt(t, dir, "latest.txt", "30")
	if err := os.Rename(filepath.Join(dir, "step-30.pt.tmp"), filepath.Join(dir, "step-30.pt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "step-10.pt")); err != nil {
		t.Fatal(err)
	}
	push(t, m, true)
	if b, err := store.Get(ctx, "trials/abc/program/checkpoints/latest.txt"); err != nil || string(b) != "30" {
		t.Errorf("latest.txt = %q, %v", b, err)
	}
	// rewritten at once with as many bytes: the mtime may not have moved, the bytes have
	writeAt(t, dir, "latest.txt", "31")
	push(t, m, true)
	// an old file whose size and mtime are as they were is not read again
	old := time.Now().Add(-time.Hour)
	latest := filepath.Join(dir, "latest.txt")
	if err := os.Chtimes(latest, old, old); err != nil {
		t.Fatal(err)
	}
	push(t, m, false) // read again, the same bytes
	writeAt(t, dir, "latest.txt", "32")
	if err := os.Chtimes(latest, old, old); err != nil {
		t.Fatal(err)
	}
	push(t, m, false)
	writeAt(t, dir, "latest.txt", "30")
	push(t, m, true)
	steps, err := m.Steps(ctx)
	if err != nil || !slices.Equal(steps, []int{20, 30}) {
		t.Errorf("Steps = %v, %v; want [20 30]", steps, err)
	}

	// another machine resumes from the store: the newest checkpoint and the files of no
	// step, not the older checkpoints
	other := &Mirror{Store: store, Prefix: m.Prefix, Dir: filepath.Join(t.TempDir(), "ckpt")}
	if err := other.Restore(ctx); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"step-30.pt": "half", "latest.txt": "30"} {
		if b, err := os.ReadFile(filepath.Join(other.Dir, filepath.FromSlash(name))); err != nil || string(b) != text {
			t.Errorf("restored %s = %q, %v", name, b, err)
		}
	}
	for _, name := range []string{"step-10.pt", "step-000020"} {
		if _, err := os.Stat(filepath.Join(other.Dir, name)); err == nil {
			t.Errorf("restored %s, not the newest checkpoint", name)
		}
	}
	push(t, other, false) // what it restored is what the store holds
	if steps, err := other.Steps(ctx); err != nil || !slices.Equal(steps, []int{20, 30}) {
		t.Errorf("Steps after a restore of the newest = %v, %v: an unrestored checkpoint stays", steps, err)
	}
	// a probe's attempt restores the checkpoint of its step, with the files of no step
	probe := &Mirror{Store: store, Prefix: m.Prefix, Dir: filepath.Join(t.TempDir(), "ckpt")}
	if err := probe.Restore(ctx, 20); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"step-000020/model.pt": "twenty", "step-000020/optim.pt": "opt", "latest.txt": "30"} {
		if b, err := os.ReadFile(filepath.Join(probe.Dir, filepath.FromSlash(name))); err != nil || string(b) != text {
			t.Errorf("probe restored %s = %q, %v", name, b, err)
		}
	}
	if _, err := os.Stat(filepath.Join(probe.Dir, "step-30.pt")); err == nil {
		t.Error("a probe restored the newest checkpoint, which it does not start from")
	}
	// the probe's mirror deletes what it restored and then deleted, as the program says
	if err := os.RemoveAll(filepath.Join(probe.Dir, "step-000020")); err != nil {
		t.Fatal(err)
	}
	push(t, probe, true)
	if steps, err := other.Steps(ctx); err != nil || !slices.Equal(steps, []int{30}) {
		t.Errorf("Steps after deleting step-000020 = %v, %v", steps, err)
	}
	// a mirror that never restored deletes only what it saw
	fresh := &Mirror{Store: store, Prefix: m.Prefix, Dir: t.TempDir()}
	writeAt(t, fresh.Dir, "step-5.pt", "five")
	push(t, fresh, true)
	if got := keys(t, store); !slices.Equal(got, []string{"trials/abc/program/checkpoints/latest.txt", "trials/abc/program/checkpoints/step-30.pt", "trials/abc/program/checkpoints/step-5.pt"}) {
		t.Errorf("store holds %q", got)
	}
	if err := os.RemoveAll(fresh.Dir); err != nil {
		t.Fatal(err)
	}
	if _, err := fresh.Push(ctx, nil); err == nil || len(keys(t, store)) != 3 {
		t.Errorf("Push of a missing directory: %v", err)
	}
}

func TestMirrorBadPrefix(t *testing.T) {
	for _, p := range []string{"", "/abs", "a/../b"} {
		m := &Mirror{Store: newStore(t), Prefix: p, Dir: t.TempDir()}
		if _, err := m.Push(context.Background(), nil); err == nil {
			t.Errorf("Push under prefix %q", p)
		}
		if err := m.Restore(context.Background()); err == nil {
			t.Errorf("Restore under prefix %q", p)
		}
	}
}

// TestRunMirrorsCheckpoints is a trial's attempt as the Train activity runs it: the
// checkpoint the program writes at the rung is in the store when Run returns, and a
// retry elsewhere starts with it.
func TestRunMirrorsCheckpoints(t *testing.T) {
	ctx := context.Background()
	store := newStore(t)
	a := attempt(t, `line {"step": 5, "val_loss": 3.9}
ckpt step-5.pt weights
sleep 50ms
line {"step": 10, "val_loss": 3.5}
ckpt step-10.pt weights
hang`)
	m := &Mirror{Store: store, Prefix: "t/checkpoints", Dir: a.Env["SFSWEEP_CHECKPOINT_DIR"]}
	if err := m.Restore(ctx); err != nil {
		t.Fatal(err)
	}
	a.Until = 10
	a.Mirror = m
	out, err := Run(ctx, a)
	if err != nil || out.Status != Stopped {
		t.Fatalf("Run = %s, %v (%s)", out.Status, err, out.Reason)
	}
	if steps, err := m.Steps(ctx); err != nil || !slices.Equal(steps, []int{5, 10}) {
		t.Errorf("Steps = %v, %v", steps, err)
	}
	retry := &Mirror{Store: store, Prefix: "t/checkpoints", Dir: t.TempDir()}
	if err := retry.Restore(ctx); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(retry.Dir, "step-10.pt")); err != nil || string(b) != "weights" {
		t.Errorf("the retry's checkpoint: %q, %v", b, err)
	}
}

// TestMirrorSettlesFirst: Push uploads what Dir held before settle, with the bytes it held
// then, even where settle renames a newer file over one.
func TestMirrorSettlesFirst(t *testing.T) {
	ctx := context.Background()
	store := newStore(t)
	dir := t.TempDir()
	m := &Mirror{Store: store, Prefix: "c", Dir: dir}
	writeAt(t, dir, "latest", "1")
	_, err := m.Push(ctx, func() error {
		writeAt(t, dir, "latest.tmp", "2")
		if err := os.Rename(filepath.Join(dir, "latest.tmp"), filepath.Join(dir, "latest")); err != nil {
			t.Fatal(err)
		}
		writeAt(t, dir, "step-2", "2")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if b, err := store.Get(ctx, "c/latest"); err != nil || string(b) != "1" || !slices.Equal(keys(t, store), []string{"c/latest"}) {
		t.Fatalf("after a push whose settle wrote step 2: latest %q (%v), keys %v", b, err, keys(t, store))
	}
	push(t, m, true)
	if b, _ := store.Get(ctx, "c/latest"); string(b) != "2" || !slices.Equal(keys(t, store), []string{"c/latest", "c/step-2"}) {
		t.Fatalf("the next push: latest %q, keys %v", b, keys(t, store))
	}
	if _, err := m.Push(ctx, func() error { return errors.New("no curves") }); err == nil {
		t.Fatal("a failed settle: no error")
	}
}

// orderedStore fails a test that sees a checkpoint stored before the line of its step.
type orderedStore struct {
	blob.Store
	t      *testing.T
	synced *atomic.Int64 // the last step the curves recorded
	puts   atomic.Int64
}

func (s *orderedStore) Put(ctx context.Context, key string, data []byte) error {
	step, err := strconv.Atoi(string(data))
	if err != nil {
		s.t.Errorf("checkpoint %s: %q", key, data)
	} else if got := s.synced.Load(); int64(step) > got {
		s.t.Errorf("checkpoint %s of step %d stored with the curves at step %d", key, step, got)
	}
	s.puts.Add(1)
	return s.Store.Put(ctx, key, data)
}

// TestRunStoresLinesBeforeCheckpoints: a program that checkpoints right after each line
// never has a checkpoint stored ahead of its curves, however the polls fall; a run resumed
// from any stored checkpoint has every line before it.
func TestRunStoresLinesBeforeCheckpoints(t *testing.T) {
	for round := range 5 {
		var seen, synced atomic.Int64
		store := &orderedStore{Store: newStore(t), t: t, synced: &synced}
		a := attempt(t, "train 300")
		a.Poll = time.Duration(1+round) * time.Millisecond
		a.Mirror = &Mirror{Store: store, Prefix: "c", Dir: a.Env["SFSWEEP_CHECKPOINT_DIR"]}
		if err := a.Mirror.Restore(context.Background()); err != nil {
			t.Fatal(err)
		}
		a.OnMetric = func(m Metric) { seen.Store(int64(m.Step)) }
		a.Sync = func(context.Context) error { synced.Store(seen.Load()); return nil }
		out, err := Run(context.Background(), a)
		if err != nil || out.Status != Completed || out.Last.Step != 300 {
			t.Fatalf("round %d: Run = %s at step %d, %v (%s)", round, out.Status, out.Last.Step, err, out.Reason)
		}
		if b, err := store.Get(context.Background(), "c/latest"); err != nil || string(b) != "300" {
			t.Fatalf("round %d: the last checkpoint: %q, %v", round, b, err)
		}
		if store.puts.Load() < 3 {
			t.Errorf("round %d: %d uploads: the polls never fell while the program ran", round, store.puts.Load())
		}
	}
}
