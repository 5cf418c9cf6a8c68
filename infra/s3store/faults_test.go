package s3store_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/retry"

	"github.com/sfsweep/sfsweep/infra/s3gw"
	"github.com/sfsweep/sfsweep/infra/s3store"
	"github.com/sfsweep/sfsweep/internal/blob"
	"github.com/sfsweep/sfsweep/internal/faultproxy"
)

// faultLab is a gateway, a store that reaches it directly (to set up and check objects)
// and the means to reach it through fault-injecting proxies.
type faultLab struct {
	gw     *s3gw.Gateway
	direct *s3store.Store
}

func newFaultLab(t *testing.T) *faultLab {
	g := startGateway(t)
	return &faultLab{gw: g, direct: newStore(t, g.StoreConfig(""))}
}

// recorder is a proxy's Decide function that also keeps every request it was asked about.
type recorder struct {
	decide func(faultproxy.Request) faultproxy.Fault
	mu     sync.Mutex
	seen   []faultproxy.Request
}

func (r *recorder) Decide(req faultproxy.Request) faultproxy.Fault {
	r.mu.Lock()
	r.seen = append(r.seen, req)
	r.mu.Unlock()
	return r.decide(req)
}

// requests returns the requests seen with method and key.
func (r *recorder) requests(method, key string) []faultproxy.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []faultproxy.Request
	for _, q := range r.seen {
		if q.Method == method && q.Key == key {
			out = append(out, q)
		}
	}
	return out
}

// proxy starts a proxy to the gateway that decides with rec (if not nil) and opts, and a
// store that reaches the gateway through it with prefix and cfg's retry settings.
func (l *faultLab) proxy(t *testing.T, rec *recorder, opts faultproxy.Options, prefix string, cfg s3store.Config) (*faultproxy.Proxy, *s3store.Store) {
	t.Helper()
	opts.Upstream = l.gw.Endpoint()
	if rec != nil {
		opts.Decide = rec.Decide
	}
	p, err := faultproxy.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Error(err)
		}
	})
	creds := l.gw.Credentials()
	cfg.Endpoint, cfg.Region, cfg.Bucket, cfg.Prefix, cfg.Credentials = p.URL(), l.gw.Region(), l.gw.Bucket(), prefix, &creds
	return p, newStore(t, cfg)
}

// objectFile returns the bytes of the file that holds the object of key.
func (l *faultLab) objectFile(t *testing.T, key string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(l.gw.Root(), l.gw.Bucket(), filepath.FromSlash(key)))
	if err != nil {
		t.Fatalf("file of object %s: %v", key, err)
	}
	return b
}

func randomBytes(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, uint64(n)))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// faultKinds are the faults that fail an attempt.
var faultKinds = []faultproxy.Fault{faultproxy.Error500, faultproxy.Error503, faultproxy.Drop, faultproxy.Truncate, faultproxy.Stall}

// op is one store operation on the object of key under the store's prefix: set up runs
// on the direct store (the whole key), run on the store under test, check on the direct
// store afterwards. method and key name the operation's request at the proxy.
type op struct {
	name   string
	method string
	setUp  func(ctx context.Context, direct *s3store.Store, key string) error
	run    func(ctx context.Context, s *s3store.Store, key string) error
	check  func(ctx context.Context, direct *s3store.Store, key string) error
	proxyK func(prefix, key string) string // the proxy's Key of the request
}

