package temporalclient

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"flag"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestFromEnvAndFlags(t *testing.T) {
	env := map[string]string{
		EnvAddress:   "temporal.example:7233",
		EnvNamespace: "sweeps",
		EnvTLS:       "true",
		EnvCACert:    "/etc/ca.pem",
	}
	o, err := FromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if o.Address != "temporal.example:7233" || o.Namespace != "sweeps" || !o.TLS || o.CACert != "/etc/ca.pem" {
		t.Fatalf("FromEnv = %+v", o)
	}
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	o.RegisterFlags(fs)
	if err := fs.Parse([]string{"-temporal-namespace", "other", "-temporal-tls=false"}); err != nil {
		t.Fatal(err)
	}
	if o.Address != "temporal.example:7233" || o.Namespace != "other" || o.TLS {
		t.Fatalf("after flags: %+v", o)
	}
	if _, err := FromEnv(func(k string) string { return map[string]string{EnvTLS: "maybe"}[k] }); err == nil || !strings.Contains(err.Error(), `TEMPORAL_TLS="maybe"`) {
		t.Fatalf("FromEnv with TEMPORAL_TLS=maybe: %v", err)
	}
}

func TestClientOptions(t *testing.T) {
	c, err := Options{}.ClientOptions()
	if err != nil {
		t.Fatal(err)
	}
	if c.HostPort != DefaultAddress || c.Namespace != DefaultNamespace || c.ConnectionOptions.TLS != nil || c.Credentials != nil {
		t.Fatalf("zero Options: %+v", c)
	}
	c, err = Options{Address: "cloud.example:7233", APIKey: "k"}.ClientOptions()
	if err != nil {
		t.Fatal(err)
	}
	if c.Credentials == nil || c.ConnectionOptions.TLS == nil {
		t.Fatal("API key without credentials or TLS")
	}
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{Address: "no-port"}, `address "no-port"`},
		{Options{ClientCert: "c.pem"}, `client certificate "c.pem" and key ""`},
		{Options{ServerName: "x"}, `server name "x": needs TLS`},
		{Options{CACert: "/nonexistent/ca.pem"}, "CA certificate"},
		{Options{CACert: os.Args[0]}, "no PEM certificate"},
	} {
		if _, err := tc.o.ClientOptions(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error containing %q", tc.o, err, tc.want)
		}
	}
}

// TestMutualTLS dials a TLS server that requires a client certificate signed by a test CA,
// and checks that the handshake presents the configured certificate and verifies the
// server's against the configured CA.
func TestMutualTLS(t *testing.T) {
	dir := t.TempDir()
	ca, caKey := newCert(t, "test-ca", nil, nil, true)
	writePEM(t, filepath.Join(dir, "ca.pem"), "CERTIFICATE", ca.Raw)
	srvCert, srvKey := newCert(t, "temporal.test", ca, caKey, false)
	cliCert, cliKey := newCert(t, "sfsweep-worker", ca, caKey, false)
	writePEM(t, filepath.Join(dir, "client.pem"), "CERTIFICATE", cliCert.Raw)
	keyDER, _ := x509.MarshalECPrivateKey(cliKey)
	writePEM(t, filepath.Join(dir, "client.key"), "EC PRIVATE KEY", keyDER)

	pool := x509.NewCertPool()
	pool.AddCert(ca)
	serve := func() (string, chan string) {
		peers := make(chan string, 16)
		ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{
			Certificates: []tls.Certificate{{Certificate: [][]byte{srvCert.Raw}, PrivateKey: srvKey}},
			ClientAuth:   tls.RequireAndVerifyClientCert,
			ClientCAs:    pool,
			NextProtos:   []string{"h2"},
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				tc := c.(*tls.Conn)
				r := "handshake failed"
				if tc.Handshake() == nil {
					r = tc.ConnectionState().PeerCertificates[0].Subject.CommonName
				}
				select {
				case peers <- r:
				default:
				}
				c.Close()
			}
		}()
		return ln.Addr().String(), peers
	}
	addr, peers := serve()

	o := Options{
		Address:    addr,
		CACert:     filepath.Join(dir, "ca.pem"),
		ClientCert: filepath.Join(dir, "client.pem"),
		ClientKey:  filepath.Join(dir, "client.key"),
		ServerName: "temporal.test",
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	// the test server speaks no gRPC, so Dial fails after the handshake
	if c, err := Dial(ctx, o); err == nil {
		c.Close()
		t.Fatal("Dial to a server without gRPC succeeded")
	}
	if got := <-peers; got != "sfsweep-worker" {
		t.Fatalf("server saw client %q, want sfsweep-worker", got)
	}

	// without a client certificate the server refuses the handshake
	o.ClientCert, o.ClientKey = "", ""
	o.Address, peers = serve()
	ctx2, cancel2 := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel2()
	if c, err := Dial(ctx2, o); err == nil {
		c.Close()
	}
	if got := <-peers; got != "handshake failed" {
		t.Fatalf("handshake without a client certificate: %q", got)
	}
}

func newCert(t *testing.T, cn string, parent *x509.Certificate, parentKey *ecdsa.PrivateKey, isCA bool) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:              []string{cn},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		IsCA:                  isCA,
		BasicConstraintsValid: true,
	}
	if parent == nil {
		parent, parentKey = tmpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c, key
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}
