package checkpoint

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sfsweep/sfsweep/internal/blob"
)

const run = "runs/r1"

// saved returns a local store holding checkpoints of micro-llama at steps under run.
func saved(t *testing.T, steps ...int64) *blob.Dir {
	t.Helper()
	d, err := blob.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range steps {
		if err := Save(context.Background(), d, run, sample(t, "micro-llama", s)); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

func readKey(t *testing.T, d *blob.Dir, key string) []byte {
	t.Helper()
	b, err := d.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func putKey(t *testing.T, d *blob.Dir, key string, b []byte) {
	t.Helper()
	if err := d.Put(context.Background(), key, b); err != nil {
		t.Fatal(err)
	}
}

func TestKeys(t *testing.T) {
	if got := Key("runs/a", 42); got != "runs/a/step-00000042.safetensors" {
		t.Errorf("Key = %q", got)
	}
	if got := SidecarKey("", 123456789); got != "step-123456789.json" {
		t.Errorf("SidecarKey = %q", got)
	}
	d := saved(t)
	for _, p := range []string{"../x", "/abs", "a//b", "a/"} {
		if err := Save(context.Background(), d, p, sample(t, "micro-llama", 1)); err == nil {
			t.Errorf("Save under prefix %q succeeded", p)
		}
		if _, _, err := Latest(context.Background(), d, p); err == nil {
			t.Errorf("Latest under prefix %q succeeded", p)
		}
	}
}

// TestSaveLoad saves, loads back bit for bit, checks the sidecar against an independent
// hash of the stored bytes, and that saving again rewrites identical bytes.
func TestSaveLoad(t *testing.T) {
	ctx := context.Background()
	d := saved(t, 7)
	data := readKey(t, d, Key(run, 7))
	sum := sha256.Sum256(data)
	want := fmt.Sprintf(`{"step":7,"sha256":"%s","size":%d,"version":1}`, hex.EncodeToString(sum[:]), len(data))
	if side := string(readKey(t, d, SidecarKey(run, 7))); side != want {
		t.Errorf("sidecar = %s, want %s", side, want)
	}
	c, err := Load(ctx, d, run, 7)
	if err != nil {
		t.Fatal(err)
	}
	if err := sameCheckpoint(c, sample(t, "micro-llama", 7)); err != nil {
		t.Fatal(err)
	}
	if err := Save(ctx, d, run, sample(t, "micro-llama", 7)); err != nil {
		t.Fatal(err)
	}
	if again := readKey(t, d, Key(run, 7)); string(again) != string(data) {
		t.Error("saving the same checkpoint again wrote different bytes")
	}
	// the streamed file is Encode's, through a store that streams (the Dir) and one that
	// does not
	enc, err := sample(t, "micro-llama", 7).Encode()
	if err != nil {
		t.Fatal(err)
	}
	if string(enc) != string(data) {
		t.Error("the saved file is not Encode's bytes")
	}
	whole := wholeOnly{d}
	if err := Save(ctx, whole, "whole", sample(t, "micro-llama", 7)); err != nil {
		t.Fatal(err)
	}
	if got := readKey(t, d, Key("whole", 7)); string(got) != string(data) {
		t.Error("a store without streams holds other bytes")
	}
	if _, err := Load(ctx, d, run, 8); !errors.Is(err, ErrNoSidecar) {
		t.Errorf("Load of a missing step: %v, want ErrNoSidecar", err)
	}
	// at the root of a store, with no prefix
	if err := Save(ctx, d, "", sample(t, "micro-llama", 2)); err != nil {
		t.Fatal(err)
	}
	if c, _, err := Latest(ctx, d, ""); err != nil || c == nil || c.Step != 2 {
		t.Fatalf("Latest at the root = %v, %v", c, err)
	}
}

// wholeOnly is a store without streams: Save puts its file whole.
type wholeOnly struct{ blob.Store }

// TestLatestSkipsBad damages the newest of three checkpoints in every way a crash, a disk
// or a bad copy can, and checks that Latest falls back to the one before and says why.
func TestLatestSkipsBad(t *testing.T) {
	type damage struct {
		name string
		do   func(t *testing.T, d *blob.Dir)
		want error
	}
	data30 := func(t *testing.T, d *blob.Dir) []byte { return readKey(t, d, Key(run, 30)) }
	rewriteSidecar := func(from, to string) func(t *testing.T, d *blob.Dir) {
		return func(t *testing.T, d *blob.Dir) {
			s := string(readKey(t, d, SidecarKey(run, 30)))
			if !strings.Contains(s, from) {
				t.Fatalf("sidecar %s has no %q", s, from)
			}
			putKey(t, d, SidecarKey(run, 30), []byte(strings.Replace(s, from, to, 1)))
		}
	}
	damages := []damage{
		{"no sidecar", func(t *testing.T, d *blob.Dir) { d.Delete(context.Background(), SidecarKey(run, 30)) }, ErrNoSidecar},
		{"no data", func(t *testing.T, d *blob.Dir) { d.Delete(context.Background(), Key(run, 30)) }, ErrNoData},
		{"truncated to 0", func(t *testing.T, d *blob.Dir) { putKey(t, d, Key(run, 30), nil) }, ErrMismatch},
		{"truncated by 1", func(t *testing.T, d *blob.Dir) { b := data30(t, d); putKey(t, d, Key(run, 30), b[:len(b)-1]) }, ErrMismatch},
		{"truncated to half", func(t *testing.T, d *blob.Dir) { b := data30(t, d); putKey(t, d, Key(run, 30), b[:len(b)/2]) }, ErrMismatch},
		{"appended byte", func(t *testing.T, d *blob.Dir) { putKey(t, d, Key(run, 30), append(data30(t, d), 0)) }, ErrMismatch},
		{"wrong sha", rewriteSidecar(`"sha256":"`, `"sha256":"0`), ErrMismatch},
		{"wrong size", rewriteSidecar(`"size":`, `"size":1`), ErrMismatch},
		{"sidecar of another step", rewriteSidecar(`"step":30`, `"step":20`), ErrMismatch},
		{"sidecar from the future", rewriteSidecar(`"version":1`, `"version":2`), ErrMismatch},
		{"sidecar unknown field", rewriteSidecar(`"version":1`, `"version":1,"x":0`), ErrMismatch},
		{"sidecar garbage", func(t *testing.T, d *blob.Dir) { putKey(t, d, SidecarKey(run, 30), []byte("{\x00")) }, ErrMismatch},
		{"sidecar upper-case sha", func(t *testing.T, d *blob.Dir) {
			s := string(readKey(t, d, SidecarKey(run, 30)))
			i := strings.Index(s, `"sha256":"`) + 10
			putKey(t, d, SidecarKey(run, 30), []byte(s[:i]+strings.ToUpper(s[i:i+64])+s[i+64:]))
		}, ErrMismatch},
		{"rehashed garbage", func(t *testing.T, d *blob.Dir) {
			// bytes that match their sidecar but are not a checkpoint
			b := []byte("not a checkpoint")
			sum := sha256.Sum256(b)
			putKey(t, d, Key(run, 30), b)
			putKey(t, d, SidecarKey(run, 30), fmt.Appendf(nil, `{"step":30,"sha256":"%x","size":%d,"version":1}`, sum, len(b)))
		}, ErrInvalid},
		{"rehashed other step", func(t *testing.T, d *blob.Dir) {
			// the file of step 20 stored as step 30, with a matching sidecar
			b := readKey(t, d, Key(run, 20))
			sum := sha256.Sum256(b)
			putKey(t, d, Key(run, 30), b)
			putKey(t, d, SidecarKey(run, 30), fmt.Appendf(nil, `{"step":30,"sha256":"%x","size":%d,"version":1}`, sum, len(b)))
		}, ErrInvalid},
	}
	for _, dm := range damages {
		t.Run(dm.name, func(t *testing.T) {
			d := saved(t, 10, 20, 30)
			dm.do(t, d)
			c, skipped, err := Latest(context.Background(), d, run)
			if err != nil {
				t.Fatal(err)
			}
			if c == nil || c.Step != 20 {
				t.Fatalf("Latest = %v, want step 20", c)
			}
			if err := sameCheckpoint(c, sample(t, "micro-llama", 20)); err != nil {
				t.Fatal(err)
			}
			if len(skipped) != 1 || skipped[0].Step != 30 || !errors.Is(skipped[0].Reason, dm.want) {
				t.Fatalf("skipped = %v, want step 30 for %v", skipped, dm.want)
			}
			if !strings.Contains(skipped[0].String(), "step 30: ") {
				t.Errorf("Skipped.String() = %q", skipped[0].String())
			}
		})
	}
}

// TestFlipAnyByte flips one bit of each byte of the header and of a spread of the data of
// a checkpoint and checks that verification catches every flip; a few of the flips go
// through the store and Latest, which must fall back to the checkpoint before.
func TestFlipAnyByte(t *testing.T) {
	ctx := context.Background()
	d := saved(t, 1, 2)
	orig := readKey(t, d, Key(run, 2))
	side, err := readSidecar(ctx, d, run, 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := verify(slices.Clone(orig), side); err != nil {
		t.Fatalf("the intact file does not verify: %v", err)
	}
	head := 8 + int(binary.LittleEndian.Uint64(orig))
	var positions []int
	for i := range len(orig) {
		if i < head+64 || i%61 == 0 || i >= len(orig)-8 {
			positions = append(positions, i)
		}
	}
	if len(positions) < 2000 {
		t.Fatalf("only %d positions", len(positions))
	}
	b := slices.Clone(orig)
	for _, i := range positions {
		b[i] ^= 1 << (i % 8)
		if _, err := verify(b, side); !errors.Is(err, ErrMismatch) {
			t.Fatalf("byte %d flipped: verify = %v, want ErrMismatch", i, err)
		}
		b[i] = orig[i]
	}
	for _, i := range []int{0, 7, 8, head / 2, head - 1, head, head + 4, len(orig) / 2, len(orig) - 1} {
		b := slices.Clone(orig)
		b[i] ^= 0x80
		putKey(t, d, Key(run, 2), b)
		c, skipped, err := Latest(ctx, d, run)
		if err != nil || c == nil || c.Step != 1 || len(skipped) != 1 || !errors.Is(skipped[0].Reason, ErrMismatch) {
			t.Fatalf("byte %d flipped: Latest = %v, %v, %v; want step 1, step 2 skipped for ErrMismatch", i, c, skipped, err)
		}
	}
}

func TestLatestNone(t *testing.T) {
	ctx := context.Background()
	d := saved(t)
	c, skipped, err := Latest(ctx, d, run)
	if c != nil || skipped != nil || err != nil {
		t.Fatalf("Latest of an empty store = %v, %v, %v", c, skipped, err)
	}
	d = saved(t, 1, 2)
	d.Delete(ctx, SidecarKey(run, 1))
	putKey(t, d, Key(run, 2), []byte("x"))
	putKey(t, d, Key(run, 3), []byte("partial")) // a save interrupted before its sidecar
	c, skipped, err = Latest(ctx, d, run)
	if c != nil || err != nil {
		t.Fatalf("Latest with no valid checkpoint = %v, %v", c, err)
	}
	want := []error{ErrNoSidecar, ErrMismatch, ErrNoSidecar}
	if len(skipped) != 3 {
		t.Fatalf("skipped = %v", skipped)
	}
	for i, s := range skipped {
		if s.Step != int64(3-i) || !errors.Is(s.Reason, want[i]) {
			t.Errorf("skipped[%d] = %v, want step %d for %v", i, s, 3-i, want[i])
		}
	}
}

// failing is a local store whose Get fails for the keys fail selects, as a remote store
// does in an outage.
type failing struct {
	*blob.Dir
	fail func(key string) bool
}

var errOutage = errors.New("connection reset")

func (f failing) Get(ctx context.Context, key string) ([]byte, error) {
	if f.fail(key) {
		return nil, errOutage
	}
	return f.Dir.Get(ctx, key)
}

// TestLatestStoreError checks that a store failure is an error, never a reason to fall
// back to an older checkpoint.
func TestLatestStoreError(t *testing.T) {
	ctx := context.Background()
	d := saved(t, 1, 2)
	for _, k := range []string{Key(run, 2), SidecarKey(run, 2)} {
		s := failing{d, func(key string) bool { return key == k }}
		if c, _, err := Latest(ctx, s, run); c != nil || !errors.Is(err, errOutage) {
			t.Errorf("Get(%s) failing: Latest = %v, %v; want the store's error", k, c, err)
		}
		if _, err := Load(ctx, s, run, 2); !errors.Is(err, errOutage) {
			t.Errorf("Get(%s) failing: Load error = %v", k, err)
		}
		if err := Prune(ctx, s, run, 1); !errors.Is(err, errOutage) {
			t.Errorf("Get(%s) failing: Prune error = %v", k, err)
		}
	}
	if _, err := List(ctx, failing{d, func(key string) bool { return strings.HasSuffix(key, ".json") }}, run); !errors.Is(err, errOutage) {
		t.Errorf("List with failing sidecars: %v", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, err := Latest(cancelled, d, run); !errors.Is(err, context.Canceled) {
		t.Errorf("Latest with a cancelled context: %v", err)
	}
	if err := Save(cancelled, d, run, sample(t, "micro-llama", 3)); !errors.Is(err, context.Canceled) {
		t.Errorf("Save with a cancelled context: %v", err)
	}
}

func steps(infos []Info) []int64 {
	var out []int64
	for _, in := range infos {
		out = append(out, in.Step)
	}
	return out
}

// remaining lists the objects left under run.
func remaining(t *testing.T, d *blob.Dir) []string {
	t.Helper()
	keys, err := d.List(context.Background(), run+"/")
	if err != nil {
		t.Fatal(err)
	}
	for i, k := range keys {
		keys[i] = strings.TrimPrefix(k, run+"/")
	}
	return keys
}

func TestList(t *testing.T) {
	ctx := context.Background()
	d := saved(t, 0, 5, 10, 100000000)
	putKey(t, d, Key(run, 11), []byte("partial"))               // no sidecar
	putKey(t, d, run+"/notes.txt", []byte("x"))                 // not a checkpoint
	putKey(t, d, run+"/step-5.json", []byte("x"))               // not a name Save writes
	putKey(t, d, run+"/sub/step-00000001.json", []byte("x"))    // deeper
	putKey(t, d, "runs/r12/step-00000009.json", []byte("x"))    // a sibling prefix
	putKey(t, d, SidecarKey(run, 12), []byte(`{"step":12}`))    // sidecar without data
	putKey(t, d, SidecarKey(run, 5), []byte(`{"step":"five"}`)) // unreadable sidecar
	infos, err := List(ctx, d, run)
	if err != nil {
		t.Fatal(err)
	}
	if got := steps(infos); !slices.Equal(got, []int64{0, 10, 100000000}) {
		t.Fatalf("List steps = %v, want [0 10 100000000]", got)
	}
	data := readKey(t, d, Key(run, 10))
	sum := sha256.Sum256(data)
	if in := infos[1]; in.Key != Key(run, 10) || in.Size != int64(len(data)) || in.SHA256 != hex.EncodeToString(sum[:]) {
		t.Errorf("Info = %+v", in)
	}
}

func TestPrune(t *testing.T) {
	ctx := context.Background()
	d := saved(t, 1, 2, 3, 4, 5, 6)
	putKey(t, d, Key(run, 7), []byte("partial")) // a save in progress
	putKey(t, d, run+"/notes.txt", []byte("x"))
	if err := Prune(ctx, d, run, 0); err == nil {
		t.Fatal("Prune with keepLast 0 succeeded")
	}
	if err := Prune(ctx, d, run, 2, 2); err != nil {
		t.Fatal(err)
	}
	want := []string{"notes.txt", "step-00000002.json", "step-00000002.safetensors", "step-00000005.json", "step-00000005.safetensors",
		"step-00000006.json", "step-00000006.safetensors", "step-00000007.safetensors"}
	if got := remaining(t, d); !slices.Equal(got, want) {
		t.Fatalf("after Prune(2, keep 2): %v, want %v", got, want)
	}
	// The newest is corrupt: it does not count, so the two kept are 5 and 2, and a
	// corrupt checkpoint newer than the kept ones is left alone.
	putKey(t, d, Key(run, 6), []byte("bad"))
	if err := Prune(ctx, d, run, 2); err != nil {
		t.Fatal(err)
	}
	if got := remaining(t, d); !slices.Equal(got, want) {
		t.Fatalf("after Prune(2) with step 6 corrupt: %v, want %v", got, want)
	}
	if err := Prune(ctx, d, run, 1); err != nil {
		t.Fatal(err)
	}
	want = []string{"notes.txt", "step-00000005.json", "step-00000005.safetensors", "step-00000006.json", "step-00000006.safetensors", "step-00000007.safetensors"}
	if got := remaining(t, d); !slices.Equal(got, want) {
		t.Fatalf("after Prune(1): %v, want %v", got, want)
	}
	c, _, err := Latest(ctx, d, run)
	if err != nil || c == nil || c.Step != 5 {
		t.Fatalf("Latest after Prune = %v, %v; want step 5", c, err)
	}
	// fewer checkpoints than keepLast: nothing to delete
	if err := Prune(ctx, d, run, 10); err != nil {
		t.Fatal(err)
	}
	if got := remaining(t, d); !slices.Equal(got, want) {
		t.Fatalf("after Prune(10): %v, want %v", got, want)
	}
	// an interrupted delete (sidecar gone, data left) is cleaned up by the next Prune
	d = saved(t, 1, 2)
	d.Delete(ctx, SidecarKey(run, 1))
	if err := Prune(ctx, d, run, 1); err != nil {
		t.Fatal(err)
	}
	if got := remaining(t, d); !slices.Equal(got, []string{"step-00000002.json", "step-00000002.safetensors"}) {
		t.Fatalf("after Prune of a half-deleted step: %v", got)
	}
	if _, err := os.Stat(filepath.Join(d.Root(), run)); err != nil {
		t.Fatal(err)
	}
}
