// Package tlsproxy terminates TLS in front of a plain-text TCP service. The embedded
// Temporal server and S3 gateway listen in plain text on loopback: sfsweep server puts
// them behind a Proxy on the address the lab reaches them at, and tests do the same with
// a throwaway certificate authority (CA) to run the remote mode's TLS, mutual-TLS and
// HTTPS paths against the real servers.
package tlsproxy

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"sync"
	"time"
)

// CA is a certificate authority for tests: a self-signed P-256 root valid for a day.
type CA struct {
	Cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

// NewCA makes a root certificate with common name cn.
func NewCA(cn string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := template(cn)
	tmpl.IsCA = true
	tmpl.KeyUsage |= x509.KeyUsageCertSign
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, key: key}, nil
}

func template(cn string) *x509.Certificate {
	serial, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	return &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:              []string{cn},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		BasicConstraintsValid: true,
	}
}

// Issue signs a certificate for cn (also valid for 127.0.0.1), usable by a server and a
// client.
func (ca *CA) Issue(cn string) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	der, err := x509.CreateCertificate(rand.Reader, template(cn), ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		return tls.Certificate{}, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, nil
}

// Pool is a certificate pool holding the root.
func (ca *CA) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.Cert)
	return p
}

// WriteCert writes the root certificate as PEM to path.
func (ca *CA) WriteCert(path string) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Cert.Raw}), 0o644)
}

// WriteKeyPair writes a certificate and its key as PEM files (the key with mode 0600).
func WriteKeyPair(c tls.Certificate, certPath, keyPath string) error {
	key, ok := c.PrivateKey.(*ecdsa.PrivateKey)
	if !ok {
		return errors.New("tlsproxy: not an ECDSA key")
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	if err := os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Certificate[0]}), 0o644); err != nil {
		return err
	}
	return os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600)
}

// Proxy accepts TLS connections on 127.0.0.1 and forwards their plain bytes to an upstream
// address.
type Proxy struct {
	ln       net.Listener
	upstream string

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	peers  []string
	failed []error
	wg     sync.WaitGroup
}

// Start listens on a free port of 127.0.0.1 with cfg (its certificates, client
// authentication, ALPN protocols) and forwards every connection to upstream (host:port).
func Start(cfg *tls.Config, upstream string) (*Proxy, error) {
	return Listen("127.0.0.1:0", cfg, upstream)
}

// Listen is Start on addr (host:port).
func Listen(addr string, cfg *tls.Config, upstream string) (*Proxy, error) {
	ln, err := tls.Listen("tcp", addr, cfg)
	if err != nil {
		return nil, fmt.Errorf("tlsproxy: listen: %w", err)
	}
	p := &Proxy{ln: ln, upstream: upstream, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// kept is how many handshakes Peers and Failed remember: the latest.
const kept = 256

func keepLast[T any](s []T) []T {
	if len(s) > kept {
		return append(s[:0], s[len(s)-kept:]...)
	}
	return s
}

// Peers lists, per completed handshake (the latest 256), the common name of the client's certificate, or ""
// when the client presented none.
func (p *Proxy) Peers() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.peers...)
}

// Failed lists the errors of the handshakes that failed (the latest 256).
func (p *Proxy) Failed() []error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]error(nil), p.failed...)
}

// Close stops listening and cuts every forwarded connection.
func (p *Proxy) Close() error {
	err := p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	return err
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.wg.Add(1)
		go p.serve(c.(*tls.Conn))
	}
}

func (p *Proxy) track(c net.Conn, on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if on {
		p.conns[c] = struct{}{}
	} else {
		delete(p.conns, c)
	}
}

func (p *Proxy) serve(c *tls.Conn) {
	defer p.wg.Done()
	p.track(c, true)
	defer p.track(c, false)
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if err := c.Handshake(); err != nil {
		p.mu.Lock()
		p.failed = keepLast(append(p.failed, err))
		p.mu.Unlock()
		return
	}
	c.SetDeadline(time.Time{})
	peer := ""
	if certs := c.ConnectionState().PeerCertificates; len(certs) > 0 {
		peer = certs[0].Subject.CommonName
	}
	p.mu.Lock()
	p.peers = keepLast(append(p.peers, peer))
	p.mu.Unlock()

	up, err := net.DialTimeout("tcp", p.upstream, 10*time.Second)
	if err != nil {
		return
	}
	p.track(up, true)
	defer p.track(up, false)
	defer up.Close()
	done := make(chan struct{}, 2)
	go func() { io.Copy(up, c); up.(*net.TCPConn).CloseWrite(); done <- struct{}{} }()
	go func() { io.Copy(c, up); c.CloseWrite(); done <- struct{}{} }()
	<-done
	<-done
}
