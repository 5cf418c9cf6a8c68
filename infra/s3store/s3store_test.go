package s3store_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sfsweep/sfsweep/infra/s3gw"
	"github.com/sfsweep/sfsweep/infra/s3store"
	"github.com/sfsweep/sfsweep/internal/blob"
)

// startGateway starts the embedded gateway in a temporary directory for one test.
func startGateway(t testing.TB) *s3gw.Gateway {
	t.Helper()
	dir := t.TempDir()
	g, err := s3gw.Start(context.Background(), s3gw.Options{Root: filepath.Join(dir, "s3")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := g.Stop(); err != nil {
			t.Error(err)
		}
	})
	return g
}

// countingTransport counts the list requests that pass through it.
type countingTransport struct {
	next  http.RoundTripper
	lists atomic.Int64
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodGet && r.URL.Query().Get("list-type") == "2" {
		c.lists.Add(1)
	}
	return c.next.RoundTrip(r)
}

func newStore(t testing.TB, cfg s3store.Config) *s3store.Store {
	t.Helper()
	s, err := s3store.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformanceS3(t *testing.T) {
	g := startGateway(t)
	cfg := g.StoreConfig("sweeps/a")
	cfg.PageSize = 4
	testStore(t, newStore(t, cfg))
	testStreams(t, newStore(t, cfg))
}

// TestListPages lists more keys than fit on one page and checks that every page was asked
// for.
func TestListPages(t *testing.T) {
	g := startGateway(t)
	ctx := context.Background()
	cfg := g.StoreConfig("p")
	ct := &countingTransport{next: cfg.HTTPClient.Transport}
	cfg.PageSize = 3
	cfg.HTTPClient = &http.Client{Transport: ct}
	s := newStore(t, cfg)
	var want []string
	for i := range 10 {
		k := fmt.Sprintf("k/%03d", 9-i)
		if err := s.Put(ctx, k, []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
		want = append(want, k)
	}
	slices.Sort(want)
	ct.lists.Store(0)
	got, err := s.List(ctx, "k/")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("List = %q, want %q", got, want)
	}
	if n := ct.lists.Load(); n != 4 { // ⌈10/3⌉
		t.Fatalf("List sent %d requests for 10 keys at 3 a page, want 4", n)
	}
}

// TestPrefix checks that a store sees only the objects under its prefix, that the prefix
// is applied as written, and that no key reaches outside it.
func TestPrefix(t *testing.T) {
	g := startGateway(t)
	ctx := context.Background()
	root := newStore(t, g.StoreConfig(""))
	a := newStore(t, g.StoreConfig("team/a"))
	b := newStore(t, g.StoreConfig("team/b/"))
	if a.Prefix() != "team/a/" || b.Prefix() != "team/b/" {
		t.Fatalf("prefixes %q, %q", a.Prefix(), b.Prefix())
	}
	if err := a.Put(ctx, "x", []byte("in a")); err != nil {
		t.Fatal(err)
	}
	if got, err := root.Get(ctx, "team/a/x"); err != nil || string(got) != "in a" {
		t.Fatalf("object of a seen from the root: %q, %v", got, err)
	}
	if _, err := b.Get(ctx, "x"); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("b sees a's object: %v", err)
	}
	if keys, err := b.List(ctx, ""); err != nil || len(keys) != 0 {
		t.Fatalf("b.List = %q, %v", keys, err)
	}
	for _, k := range []string{"../b/x", "../../team/b/x", "/team/b/x"} {
		if err := a.Put(ctx, k, []byte("escaped")); err == nil {
			t.Errorf("a.Put(%q) succeeded", k)
		}
	}
	for _, p := range []string{"../", "..", "./", "a/../"} {
		if _, err := a.List(ctx, p); err == nil {
			t.Errorf("a.List(%q) succeeded", p)
		}
	}
	if keys, err := root.List(ctx, ""); err != nil || !slices.Equal(keys, []string{"team/a/x"}) {
		t.Fatalf("bucket holds %q, %v; want only team/a/x", keys, err)
	}
	// the object is a plain file at Root/bucket/prefix/key
	b2, err := os.ReadFile(filepath.Join(g.Root(), g.Bucket(), "team", "a", "x"))
	if err != nil || string(b2) != "in a" {
		t.Fatalf("file of the object: %q, %v", b2, err)
	}
}

func TestConfigErrors(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		cfg  s3store.Config
		want string
	}{
		{s3store.Config{}, "bucket: must be set"},
		{s3store.Config{Bucket: "a/b"}, `bucket "a/b"`},
		{s3store.Config{Bucket: "b", Prefix: "../x"}, `prefix "../x"`},
		{s3store.Config{Bucket: "b", Prefix: "/abs"}, `prefix "/abs"`},
		{s3store.Config{Bucket: "b", Endpoint: "localhost:9000"}, `endpoint "localhost:9000"`},
		{s3store.Config{Bucket: "b", MaxAttempts: -1}, "max attempts -1"},
		{s3store.Config{Bucket: "b", PageSize: 5000}, "page size 5000"},
		{s3store.Config{Bucket: "b", Endpoint: "http://h", Credentials: &s3store.Credentials{AccessKeyID: "K"}}, "credentials"},
	} {
		_, err := s3store.New(ctx, tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v) = %v, want an error containing %q", tc.cfg, err, tc.want)
		}
	}
}

func TestCredentialsRedacted(t *testing.T) {
	c := s3store.Credentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"}
	cfg := s3store.Config{Bucket: "b", Credentials: &c}
	for _, s := range []string{fmt.Sprint(c), fmt.Sprintf("%v %+v %#v %s", c, c, c, c), fmt.Sprintf("%+v %#v", cfg, cfg)} {
		if strings.Contains(s, c.SecretAccessKey) {
			t.Errorf("secret printed: %s", s)
		}
	}
	if !strings.Contains(fmt.Sprint(c), "AKIDEXAMPLE") {
		t.Errorf("access key ID missing from %s", c)
	}
}