// ops returns Put, Get, List and Delete over data.
func ops(data []byte) []op {
	put := func(ctx context.Context, s *s3store.Store, key string) error { return s.Put(ctx, key, data) }
	objectKey := func(prefix, key string) string { return prefix + "/" + key }
	return []op{
		{
			name: "Put", method: http.MethodPut, proxyK: objectKey,
			run: put,
			check: func(ctx context.Context, d *s3store.Store, key string) error {
				got, err := d.Get(ctx, key)
				if err == nil && !bytes.Equal(got, data) {
					err = fmt.Errorf("stored %d bytes, want the %d put", len(got), len(data))
				}
				return err
			},
		},
		{
			name: "Get", method: http.MethodGet, proxyK: objectKey,
			setUp: put,
			run: func(ctx context.Context, s *s3store.Store, key string) error {
				got, err := s.Get(ctx, key)
				if err == nil && !bytes.Equal(got, data) {
					err = fmt.Errorf("got %d bytes, want the %d stored", len(got), len(data))
				}
				return err
			},
		},
		{
			name: "List", method: http.MethodGet, proxyK: func(string, string) string { return "" },
			setUp: func(ctx context.Context, d *s3store.Store, key string) error {
				for _, k := range []string{key, key + "-2", key + "-3"} {
					if err := d.Put(ctx, k, data[:1]); err != nil {
						return err
					}
				}
				return nil
			},
			run: func(ctx context.Context, s *s3store.Store, key string) error {
				got, err := s.List(ctx, "")
				if want := []string{key, key + "-2", key + "-3"}; err == nil && !slices.Equal(got, want) {
					err = fmt.Errorf("listed %q, want %q", got, want)
				}
				return err
			},
		},
		{
			name: "Delete", method: http.MethodDelete, proxyK: objectKey,
			setUp: put,
			run:   func(ctx context.Context, s *s3store.Store, key string) error { return s.Delete(ctx, key) },
			check: func(ctx context.Context, d *s3store.Store, key string) error {
				if _, err := d.Get(ctx, key); !errors.Is(err, blob.ErrNotFound) {
					return fmt.Errorf("object still there after Delete: %v", err)
				}
				return nil
			},
		},
	}
}

// TestFaultOnFirstAttempt injects each fault into the first request of each operation:
// the operation succeeds, its data round-trips, and the proxy saw the fault and a retry.
// A Slow first attempt succeeds within the response timeout, without a retry; a Stall is
// cut by the 500 ms response timeout and retried.
func TestFaultOnFirstAttempt(t *testing.T) {
	l := newFaultLab(t)
	ctx := context.Background()
	const slowDelay, responseTimeout = 50 * time.Millisecond, 500 * time.Millisecond
	data := randomBytes(1, 300<<10)
	for _, o := range ops(data) {
		for _, f := range append(slices.Clone(faultKinds), faultproxy.Slow) {
			t.Run(o.name+"/"+f.String(), func(t *testing.T) {
				prefix := "first/" + o.name + "-" + f.String()
				key := "obj"
				rec := &recorder{decide: func(r faultproxy.Request) faultproxy.Fault {
					if r.Method == o.method && r.N == 1 {
						return f
					}
					return faultproxy.None
				}}
				p, s := l.proxy(t, rec, faultproxy.Options{SlowDelay: slowDelay}, prefix,
					s3store.Config{MaxBackoff: 5 * time.Millisecond, ResponseTimeout: responseTimeout})
				if o.setUp != nil {
					if err := o.setUp(ctx, l.direct, prefix+"/"+key); err != nil {
						t.Fatal(err)
					}
				}
				start := time.Now()
				if err := o.run(ctx, s, key); err != nil {
					t.Fatalf("%s with %v on the first attempt: %v", o.name, f, err)
				}
				elapsed := time.Since(start)
				if o.check != nil {
					if err := o.check(ctx, l.direct, prefix+"/"+key); err != nil {
						t.Fatal(err)
					}
				}
				pk := o.proxyK(prefix, key)
				ev := p.Events()
				if len(ev) != 1 || ev[0].Fault != f || ev[0].Method != o.method || ev[0].Key != pk || ev[0].N != 1 {
					t.Fatalf("events %+v, want one %v on %s %q, N=1", ev, f, o.method, pk)
				}
				var ns []int
				for _, r := range rec.requests(o.method, pk) {
					ns = append(ns, r.N)
				}
				want := []int{1, 2}
				if f == faultproxy.Slow {
					want = []int{1}
				}
				if !slices.Equal(ns, want) {
					t.Fatalf("%s %q sent with N = %v, want %v", o.method, pk, ns, want)
				}
				switch f {
				case faultproxy.Slow:
					if elapsed < slowDelay {
						t.Errorf("%s took %v, less than the delay %v", o.name, elapsed, slowDelay)
					}
				case faultproxy.Stall:
					if elapsed < responseTimeout || elapsed > 5*time.Second {
						t.Errorf("%s took %v with a stall, want the response timeout %v and a retry", o.name, elapsed, responseTimeout)
					}
				}
			})
		}
	}
}

