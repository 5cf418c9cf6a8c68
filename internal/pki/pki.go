// Package pki keeps the certificates of a small lab's stack (sfsweep server): a
// certificate authority of its own, a server certificate for the names the stack is
// reached by, and one client certificate that workers present to Temporal (mutual TLS).
// Everything is created on the first start and read back on later ones, so that the
// files handed to workers stay valid across restarts; a certificate is issued again only
// when it no longer covers the names asked for, or nears its end.
//
// The files, in one directory (mode 0700), as PEM; keys are written with mode 0600:
//
//	ca.pem, ca-key.pem          the authority (P-256, ten years)
//	server.pem, server-key.pem  the stack's certificate (one year)
//	client.pem, client-key.pem  the workers' certificate (one year)
//
// A file that is there but cannot be read as what it should be is an error naming it:
// the package never replaces a broken authority silently, which would cut every worker
// that holds the old one.
package pki

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
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// The files of a directory.
const (
	CAFile         = "ca.pem"
	caKeyFile      = "ca-key.pem"
	ServerFile     = "server.pem"
	ServerKeyFile  = "server-key.pem"
	ClientFile     = "client.pem"
	ClientKeyFile  = "client-key.pem"
	ClientName     = "sfsweep-worker"
	caLifetime     = 10 * 365 * 24 * time.Hour
	leafLifetime   = 365 * 24 * time.Hour
	renewBefore    = 30 * 24 * time.Hour
	caName         = "sfsweep lab CA"
	serverNameBase = "sfsweep server"
)

// Set is a directory's certificates, loaded.
type Set struct {
	Dir    string
	CA     *x509.Certificate
	Server tls.Certificate
	Client tls.Certificate
	// Issued names the certificates this call created or issued again ("ca", "server",
	// "client"), for the log.
	Issued []string
}

// Ensure loads the certificates under dir, creating what is missing, and issues the
// server certificate again where it does not cover hosts (DNS names or IP addresses) or
// ends within 30 days, and the client certificate where it ends within 30 days.
func Ensure(dir string, hosts []string, now time.Time) (*Set, error) {
	if len(hosts) == 0 {
		return nil, errors.New("pki: no host names for the server certificate")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	s := &Set{Dir: dir}
	caCert, caKey, err := loadPair(dir, CAFile, caKeyFile)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		caCert, caKey, err = newCA(now)
		if err != nil {
			return nil, err
		}
		if err := writePair(dir, CAFile, caKeyFile, caCert.Raw, caKey); err != nil {
			return nil, err
		}
		s.Issued = append(s.Issued, "ca")
	case err != nil:
		return nil, err
	case !caCert.IsCA:
		return nil, fmt.Errorf("pki: %s: not a certificate authority", filepath.Join(dir, CAFile))
	}
	s.CA = caCert
	leaf := func(name, certFile, keyFile string, server bool) (tls.Certificate, error) {
		cert, key, err := loadPair(dir, certFile, keyFile)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return tls.Certificate{}, err
		}
		if err == nil && cert.CheckSignatureFrom(caCert) != nil {
			return tls.Certificate{}, fmt.Errorf("pki: %s: not signed by %s", filepath.Join(dir, certFile), filepath.Join(dir, CAFile))
		}
		if err != nil || now.Add(renewBefore).After(cert.NotAfter) || server && !covers(cert, hosts) {
			cert, key, err = issue(caCert, caKey, name, hosts, server, now)
			if err != nil {
				return tls.Certificate{}, err
			}
			if err := writePair(dir, certFile, keyFile, cert.Raw, key); err != nil {
				return tls.Certificate{}, err
			}
			s.Issued = append(s.Issued, map[bool]string{true: "server", false: "client"}[server])
		}
		return tls.Certificate{Certificate: [][]byte{cert.Raw}, PrivateKey: key, Leaf: cert}, nil
	}
	if s.Server, err = leaf(serverNameBase, ServerFile, ServerKeyFile, true); err != nil {
		return nil, err
	}
	if s.Client, err = leaf(ClientName, ClientFile, ClientKeyFile, false); err != nil {
		return nil, err
	}
	return s, nil
}

