package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sfsweep/sfsweep/activities"
	"github.com/sfsweep/sfsweep/infra/devserver"
	"github.com/sfsweep/sfsweep/infra/temporalclient"
	"github.com/sfsweep/sfsweep/internal/pki"
	"github.com/sfsweep/sfsweep/internal/tlsproxy"
)

// sfsweep server: the embedded stack (Temporal on SQLite, the S3 gateway on plain files)
// as one process for a small lab, with workers on other machines. Both servers listen in
// plain text on loopback; what the lab reaches is a TLS terminator in front of each:
// Temporal's asks for a client certificate of the server's own CA (mutual TLS), the S3
// gateway's signs every request with its access key. The CA, the certificates, the key
// and a join file that names them all are made on the first start and kept under the
// state directory, so that a worker given the join folder once can rejoin after restarts.

func runServer(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("server", stderr)
	dir := fs.String("dir", filepath.Join(".sfsweep", "server"), "state directory: the Temporal database, the S3 objects, the certificates (tls/) and the join folder (join/)")
	temporalAddr := fs.String("temporal", ":7233", "address Temporal listens at for the lab, with mutual TLS")
	s3Addr := fs.String("s3", ":9000", "address the S3 gateway listens at for the lab, with HTTPS")
	hostsFlag := fs.String("hosts", "", "names and IP addresses workers reach this machine by, comma-separated; the first is written in the join file (default: this machine's host name and addresses)")
	cpuWorker := fs.Bool("cpu-worker", true, "run a worker of the cpu task queue (the sweeps' workflows, planning, tables) in this process")
	ui := fs.Bool("ui", false, "serve Temporal's Web UI on 127.0.0.1")
	verbose := fs.Bool("v", false, "log the servers' warnings")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: sfsweep server [flags]\n\nRuns Temporal and the S3 gateway for a small lab: workers on other machines join with the join file it writes (docs/server.md).")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	for _, a := range []struct{ flag, addr string }{{"-temporal", *temporalAddr}, {"-s3", *s3Addr}} {
		if _, _, err := net.SplitHostPort(a.addr); err != nil {
			return &usageError{msg: fmt.Sprintf("%s = %q: must be host:port or :port", a.flag, a.addr)}
		}
	}
	hosts, err := serverHosts(*hostsFlag)
	if err != nil {
		return err
	}
	absDir, err := filepath.Abs(*dir) // before the gateway changes the working directory
	if err != nil {
		return err
	}
	if err := os.MkdirAll(absDir, 0o700); err != nil {
		return err
	}
	certs, err := pki.Ensure(filepath.Join(absDir, "tls"), hosts, time.Now())
	if err != nil {
		return err
	}
	if len(certs.Issued) > 0 {
		fmt.Fprintf(stderr, "certificates issued: %s (under %s)\n", strings.Join(certs.Issued, ", "), certs.Dir)
	}
	logLevel := slog.LevelError + 4
	if *verbose {
		logLevel = slog.LevelWarn
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: logLevel}))
	st, err := startStack(ctx, absDir, *ui, logger)
	if err != nil {
		return err
	}
	defer st.stop()

	tcfg := &tls.Config{Certificates: []tls.Certificate{certs.Server}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: certs.Pool(),
		NextProtos: []string{"h2"}, MinVersion: tls.VersionTLS12}
	tp, err := tlsproxy.Listen(*temporalAddr, tcfg, st.server.HostPort())
	if err != nil {
		return fmt.Errorf("-temporal %s: %w", *temporalAddr, err)
	}
	defer tp.Close()
	gwURL, err := url.Parse(st.gw.Endpoint())
	if err != nil {
		return err
	}
	scfg := &tls.Config{Certificates: []tls.Certificate{certs.Server}, NextProtos: []string{"http/1.1"}, MinVersion: tls.VersionTLS12}
	sp, err := tlsproxy.Listen(*s3Addr, scfg, gwURL.Host)
	if err != nil {
		return fmt.Errorf("-s3 %s: %w", *s3Addr, err)
	}
	defer sp.Close()

	join, err := writeJoinFolder(filepath.Join(absDir, "join"), certs, hosts[0], tp.Addr(), sp.Addr(), st)
	if err != nil {
		return err
	}
	if *cpuWorker {
		acts := &activities.Activities{Store: st.store, Client: st.client, CacheDir: filepath.Join(absDir, "data"), Log: logger}
		stopWorkers, err := startWorkers(st.client, acts, workerRoles{cpu: true}, 0)
		if err != nil {
			return err
		}
		defer stopWorkers()
	}
	fmt.Fprintf(stdout, "sfsweep server: Temporal at %s (mutual TLS, namespace %s), S3 at https://%s (bucket %s); certificate for %s\n",
		tp.Addr(), devserver.DefaultNamespace, sp.Addr(), st.gw.Bucket(), strings.Join(hosts, ", "))
	if *ui {
		fmt.Fprintf(stdout, "Temporal Web UI: http://%s\n", st.server.UIAddr())
	}
	fmt.Fprintf(stdout, "join file: %s\n", join)
	fmt.Fprintf(stdout, "copy the folder %s to each machine, then: sfsweep worker -join join/join.env (or submit, status, serve)\n", filepath.Dir(join))
	<-ctx.Done()
	fmt.Fprintln(stderr, "sfsweep server: stopping")
	if errors.Is(context.Cause(ctx), context.Canceled) {
		return nil
	}
	return context.Cause(ctx)
}

