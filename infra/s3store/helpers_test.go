package s3store_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

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