// TestPutStopsBeingRead: the server takes half of a 64 MiB upload and then stops
// reading, with no answer. The write that the full connection buffers leave blocked fails
// after the response timeout, and the retry stores the object whole. Without a bound on
// writes the Put would hang until its context ends (a minute here).
func TestPutStopsBeingRead(t *testing.T) {
	l := newFaultLab(t)
	rec := &recorder{decide: func(r faultproxy.Request) faultproxy.Fault {
		if r.Method == "PUT" && r.N == 1 {
			return faultproxy.StallRead
		}
		return faultproxy.None
	}}
	const responseTimeout = 500 * time.Millisecond
	p, s := l.proxy(t, rec, faultproxy.Options{StallFor: 10 * time.Minute}, "stall-read",
		s3store.Config{MaxBackoff: 5 * time.Millisecond, ResponseTimeout: responseTimeout})
	data := randomBytes(3, 64<<20)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	if err := s.Put(ctx, "obj", data); err != nil {
		t.Fatalf("Put after %v: %v", time.Since(start), err)
	}
	var ns []int
	for _, r := range rec.requests("PUT", "stall-read/obj") {
		ns = append(ns, r.N)
	}
	if ev := p.Events(); len(ev) != 1 || ev[0].Fault != faultproxy.StallRead || !slices.Equal(ns, []int{1, 2}) {
		t.Fatalf("events %+v, PUT sent with N = %v; want one stall-read, then a retry", ev, ns)
	}
	if !bytes.Equal(l.objectFile(t, "stall-read/obj"), data) {
		t.Fatal("the stored object differs from the one put")
	}
	t.Logf("Put of %d MiB with a stalled first attempt: %v (response timeout %v)", len(data)>>20, time.Since(start), responseTimeout)
}

// TestFaultOnEveryAttempt makes every attempt of an operation fail: the operation fails
// promptly, after exactly MaxAttempts requests, with an error naming its key.
func TestFaultOnEveryAttempt(t *testing.T) {
	l := newFaultLab(t)
	ctx := context.Background()
	const attempts = 3
	const responseTimeout = 200 * time.Millisecond
	for _, o := range ops(randomBytes(2, 10<<10)) {
		for _, f := range faultKinds {
			t.Run(o.name+"/"+f.String(), func(t *testing.T) {
				prefix := "every/" + o.name + "-" + f.String()
				key := "obj"
				rec := &recorder{decide: func(r faultproxy.Request) faultproxy.Fault {
					if r.Method == o.method {
						return f
					}
					return faultproxy.None
				}}
				p, s := l.proxy(t, rec, faultproxy.Options{}, prefix, s3store.Config{
					MaxAttempts: attempts, MaxBackoff: 5 * time.Millisecond, ResponseTimeout: responseTimeout,
				})
				if o.setUp != nil {
					if err := o.setUp(ctx, l.direct, prefix+"/"+key); err != nil {
						t.Fatal(err)
					}
				}
				start := time.Now()
				err := o.run(ctx, s, key)
				elapsed := time.Since(start)
				if err == nil {
					t.Fatalf("%s succeeded with %v on every attempt", o.name, f)
				}
				want := "s3://" + l.gw.Bucket() + "/" + prefix + "/"
				if o.name != "List" {
					want += key
				}
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not name %s", err, want)
				}
				var mae *retry.MaxAttemptsError
				if !errors.As(err, &mae) || mae.Attempt != attempts {
					t.Errorf("error %q: want the SDK's error after %d attempts", err, attempts)
				}
				if n := p.Requests(); n != attempts {
					t.Errorf("%d requests reached the proxy, want %d", n, attempts)
				}
				if limit := attempts*responseTimeout + 2*time.Second; elapsed > limit {
					t.Errorf("%s failed after %v, want at most %v", o.name, elapsed, limit)
				}
			})
		}
	}
}

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

