package s3store_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sfsweep/sfsweep/infra/s3store"
	"github.com/sfsweep/sfsweep/internal/faultproxy"
)

// TestTruncatedPutKeepsObjectWhole replaces an object through a proxy that cuts the
// uploads in half: the object, read through the store and as the gateway's file, is the
// old one until a Put succeeds and the new one afterwards, never a part.
func TestTruncatedPutKeepsObjectWhole(t *testing.T) {
	l := newFaultLab(t)
	ctx := context.Background()
	const key = "ckpt/model.bin"
	oldData, newData := randomBytes(3, 200<<10), randomBytes(4, 333<<10)
	if err := l.direct.Put(ctx, key, oldData); err != nil {
		t.Fatal(err)
	}
	var cutAll atomic.Bool
	cutAll.Store(true)
	rec := &recorder{decide: func(r faultproxy.Request) faultproxy.Fault {
		if r.Method == http.MethodPut && (cutAll.Load() || r.N == 4) {
			return faultproxy.Truncate
		}
		return faultproxy.None
	}}
	p, s := l.proxy(t, rec, faultproxy.Options{}, "", s3store.Config{MaxAttempts: 3, MaxBackoff: 5 * time.Millisecond})

	wholeIs := func(want []byte, what string) {
		t.Helper()
		got, err := s.Get(ctx, key)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("Get after %s: %d bytes, %v; want the %d bytes of the %s object", what, len(got), err, len(want), what)
		}
		if f := l.objectFile(t, key); !bytes.Equal(f, want) {
			t.Fatalf("file after %s: %d bytes, want the %d bytes of the %s object", what, len(f), len(want), what)
		}
	}

	if err := s.Put(ctx, key, newData); err == nil || !strings.Contains(err.Error(), key) {
		t.Fatalf("Put with every upload cut: %v, want an error naming %s", err, key)
	}
	wholeIs(oldData, "old")
	cutAll.Store(false) // the fourth PUT is cut, the fifth goes through
	if err := s.Put(ctx, key, newData); err != nil {
		t.Fatal(err)
	}
	wholeIs(newData, "new")
	if n := len(p.Events()); n != 4 {
		t.Fatalf("%d uploads cut, want 4", n)
	}
	if keys, err := l.direct.List(ctx, ""); err != nil || !slices.Equal(keys, []string{key}) {
		t.Fatalf("bucket holds %q, %v; want only %s", keys, err, key)
	}
}

// TestRandomStorm puts and gets objects of 1 B to 1 MiB, from four workers, through a
// proxy that gives 30 % of the requests a random fault: every operation succeeds with the
// right bytes.
func TestRandomStorm(t *testing.T) {
	l := newFaultLab(t)
	ctx := context.Background()
	faults := []faultproxy.Fault{faultproxy.Error500, faultproxy.Error503, faultproxy.Slow, faultproxy.Drop, faultproxy.Truncate}
	p, s := l.proxy(t, nil, faultproxy.Options{Seed: 2026, Rate: 0.3, Faults: faults, SlowDelay: 20 * time.Millisecond},
		"storm", s3store.Config{MaxAttempts: 10, MaxBackoff: 10 * time.Millisecond})
	const objects = 25 // a Put and a Get each
	sizes := make([]int, objects)
	r := rand.New(rand.NewPCG(5, 6))
	for i := range sizes {
		sizes[i] = 1 << r.IntN(21) // 1 B to 1 MiB, evenly over the orders of magnitude
		sizes[i] = min(sizes[i]+r.IntN(sizes[i]), 1<<20)
	}
	sizes[0], sizes[1] = 1, 1<<20
	var wg sync.WaitGroup
	errs := make(chan error, objects)
	for w := range 4 {
		wg.Go(func() {
			for i := w; i < objects; i += 4 {
				key := fmt.Sprintf("obj/%02d", i)
				data := randomBytes(uint64(i), sizes[i])
				if err := s.Put(ctx, key, data); err != nil {
					errs <- err
					continue
				}
				got, err := s.Get(ctx, key)
				if err == nil && !bytes.Equal(got, data) {
					err = fmt.Errorf("get %s: %d bytes, want the %d put", key, len(got), len(data))
				}
				if err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	kinds := map[faultproxy.Fault]int{}
	for _, e := range p.Events() {
		kinds[e.Fault]++
	}
	if len(kinds) != len(faults) {
		t.Errorf("faults injected: %v, want each of %v", kinds, faults)
	}
	t.Logf("%d requests, faults %v", p.Requests(), kinds)
}

// TestGetChecksumMismatch serves a body whose CRC32 does not match the checksum header on
// the first attempt: the SDK's validation fails the read, and Get retries.
func TestGetChecksumMismatch(t *testing.T) {
	body := randomBytes(8, 4096)
	sum := func(b []byte) string {
		return base64.StdEncoding.EncodeToString(binary.BigEndian.AppendUint32(nil, crc32.ChecksumIEEE(b)))
	}
	var mu sync.Mutex
	var modes []string
	srv, n := fakeS3(t, body, func(n int, w http.ResponseWriter, r *http.Request) bool {
		mu.Lock()
		modes = append(modes, r.Header.Get("X-Amz-Checksum-Mode"))
		mu.Unlock()
		if n == 1 {
			w.Header().Set("X-Amz-Checksum-Crc32", sum(body[1:]))
		} else {
			w.Header().Set("X-Amz-Checksum-Crc32", sum(body))
		}
		return false
	})
	s := fakeStore(t, srv.URL, s3store.Config{MaxBackoff: time.Millisecond})
	got, err := s.Get(context.Background(), "k")
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("Get: %d bytes, %v", len(got), err)
	}
	mu.Lock()
	defer mu.Unlock()
	if n.Load() != 2 || !slices.Equal(modes, []string{"ENABLED", "ENABLED"}) {
		t.Fatalf("%d attempts with checksum modes %q, want 2 that ask for checksums", n.Load(), modes)
	}

	// A checksum that never matches fails Get with the SDK's validation error.
	srv2, _ := fakeS3(t, body, func(_ int, w http.ResponseWriter, _ *http.Request) bool {
		w.Header().Set("X-Amz-Checksum-Crc32", sum(body[1:]))
		return false
	})
	s2 := fakeStore(t, srv2.URL, s3store.Config{MaxAttempts: 2, MaxBackoff: time.Millisecond})
	if _, err := s2.Get(context.Background(), "k"); err == nil || !strings.Contains(err.Error(), "checksum") {
		t.Fatalf("Get with a wrong checksum: %v, want a checksum error", err)
	}
}