// Pool is a pool holding the set's authority.
func (s *Set) Pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(s.CA)
	return p
}

// covers reports whether cert names every host.
func covers(cert *x509.Certificate, hosts []string) bool {
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			if !slices.ContainsFunc(cert.IPAddresses, ip.Equal) {
				return false
			}
		} else if !slices.Contains(cert.DNSNames, h) {
			return false
		}
	}
	return true
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	return n
}

func newCA(now time.Time) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: caName},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(caLifetime),
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign, IsCA: true, BasicConstraintsValid: true,
		MaxPathLenZero: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return cert, key, err
}

// issue signs a leaf: a server's for hosts, or a client's.
func issue(ca *x509.Certificate, caKey *ecdsa.PrivateKey, cn string, hosts []string, server bool, now time.Time) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(), Subject: pkix.Name{CommonName: cn},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(leafLifetime),
		KeyUsage: x509.KeyUsageDigitalSignature, BasicConstraintsValid: true,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		for _, h := range hosts {
			if ip := net.ParseIP(h); ip != nil {
				tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
			} else {
				tmpl.DNSNames = append(tmpl.DNSNames, h)
			}
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return cert, key, err
}

// loadPair reads a certificate and its key; fs.ErrNotExist if neither file is there.
func loadPair(dir, certFile, keyFile string) (*x509.Certificate, *ecdsa.PrivateKey, error) {
	certPath, keyPath := filepath.Join(dir, certFile), filepath.Join(dir, keyFile)
	cb, cerr := os.ReadFile(certPath)
	kb, kerr := os.ReadFile(keyPath)
	switch {
	case errors.Is(cerr, fs.ErrNotExist) && errors.Is(kerr, fs.ErrNotExist):
		return nil, nil, fs.ErrNotExist
	case cerr != nil:
		return nil, nil, fmt.Errorf("pki: %v (its key %s is there)", cerr, keyPath)
	case kerr != nil:
		return nil, nil, fmt.Errorf("pki: %v (its certificate %s is there)", kerr, certPath)
	}
	if fi, err := os.Stat(keyPath); err == nil && fi.Mode().Perm()&0o077 != 0 {
		return nil, nil, fmt.Errorf("pki: %s: mode %v: a key must be readable by its owner only (chmod 600)", keyPath, fi.Mode().Perm())
	}
	block, _ := pem.Decode(cb)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, nil, fmt.Errorf("pki: %s: not a PEM certificate", certPath)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: %s: %w", certPath, err)
	}
	kblock, _ := pem.Decode(kb)
	if kblock == nil || kblock.Type != "EC PRIVATE KEY" {
		return nil, nil, fmt.Errorf("pki: %s: not a PEM EC private key", keyPath)
	}
	key, err := x509.ParseECPrivateKey(kblock.Bytes)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: %s: %w", keyPath, err)
	}
	if pub, ok := cert.PublicKey.(*ecdsa.PublicKey); !ok || !pub.Equal(&key.PublicKey) {
		return nil, nil, fmt.Errorf("pki: %s is not the key of %s", keyPath, certPath)
	}
	return cert, key, nil
}

// writePair writes a certificate (0644) and its key (0600), each by a rename.
func writePair(dir, certFile, keyFile string, der []byte, key *ecdsa.PrivateKey) error {
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	if err := WriteFile(filepath.Join(dir, keyFile), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		return err
	}
	return WriteFile(filepath.Join(dir, certFile), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
}

// WriteFile writes b to path with mode perm through a temporary file and a rename, so
// that a reader never sees half of it and a key is never readable by others even for a
// moment.
func WriteFile(path string, b []byte, perm fs.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