// serverHosts are the names of the -hosts flag, or this machine's host name and the
// addresses of its interfaces that are up; then localhost and 127.0.0.1, for a worker on
// the machine itself.
func serverHosts(flagValue string) ([]string, error) {
	var hosts []string
	add := func(h string) {
		if !slices.Contains(hosts, h) {
			hosts = append(hosts, h)
		}
	}
	if flagValue != "" {
		for _, h := range strings.Split(flagValue, ",") {
			h = strings.TrimSpace(h)
			if h == "" || strings.ContainsAny(h, " /:@") && net.ParseIP(h) == nil {
				return nil, &usageError{msg: fmt.Sprintf("-hosts = %q: %q is not a host name or an IP address", flagValue, h)}
			}
			add(h)
		}
	} else {
		if name, err := os.Hostname(); err == nil && name != "" {
			add(name)
		}
		addrs, _ := net.InterfaceAddrs()
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && !ipn.IP.IsLoopback() && !ipn.IP.IsLinkLocalUnicast() {
				add(ipn.IP.String())
			}
		}
	}
	add("localhost")
	add("127.0.0.1")
	return hosts, nil
}

// writeJoinFolder writes the folder a worker needs to join: the CA, the client
// certificate and its key, and join.env naming them with the addresses and the store's
// access key. It returns the join file's path.
func writeJoinFolder(dir string, certs *pki.Set, host, temporalAddr, s3Addr string, st *stack) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return "", err
	}
	for _, f := range []struct {
		name string
		perm os.FileMode
	}{{pki.CAFile, 0o644}, {pki.ClientFile, 0o644}, {pki.ClientKeyFile, 0o600}} {
		b, err := os.ReadFile(filepath.Join(certs.Dir, f.name))
		if err != nil {
			return "", err
		}
		if err := pki.WriteFile(filepath.Join(dir, f.name), b, f.perm); err != nil {
			return "", err
		}
	}
	port := func(addr string) string { _, p, _ := net.SplitHostPort(addr); return p }
	creds := st.gw.StoreConfig("").Credentials
	vals := map[string]string{
		temporalclient.EnvAddress: net.JoinHostPort(host, port(temporalAddr)), temporalclient.EnvNamespace: devserver.DefaultNamespace,
		temporalclient.EnvCACert: pki.CAFile, temporalclient.EnvClientCert: pki.ClientFile, temporalclient.EnvClientKey: pki.ClientKeyFile,
		envS3Endpoint: "https://" + net.JoinHostPort(host, port(s3Addr)), envS3Bucket: st.gw.Bucket(), envS3Region: st.gw.Region(),
		envS3CA: pki.CAFile, envS3KeyID: creds.AccessKeyID, envS3Secret: creds.SecretAccessKey,
	}
	path := filepath.Join(dir, "join.env")
	return path, writeJoin(path, vals, pki.WriteFile)
}
