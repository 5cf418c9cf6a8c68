package temporalclient

import (
	"context"
	"crypto/tls"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.temporal.io/api/workflowservice/v1"

	"github.com/sfsweep/sfsweep/infra/devserver"
	"github.com/sfsweep/sfsweep/internal/tlsproxy"
)

// The remote mode's TLS paths against the real Temporal server, put behind a TLS
// terminator: server TLS verified against a given CA, mutual TLS with a client
// certificate, and the refusals (an unknown CA, no client certificate, plain text).
func TestTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the embedded Temporal server (-short)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := devserver.Start(ctx, devserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()

	dir := t.TempDir()
	ca, err := tlsproxy.NewCA("sfsweep test CA")
	if err != nil {
		t.Fatal(err)
	}
	caPath := filepath.Join(dir, "ca.pem")
	srvCert, err1 := ca.Issue("temporal.test")
	cliCert, err2 := ca.Issue("sfsweep-worker")
	for _, err := range []error{err1, err2, ca.WriteCert(caPath),
		tlsproxy.WriteKeyPair(cliCert, filepath.Join(dir, "client.pem"), filepath.Join(dir, "client.key"))} {
		if err != nil {
			t.Fatal(err)
		}
	}
	proxy := func(clientAuth tls.ClientAuthType) *tlsproxy.Proxy {
		p, err := tlsproxy.Start(&tls.Config{Certificates: []tls.Certificate{srvCert}, ClientAuth: clientAuth, ClientCAs: ca.Pool(), NextProtos: []string{"h2"}}, srv.HostPort())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		return p
	}
	// dial connects and asks the server for its namespace: a real round trip
	dial := func(o Options) error {
		dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		o.Namespace = devserver.DefaultNamespace
		c, err := Dial(dctx, o)
		if err != nil {
			return err
		}
		defer c.Close()
		_, err = c.WorkflowService().DescribeNamespace(dctx, &workflowservice.DescribeNamespaceRequest{Namespace: devserver.DefaultNamespace})
		return err
	}

	tlsOnly := proxy(tls.NoClientCert)
	if err := dial(Options{Address: tlsOnly.Addr(), CACert: caPath, ServerName: "temporal.test"}); err != nil {
		t.Errorf("TLS with the server's CA: %v", err)
	}
	if err := dial(Options{Address: tlsOnly.Addr(), TLS: true, ServerName: "temporal.test"}); err == nil {
		t.Error("TLS with the system's roots accepted a certificate of an unknown CA")
	}
	if err := dial(Options{Address: tlsOnly.Addr(), CACert: caPath, ServerName: "other.test"}); err == nil {
		t.Error("TLS accepted a certificate for another server name")
	}
	if err := dial(Options{Address: tlsOnly.Addr()}); err == nil {
		t.Error("plain text to a TLS port succeeded")
	}

	mutual := proxy(tls.RequireAndVerifyClientCert)
	o := Options{Address: mutual.Addr(), CACert: caPath, ServerName: "temporal.test",
		ClientCert: filepath.Join(dir, "client.pem"), ClientKey: filepath.Join(dir, "client.key")}
	if err := dial(o); err != nil {
		t.Errorf("mutual TLS: %v", err)
	}
	if peers := mutual.Peers(); len(peers) == 0 || slices.ContainsFunc(peers, func(p string) bool { return p != "sfsweep-worker" }) {
		t.Errorf("the server saw clients %q, want sfsweep-worker", peers)
	}
	o.ClientCert, o.ClientKey = "", ""
	if err := dial(o); err == nil {
		t.Error("mutual TLS without a client certificate succeeded")
	}
	// the server records the failed handshake in its own goroutine, which may end after the
	// client has seen the failure (in TLS 1.3 the client finishes its half first)
	f := mutual.Failed()
	for deadline := time.Now().Add(5 * time.Second); len(f) == 0 && time.Now().Before(deadline); f = mutual.Failed() {
		time.Sleep(10 * time.Millisecond)
	}
	if len(f) == 0 || !strings.Contains(f[len(f)-1].Error(), "certificate") {
		t.Errorf("handshake failures %v, want one without a client certificate", f)
	}
}
