package s3store_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sfsweep/sfsweep/internal/tlsproxy"
)

// HTTPS to S3: the gateway behind a TLS terminator whose certificate is signed by a CA the
// standard AWS configuration chain is given in AWS_CA_BUNDLE; without that CA the store
// refuses the endpoint's certificate.
func TestHTTPS(t *testing.T) {
	g := startGateway(t)
	ca, err := tlsproxy.NewCA("sfsweep test CA")
	if err != nil {
		t.Fatal(err)
	}
	cert, err := ca.Issue("s3.test")
	if err != nil {
		t.Fatal(err)
	}
	caPath := filepath.Join(t.TempDir(), "ca.pem")
	if err := ca.WriteCert(caPath); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(g.Endpoint())
	if err != nil {
		t.Fatal(err)
	}
	p, err := tlsproxy.Start(&tls.Config{Certificates: []tls.Certificate{cert}}, u.Host)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	cfg := g.StoreConfig("secure")
	cfg.Endpoint = "https://" + p.Addr()
	cfg.HTTPClient = nil // the SDK's client, which the configuration chain gives the CA
	cfg.MaxAttempts = 1
	ctx := context.Background()

	t.Setenv("AWS_CA_BUNDLE", caPath)
	s := newStore(t, cfg)
	want := []byte("over TLS")
	if err := s.Put(ctx, "a/b", want); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, "a/b")
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("Get over HTTPS: %q, %v", got, err)
	}
	if keys, err := s.List(ctx, ""); err != nil || len(keys) != 1 || keys[0] != "a/b" {
		t.Fatalf("List over HTTPS: %v, %v", keys, err)
	}
	if len(p.Peers()) == 0 {
		t.Fatal("no request went through the TLS endpoint")
	}

	t.Setenv("AWS_CA_BUNDLE", "")
	untrusted := newStore(t, cfg)
	if _, err := untrusted.Get(ctx, "a/b"); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("Get with a certificate of an unknown CA: %v, want a certificate error", err)
	}

	// the CA given in the config itself, as a worker that joins a lab's stack gives it
	pemCA, err := os.ReadFile(caPath)
	if err != nil {
		t.Fatal(err)
	}
	cfg.CABundle = pemCA
	given := newStore(t, cfg)
	if got, err := given.Get(ctx, "a/b"); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("Get over HTTPS with Config.CABundle: %q, %v", got, err)
	}
}