// TestRetryQuotaOff sends more failing attempts than the SDK's retry quota allows: with
// it, operations would fail with "retry quota exceeded" once its 500 tokens are spent.
func TestRetryQuotaOff(t *testing.T) {
	l := newFaultLab(t)
	ctx := context.Background()
	rec := &recorder{decide: func(r faultproxy.Request) faultproxy.Fault {
		if r.N <= 3 {
			return faultproxy.Error503
		}
		return faultproxy.None
	}}
	p, s := l.proxy(t, rec, faultproxy.Options{}, "quota", s3store.Config{MaxBackoff: time.Millisecond})
	// Each Delete fails three times: 10 tokens spent and 1 returned, so the quota would
	// run out after 56 of them.
	const ops = 80
	for i := range ops {
		if err := s.Delete(ctx, "k"+strconv.Itoa(i)); err != nil {
			t.Fatalf("Delete %d: %v", i, err)
		}
	}
	if n := p.Requests(); n != 4*ops {
		t.Fatalf("%d requests, want %d", n, 4*ops)
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

// fakeS3 is an S3 endpoint for GetObject only that answers with body but lets answer
// change each attempt's response first: attempt n (from 1) gets answer(n, w) and, if it
// returns true, nothing else.
func fakeS3(t *testing.T, body []byte, answer func(n int, w http.ResponseWriter, r *http.Request) bool) (*httptest.Server, *atomic.Int32) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if answer(int(n.Add(1)), w, r) {
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func fakeStore(t *testing.T, endpoint string, cfg s3store.Config) *s3store.Store {
	cfg.Endpoint, cfg.Bucket, cfg.Region = endpoint, "b", "us-east-1"
	cfg.Credentials = &s3store.Credentials{AccessKeyID: "K", SecretAccessKey: "S"}
	return newStore(t, cfg)
}

// TestGetBodyStall serves a body that stops halfway and then nothing: Get gives up on the
// attempt after the response timeout and gets the whole body on the next.
func TestGetBodyStall(t *testing.T) {
	body := randomBytes(7, 64<<10)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	srv, n := fakeS3(t, body, func(n int, w http.ResponseWriter, r *http.Request) bool {
		if n > 1 {
			return false
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.Write(body[:len(body)/2])
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-release:
		}
		return true
	})
	const timeout = 200 * time.Millisecond
	s := fakeStore(t, srv.URL, s3store.Config{MaxBackoff: time.Millisecond, ResponseTimeout: timeout})
	start := time.Now()
	got, err := s.Get(context.Background(), "k")
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("Get: %d bytes, %v; want the %d served", len(got), err, len(body))
	}
	if el := time.Since(start); el < timeout || n.Load() != 2 {
		t.Fatalf("Get took %v and %d attempts, want the timeout %v and 2", el, n.Load(), timeout)
	}
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

func TestRetryConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg  s3store.Config
		want string
	}{
		{s3store.Config{Bucket: "b", MaxBackoff: -time.Second}, "max backoff -1s"},
		{s3store.Config{Bucket: "b", ResponseTimeout: -time.Second}, "response timeout -1s"},
	} {
		if _, err := s3store.New(context.Background(), tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v) = %v, want an error containing %q", tc.cfg, err, tc.want)
		}
	}
}
