package s3gw

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sfsweep/sfsweep/infra/s3store"
	"github.com/sfsweep/sfsweep/internal/blob"
)

func mustStart(t testing.TB, opts Options) *Gateway {
	t.Helper()
	g, err := Start(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Stop() })
	return g
}

// TestCredentialsPersist checks that the first start writes generated credentials with
// mode 0600, that a restart reuses them, and that objects survive the restart as plain files.
func TestCredentialsPersist(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	wd, _ := os.Getwd()
	opts := Options{Root: filepath.Join(dir, "s3")}

	g := mustStart(t, opts)
	credFile := filepath.Join(dir, "s3-credentials.json")
	fi, err := os.Stat(credFile)
	if err != nil {
		t.Fatal(err)
	}
	if m := fi.Mode().Perm(); m != 0o600 {
		t.Fatalf("credentials file mode %04o, want 0600", m)
	}
	var cf credentialsFile
	b, _ := os.ReadFile(credFile)
	if err := json.Unmarshal(b, &cf); err != nil {
		t.Fatal(err)
	}
	c1 := g.Credentials()
	if cf.AccessKeyID != c1.AccessKeyID || cf.SecretAccessKey != c1.SecretAccessKey {
		t.Fatal("credentials file differs from the gateway's credentials")
	}
	if len(c1.AccessKeyID) != 20 || len(c1.SecretAccessKey) != 40 {
		t.Fatalf("access key of %d characters, secret of %d; want 20, 40", len(c1.AccessKeyID), len(c1.SecretAccessKey))
	}
	s, err := s3store.New(ctx, g.StoreConfig("x"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, "trials/1/result.json", []byte(`{"loss":3.25}`)); err != nil {
		t.Fatal(err)
	}
	if err := g.Stop(); err != nil {
		t.Fatal(err)
	}
	if now, _ := os.Getwd(); now != wd {
		t.Fatalf("working directory after Stop: %s, want %s", now, wd)
	}
	// the object is a plain file
	if b, err := os.ReadFile(filepath.Join(dir, "s3", DefaultBucket, "x", "trials", "1", "result.json")); err != nil || string(b) != `{"loss":3.25}` {
		t.Fatalf("object file: %q, %v", b, err)
	}

	g2 := mustStart(t, opts)
	if c2 := g2.Credentials(); c2 != c1 {
		t.Fatal("restart generated new credentials instead of reusing the file")
	}
	s2, err := s3store.New(ctx, g2.StoreConfig("x"))
	if err != nil {
		t.Fatal(err)
	}
	if b, err := s2.Get(ctx, "trials/1/result.json"); err != nil || string(b) != `{"loss":3.25}` {
		t.Fatalf("object after restart: %q, %v", b, err)
	}

	// a new installation gets other credentials
	g2.Stop()
	g3 := mustStart(t, Options{Root: filepath.Join(t.TempDir(), "s3")})
	if g3.Credentials() == c1 {
		t.Fatal("two installations share credentials")
	}
}

// TestRejectsUnsigned checks that requests without a valid signature are refused: no
// signature, a wrong secret, an unknown access key.
func TestRejectsUnsigned(t *testing.T) {
	ctx := context.Background()
	g := mustStart(t, Options{Root: filepath.Join(t.TempDir(), "s3")})
	good, err := s3store.New(ctx, g.StoreConfig(""))
	if err != nil {
		t.Fatal(err)
	}
	if err := good.Put(ctx, "secret/object", []byte("payload")); err != nil {
		t.Fatal(err)
	}

	for _, req := range []struct{ method, path string }{
		{"GET", "/" + g.Bucket() + "/secret/object"},
		{"GET", "/" + g.Bucket() + "?list-type=2"},
		{"PUT", "/" + g.Bucket() + "/unsigned"},
		{"GET", "/"},
	} {
		r, _ := http.NewRequest(req.method, g.Endpoint()+req.path, strings.NewReader("x"))
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("unsigned %s %s: status %d, want 403", req.method, req.path, resp.StatusCode)
		}
		if strings.Contains(string(body), "payload") {
			t.Errorf("unsigned %s %s returned the object", req.method, req.path)
		}
	}

	wrong := []s3store.Credentials{
		{AccessKeyID: g.Credentials().AccessKeyID, SecretAccessKey: strings.Repeat("x", 40)},
		{AccessKeyID: "SFSNOTAKEYOFTHISHOST", SecretAccessKey: g.Credentials().SecretAccessKey},
	}
	for _, c := range wrong {
		cfg := g.StoreConfig("")
		cfg.Credentials = &c
		cfg.MaxAttempts = 1
		bad, err := s3store.New(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := bad.Get(ctx, "secret/object"); err == nil || errors.Is(err, blob.ErrNotFound) {
			t.Errorf("Get with %v: %v, want an access error", c, err)
		} else if strings.Contains(err.Error(), c.SecretAccessKey) || strings.Contains(err.Error(), g.Credentials().SecretAccessKey) {
			t.Errorf("error shows a secret: %v", err)
		}
		if err := bad.Put(ctx, "forged", []byte("x")); err == nil {
			t.Errorf("Put with %v succeeded", c)
		}
	}
	if _, err := good.Get(ctx, "forged"); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("forged object exists: %v", err)
	}
	if _, err := good.Get(ctx, "unsigned"); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("unsigned object exists: %v", err)
	}
}

func TestStartErrors(t *testing.T) {
	dir := t.TempDir()
	loose := filepath.Join(dir, "loose.json")
	if err := os.WriteFile(loose, []byte(`{"access_key_id":"A","secret_access_key":"B"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chmod(loose, 0o644)
	for _, tc := range []struct {
		opts Options
		want string
	}{
		{Options{}, "root: must be set"},
		{Options{Root: dir, Bucket: "Bad_Bucket"}, `bucket "Bad_Bucket"`},
		{Options{Root: dir, Port: 70000}, "port 70000"},
		{Options{Root: dir, CredentialsFile: filepath.Join(dir, "creds.json")}, "must not be inside root"},
		{Options{Root: filepath.Join(dir, "s3"), CredentialsFile: loose}, "mode 0644"},
	} {
		g, err := Start(context.Background(), tc.opts)
		if err == nil {
			g.Stop()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Start(%+v) = %v, want an error containing %q", tc.opts, err, tc.want)
		}
	}
}

func TestOnePerProcess(t *testing.T) {
	g := mustStart(t, Options{Root: filepath.Join(t.TempDir(), "s3")})
	if g2, err := Start(context.Background(), Options{Root: filepath.Join(t.TempDir(), "s3")}); err == nil {
		g2.Stop()
		t.Fatal("a second gateway started in the same process")
	}
	if err := g.Stop(); err != nil {
		t.Fatal(err)
	}
	// after Stop a new one may start
	g3 := mustStart(t, Options{Root: filepath.Join(t.TempDir(), "s3"), Bucket: "other-bucket"})
	s, err := s3store.New(context.Background(), g3.StoreConfig(""))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put(context.Background(), "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if s.Bucket() != "other-bucket" {
		t.Fatal(fmt.Sprint("bucket ", s.Bucket()))
	}
}
