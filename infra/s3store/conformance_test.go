package s3store_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/sfsweep/sfsweep/internal/blob"
)

// testStore is the conformance suite of blob.Store: every implementation must pass it.
func testStore(t *testing.T, s blob.Store) {
	ctx := context.Background()
	t.Run("missing", func(t *testing.T) {
		if _, err := s.Get(ctx, "trials/none/result.json"); !errors.Is(err, blob.ErrNotFound) {
			t.Fatalf("Get of a missing key: %v, want ErrNotFound", err)
		}
		if err := s.Delete(ctx, "trials/none/result.json"); err != nil {
			t.Fatalf("Delete of a missing key: %v", err)
		}
		list(t, s, "trials/")
	})

	t.Run("put-get-overwrite", func(t *testing.T) {
		put(t, s, "t/2/x.json", []byte("two"))
		put(t, s, "t/1/x.json", []byte("one"))
		put(t, s, "u/y", []byte("why"))
		if b := get(t, s, "t/1/x.json"); string(b) != "one" {
			t.Fatalf("Get = %q, want %q", b, "one")
		}
		put(t, s, "t/1/x.json", []byte("new, and longer than before"))
		if b := get(t, s, "t/1/x.json"); string(b) != "new, and longer than before" {
			t.Fatalf("Get after overwrite = %q", b)
		}
		put(t, s, "t/1/x.json", []byte("s")) // shorter: no tail of the old object may remain
		if b := get(t, s, "t/1/x.json"); string(b) != "s" {
			t.Fatalf("Get after shorter overwrite = %q", b)
		}
		put(t, s, "empty", nil)
		if b := get(t, s, "empty"); len(b) != 0 {
			t.Fatalf("Get(empty) = %d bytes, want 0", len(b))
		}
		// every byte value, and an object of more than one network buffer
		big := make([]byte, 3<<20+17)
		for i := range big {
			big[i] = byte(i*7 + i>>11)
		}
		put(t, s, "bin/all-bytes", big)
		if b := get(t, s, "bin/all-bytes"); !bytes.Equal(b, big) {
			t.Fatalf("Get(bin/all-bytes): %d bytes, differs from the %d put", len(b), len(big))
		}
	})

	t.Run("list", func(t *testing.T) {
		list(t, s, "t/", "t/1/x.json", "t/2/x.json")
		list(t, s, "t/1", "t/1/x.json")
		list(t, s, "t/1/x.json", "t/1/x.json")
		list(t, s, "u", "u/y")
		list(t, s, "nothing/")
		list(t, s, "", "bin/all-bytes", "empty", "t/1/x.json", "t/2/x.json", "u/y")
		// lexical order is byte order, not the order of writing
		for _, k := range []string{"order/b", "order/a-z", "order/a", "order/B", "order/a0/b"} {
			put(t, s, k, []byte(k))
		}
		list(t, s, "order/", "order/B", "order/a", "order/a-z", "order/a0/b", "order/b")
	})

	t.Run("delete", func(t *testing.T) {
		if err := s.Delete(ctx, "t/1/x.json"); err != nil {
			t.Fatal(err)
		}
		if err := s.Delete(ctx, "t/1/x.json"); err != nil {
			t.Fatalf("second Delete: %v", err)
		}
		if _, err := s.Get(ctx, "t/1/x.json"); !errors.Is(err, blob.ErrNotFound) {
			t.Fatalf("Get after Delete: %v, want ErrNotFound", err)
		}
		list(t, s, "t/", "t/2/x.json")
	})

	t.Run("invalid-keys", func(t *testing.T) {
		before, err := s.List(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"", "/etc/passwd", "../x", "a/../../b", "a//b", "./a", "a/", `a\b`, "a\x00b", "a\nb"} {
			if err := s.Put(ctx, k, []byte("x")); err == nil {
				t.Errorf("Put(%q) succeeded, want an error", k)
			}
			if _, err := s.Get(ctx, k); err == nil || errors.Is(err, blob.ErrNotFound) {
				t.Errorf("Get(%q) = %v, want an invalid-key error", k, err)
			}
			if err := s.Delete(ctx, k); err == nil {
				t.Errorf("Delete(%q) succeeded, want an error", k)
			}
		}
		after, err := s.List(ctx, "")
		if err != nil || !slices.Equal(before, after) {
			t.Fatalf("invalid keys changed the store: %q → %q (%v)", before, after, err)
		}
	})

	// A reader that races with writers sees one of the whole objects, never a mix or a part.
	t.Run("atomic-overwrite", func(t *testing.T) {
		const n = 256 << 10
		versions := [][]byte{bytes.Repeat([]byte{'a'}, n), bytes.Repeat([]byte{'b'}, n/2), bytes.Repeat([]byte{'c'}, n+1)}
		put(t, s, "race", versions[0])
		var wg sync.WaitGroup
		errc := make(chan error, 64)
		for w := range 2 {
			wg.Go(func() {
				for i := range 10 {
					if err := s.Put(ctx, "race", versions[(w+i)%3]); err != nil {
						errc <- err
						return
					}
				}
			})
		}
		wg.Go(func() {
			for range 30 {
				b, err := s.Get(ctx, "race")
				if err != nil {
					errc <- err
					return
				}
				if !slices.ContainsFunc(versions, func(v []byte) bool { return bytes.Equal(v, b) }) {
					errc <- fmt.Errorf("read %d bytes that are none of the objects written", len(b))
					return
				}
			}
		})
		wg.Wait()
		close(errc)
		for err := range errc {
			t.Error(err)
		}
	})

	t.Run("concurrent-keys", func(t *testing.T) {
		var wg sync.WaitGroup
		var want []string
		for i := range 16 {
			k := fmt.Sprintf("par/%02d", i)
			want = append(want, k)
			wg.Go(func() {
				if err := s.Put(ctx, k, []byte(k)); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		list(t, s, "par/", want...)
		for _, k := range want {
			if b := get(t, s, k); string(b) != k {
				t.Fatalf("Get(%q) = %q", k, b)
			}
		}
	})
}

// testStreams checks a store's streams (blob.Streams): an object put from a reader and got
// into a writer is the same bytes, past the size of one part (a multipart upload of S3); a
// reader that gives fewer or more bytes than it said fails the put and leaves the object
// as it was; a missing key writes nothing.
func testStreams(t *testing.T, s blob.Store) {
	ctx := context.Background()
	ss, ok := s.(blob.Streams)
	if !ok {
		t.Fatalf("%T has no streams", s)
	}
	for _, n := range []int{0, 1000, 40<<20 + 7} {
		data := randomBytes(uint64(n), n)
		key := fmt.Sprintf("stream/%d", n)
		if err := ss.PutReader(ctx, key, bytes.NewReader(data), int64(n)); err != nil {
			t.Fatalf("PutReader of %d bytes: %v", n, err)
		}
		if b := get(t, s, key); !bytes.Equal(b, data) {
			t.Fatalf("Get after PutReader of %d bytes: %d bytes, not the same", n, len(b))
		}
		var buf bytes.Buffer
		if got, err := ss.GetWriter(ctx, key, &buf); err != nil || got != int64(n) || !bytes.Equal(buf.Bytes(), data) {
			t.Fatalf("GetWriter of %d bytes: %d, %v, the same bytes %v", n, got, err, bytes.Equal(buf.Bytes(), data))
		}
	}
	old := randomBytes(9, 3<<20)
	put(t, s, "stream/kept", old)
	for _, c := range []struct {
		name string
		give int
	}{{"short", 20 << 20}, {"long", 40<<20 + 1}, {"small-long", 11}} {
		said := int64(40 << 20)
		if c.name == "small-long" {
			said = 10
		}
		err := ss.PutReader(ctx, "stream/kept", bytes.NewReader(randomBytes(3, c.give)), said)
		var se blob.SizeError
		if !errors.As(err, &se) {
			t.Errorf("PutReader of %d bytes said to be %d: %v, want a SizeError", c.give, said, err)
		}
		if b := get(t, s, "stream/kept"); !bytes.Equal(b, old) {
			t.Fatalf("a failed PutReader (%s) changed the object: %d bytes", c.name, len(b))
		}
	}
	var buf bytes.Buffer
	if _, err := ss.GetWriter(ctx, "stream/none", &buf); !errors.Is(err, blob.ErrNotFound) || buf.Len() > 0 {
		t.Fatalf("GetWriter of a missing key: %v, %d bytes written; want ErrNotFound, none", err, buf.Len())
	}
}

func TestConformanceDir(t *testing.T) {
	d, err := blob.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	testStore(t, d)
	testStreams(t, d)
}

func put(t *testing.T, s blob.Store, k string, v []byte) {
	t.Helper()
	if err := s.Put(context.Background(), k, v); err != nil {
		t.Fatalf("Put(%q): %v", k, err)
	}
}

func get(t *testing.T, s blob.Store, k string) []byte {
	t.Helper()
	b, err := s.Get(context.Background(), k)
	if err != nil {
		t.Fatalf("Get(%q): %v", k, err)
	}
	return b
}

func list(t *testing.T, s blob.Store, p string, want ...string) {
	t.Helper()
	got, err := s.List(context.Background(), p)
	if err != nil {
		t.Fatalf("List(%q): %v", p, err)
	}
	if len(got) != len(want) || (len(want) > 0 && !slices.Equal(got, want)) {
		t.Fatalf("List(%q) = %q, want %q", p, got, want)
	}
}
