package main

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sfsweep/sfsweep/infra/s3store"
	"github.com/sfsweep/sfsweep/infra/temporalclient"
)

// labManifest is a sweep of two small trials.
const labManifest = "name: lab\n" + e2eTraining + `optimizers:
  - name: sfadamw
    lr: 3e-3
    betas: [[0.9, 0.99]]
    c: [vanilla, 50]
`

// freeAddr is a loopback address with a port no one listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// sfsweep server as a small lab runs it: the server in one process and folder; a worker
// in another folder, given only a copy of the join folder, trains a sweep submitted from
// there by a relative path; status reads it through the same file. What is refused: a
// Temporal client without the lab's client certificate, S3 requests signed with another
// secret, a join file others can read, a join file with a key it does not know. The
// server stops on SIGINT, and started again on the same folder keeps its certificates,
// its key and its sweeps: the copied folder still joins.
func TestServerJoin(t *testing.T) {
	ctx := serverTest(t, 4*time.Minute, "starts sfsweep server and worker processes")
	root := t.TempDir()
	srvDir, labDir := filepath.Join(root, "server"), filepath.Join(root, "worker")
	for _, d := range []string{srvDir, labDir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	taddr, saddr := freeAddr(t), freeAddr(t)
	start := func() *process {
		p := startProcess(ctx, t, srvDir, "server", "server", "-dir", "state", "-temporal", taddr, "-s3", saddr, "-hosts", "localhost")
		select {
		case <-p.await("join file: "):
		case <-ctx.Done():
			t.Fatalf("the server did not start:\n%s", p.output())
		}
		return p
	}
	srv := start()
	if !strings.Contains(srv.output(), "certificates issued: ca, server, client") {
		t.Errorf("a first start does not say it issued the certificates:\n%s", srv.output())
	}
	state := filepath.Join(srvDir, "state")
	joinDir := filepath.Join(state, "join")
	for _, f := range []string{"join.env", "client-key.pem"} {
		fi, err := os.Stat(filepath.Join(joinDir, f))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, mode %v, want 0600", f, err, fi.Mode().Perm())
		}
	}
	vals, err := readJoin(filepath.Join(joinDir, "join.env"))
	if err != nil {
		t.Fatal(err)
	}
	secret := vals[envS3Secret]
	if len(secret) < 20 || vals[temporalclient.EnvAddress] != "localhost:"+port(taddr) {
		t.Fatalf("join file: address %q, secret of %d characters", vals[temporalclient.EnvAddress], len(secret))
	}
	caBefore, _ := os.ReadFile(filepath.Join(state, "tls", "ca.pem"))

	// the worker's machine: a copy of the join folder, nothing else
	cp := exec.Command("cp", "-rp", joinDir, filepath.Join(labDir, "join"))
	if out, err := cp.CombinedOutput(); err != nil {
		t.Fatalf("cp: %v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(labDir, "lab.yaml"), []byte(labManifest), 0o644); err != nil {
		t.Fatal(err)
	}
	worker := startProcess(ctx, t, labDir, "worker", "worker", "-join", "join/join.env", "-queue", "gpu", "-cache", "cache")
	submit := startProcess(ctx, t, labDir, "submit", "submit", "-join", "join/join.env", "lab.yaml")
	if code := submit.exitCode(); code != 0 {
		t.Fatalf("submit: exit %d\n%s", code, submit.output())
	}
	sweepID := strings.TrimSpace(lastLine(submit.output()))
	status := func() string {
		p := startProcess(ctx, t, labDir, "status", "status", "-join", "join/join.env", sweepID)
		p.exitCode()
		return p.output()
	}
	waitDone := func(what string) {
		t.Helper()
		for {
			out := status()
			if strings.Contains(out, "2/2 trials done (2 completed") {
				return
			}
			select {
			case <-ctx.Done():
				t.Fatalf("%s: the sweep did not complete: %s\nworker:\n%s\nserver:\n%s", what, out, worker.output(), srv.output())
			case <-time.After(time.Second):
			}
		}
	}
	waitDone("through the join file")
	for _, p := range []*process{srv, worker, submit} {
		if strings.Contains(p.output(), secret) {
			t.Errorf("%s printed the store's secret key", p.name)
		}
	}

	// refusals: no client certificate; another secret; a join file others can read; an
	// unknown key
	noCert := temporalclient.Options{Address: vals[temporalclient.EnvAddress], CACert: vals[temporalclient.EnvCACert], TLS: true}
	// (the error reads "certificate required", or a cut connection where the server's
	// alert comes after the client's first write)
	if c, err := temporalclient.Dial(ctx, noCert); err == nil {
		c.Close()
		t.Error("a Temporal client without the lab's client certificate was let in")
	}
	ca, _ := os.ReadFile(vals[envS3CA])
	wrong, err := s3store.New(ctx, s3store.Config{Endpoint: vals[envS3Endpoint], Bucket: vals[envS3Bucket], Region: vals[envS3Region],
		CABundle: ca, MaxAttempts: 1, Credentials: &s3store.Credentials{AccessKeyID: vals[envS3KeyID], SecretAccessKey: strings.Repeat("x", 40)}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wrong.List(ctx, ""); err == nil {
		t.Error("S3 requests signed with another secret were answered")
	}
	loose := filepath.Join(labDir, "join", "loose.env")
	b, _ := os.ReadFile(filepath.Join(labDir, "join", "join.env"))
	if err := os.WriteFile(loose, b, 0o644); err != nil {
		t.Fatal(err)
	}
	p := startProcess(ctx, t, labDir, "status", "status", "-join", "join/loose.env", sweepID)
	if code := p.exitCode(); code == 0 || !strings.Contains(p.output(), "chmod 600") {
		t.Errorf("a join file of mode 0644: exit %d\n%s", code, p.output())
	}
	odd := filepath.Join(labDir, "join", "odd.env")
	if err := os.WriteFile(odd, append(b, []byte("TEMPORAL_TLS_INSECURE=true\n")...), 0o600); err != nil {
		t.Fatal(err)
	}
	p = startProcess(ctx, t, labDir, "status", "status", "-join", "join/odd.env", sweepID)
	if code := p.exitCode(); code == 0 || !strings.Contains(p.output(), `key "TEMPORAL_TLS_INSECURE"`) || !strings.Contains(p.output(), "line "+strconv.Itoa(bytes.Count(b, []byte("\n"))+1)) {
		t.Errorf("a join file with an unknown key: exit %d\n%s", code, p.output())
	}

	// a restart keeps the certificates, the key and the sweeps
	worker.interrupt(t)
	srv.interrupt(t)
	srv = start()
	if strings.Contains(srv.output(), "certificates issued") {
		t.Errorf("a restart issued certificates again:\n%s", srv.output())
	}
	if caAfter, _ := os.ReadFile(filepath.Join(state, "tls", "ca.pem")); !bytes.Equal(caBefore, caAfter) {
		t.Error("a restart made a new CA")
	}
	waitDone("after a restart, with the folder copied before it")
	srv.interrupt(t)
}

func port(addr string) string {
	_, p, _ := net.SplitHostPort(addr)
	return p
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
