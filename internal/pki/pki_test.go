package pki

import (
	"bytes"
	"crypto/tls"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The first call makes the authority and both certificates; the next reads them back;
// new names issue the server certificate again under the same authority; a certificate
// within 30 days of its end is issued again; a handshake with the set's files verifies
// both ways.
func TestEnsure(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tls")
	now := time.Now()
	s, err := Ensure(dir, []string{"lab.example", "10.0.0.7"}, now)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.Issued, []string{"ca", "server", "client"}) {
		t.Fatalf("issued %v on the first call", s.Issued)
	}
	for _, f := range []string{caKeyFile, ServerKeyFile, ClientKeyFile} {
		if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, mode %v", f, err, fi.Mode().Perm())
		}
	}
	ca := read(t, dir, CAFile)
	again, err := Ensure(dir, []string{"lab.example", "10.0.0.7"}, now)
	if err != nil || len(again.Issued) != 0 {
		t.Fatalf("second call: issued %v, %v", again.Issued, err)
	}
	if !bytes.Equal(again.Server.Certificate[0], s.Server.Certificate[0]) {
		t.Error("the second call has another server certificate")
	}
	moved, err := Ensure(dir, []string{"lab.example", "10.0.0.8"}, now)
	if err != nil || !slices.Equal(moved.Issued, []string{"server"}) {
		t.Fatalf("a new address: issued %v, %v", moved.Issued, err)
	}
	if !bytes.Equal(read(t, dir, CAFile), ca) {
		t.Error("a new address made a new authority")
	}
	if !slices.ContainsFunc(moved.Server.Leaf.IPAddresses, net.ParseIP("10.0.0.8").Equal) {
		t.Errorf("server certificate for %v", moved.Server.Leaf.IPAddresses)
	}
	late, err := Ensure(dir, []string{"lab.example", "10.0.0.8"}, now.Add(340*24*time.Hour))
	if err != nil || !slices.Equal(late.Issued, []string{"server", "client"}) {
		t.Fatalf("25 days before the end: issued %v, %v", late.Issued, err)
	}
	handshake(t, moved, "lab.example")
}

// handshake runs mutual TLS between the set's server and client certificates.
func handshake(t *testing.T, s *Set, name string) {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{s.Server}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: s.Pool()})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			io.WriteString(c, "ok")
			c.Close()
		}
	}()
	c, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{RootCAs: s.Pool(), ServerName: name, Certificates: []tls.Certificate{s.Client}})
	if err != nil {
		t.Fatalf("mutual TLS with the set's certificates: %v", err)
	}
	defer c.Close()
	if b, err := io.ReadAll(c); err != nil || string(b) != "ok" {
		t.Fatalf("read %q, %v", b, err)
	}
}

func read(t *testing.T, dir, f string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, f))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// What is there and wrong is an error naming the file, never replaced: a broken
// authority, a key others can read, a certificate of another authority, a key of
// another certificate, one half of a pair.
func TestEnsureRefuses(t *testing.T) {
	now := time.Now()
	fresh := func() string {
		dir := filepath.Join(t.TempDir(), "tls")
		if _, err := Ensure(dir, []string{"lab"}, now); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	other := fresh()
	for _, c := range []struct {
		name, want string
		spoil      func(dir string) error
	}{
		{"broken CA", "ca.pem: not a PEM certificate", func(dir string) error { return os.WriteFile(filepath.Join(dir, CAFile), []byte("garbage"), 0o644) }},
		{"loose key", "chmod 600", func(dir string) error { return os.Chmod(filepath.Join(dir, ServerKeyFile), 0o644) }},
		{"another CA's certificate", "not signed by", func(dir string) error {
			for _, f := range []string{ServerFile, ServerKeyFile} {
				if err := os.WriteFile(filepath.Join(dir, f), read(t, other, f), 0o600); err != nil {
					return err
				}
			}
			return nil
		}},
		{"another certificate's key", "is not the key of", func(dir string) error {
			return os.WriteFile(filepath.Join(dir, ClientKeyFile), read(t, dir, ServerKeyFile), 0o600)
		}},
		{"half a pair", "client.pem", func(dir string) error { return os.Remove(filepath.Join(dir, ClientFile)) }},
	} {
		dir := fresh()
		before := read(t, dir, CAFile)
		if err := c.spoil(dir); err != nil {
			t.Fatal(err)
		}
		_, err := Ensure(dir, []string{"lab"}, now)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.name, err, c.want)
		}
		if c.name != "broken CA" && !bytes.Equal(read(t, dir, CAFile), before) {
			t.Errorf("%s: the authority was replaced", c.name)
		}
	}
	if _, err := Ensure(t.TempDir(), nil, now); err == nil {
		t.Error("no host names passed")
	}
}
