package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sfsweep/sfsweep/infra/s3store"
	"github.com/sfsweep/sfsweep/infra/temporalclient"
)

// A join file says how to reach a lab's stack (sfsweep server): Temporal's address with
// its CA and the client certificate of mutual TLS, the S3 endpoint with its CA, bucket
// and access key. Its lines are KEY=VALUE under the names of the environment
// (TEMPORAL_*, SFSWEEP_S3_*, AWS_*); a path is relative to the file's folder, so that the
// folder can be copied to any place on a worker. It holds a secret: it must be readable by
// its owner only.

// Join file keys beyond the Temporal CLI's.
const (
	envS3Endpoint = "SFSWEEP_S3_ENDPOINT"
	envS3Bucket   = "SFSWEEP_S3_BUCKET"
	envS3Region   = "SFSWEEP_S3_REGION"
	envS3CA       = "AWS_CA_BUNDLE"
	envS3KeyID    = "AWS_ACCESS_KEY_ID"
	envS3Secret   = "AWS_SECRET_ACCESS_KEY"
	envJoin       = "SFSWEEP_JOIN"
)

// joinKeys are the keys a join file may hold, in the order it is written; paths are
// those whose value names a file.
var (
	joinKeys = []string{temporalclient.EnvAddress, temporalclient.EnvNamespace, temporalclient.EnvCACert, temporalclient.EnvClientCert,
		temporalclient.EnvClientKey, temporalclient.EnvServerName, envS3Endpoint, envS3Bucket, envS3Region, envS3CA, envS3KeyID, envS3Secret}
	joinPaths = map[string]bool{temporalclient.EnvCACert: true, temporalclient.EnvClientCert: true, temporalclient.EnvClientKey: true, envS3CA: true}
)

// readJoin reads a join file: its values by key, paths made absolute against its folder.
// An error names the file, the line and the reason.
func readJoin(path string) (map[string]string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("join file: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("join file %s: mode %v: it holds the store's secret key and must be readable by its owner only (chmod 600)", path, fi.Mode().Perm())
	}
	b, err := os.ReadFile(abs)
	if err != nil {
		return nil, fmt.Errorf("join file: %w", err)
	}
	vals := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		switch {
		case !ok:
			return nil, fmt.Errorf("join file %s line %d: %q: must be KEY=VALUE", path, n, line)
		case !slices.Contains(joinKeys, k):
			return nil, fmt.Errorf("join file %s line %d: key %q: must be one of %s", path, n, k, strings.Join(joinKeys, ", "))
		case has(vals, k):
			return nil, fmt.Errorf("join file %s line %d: key %s given twice", path, n, k)
		case v == "":
			return nil, fmt.Errorf("join file %s line %d: %s is empty", path, n, k)
		}
		if joinPaths[k] && !filepath.IsAbs(v) {
			v = filepath.Join(filepath.Dir(abs), v)
		}
		vals[k] = v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("join file %s: %w", path, err)
	}
	for _, k := range []string{temporalclient.EnvAddress, envS3Endpoint, envS3Bucket} {
		if vals[k] == "" {
			return nil, fmt.Errorf("join file %s: %s: is required", path, k)
		}
	}
	if (vals[envS3KeyID] == "") != (vals[envS3Secret] == "") {
		return nil, fmt.Errorf("join file %s: %s and %s: give both or neither", path, envS3KeyID, envS3Secret)
	}
	return vals, nil
}

func has(m map[string]string, k string) bool { _, ok := m[k]; return ok }

// apply sets the connection of r to the join file's values: Temporal over TLS with its
// certificates, S3 at its endpoint with its CA and access key.
func (r *remote) applyJoin(vals map[string]string) error {
	t := &r.temporal
	t.TLS = true
	for k, dst := range map[string]*string{temporalclient.EnvAddress: &t.Address, temporalclient.EnvNamespace: &t.Namespace,
		temporalclient.EnvCACert: &t.CACert, temporalclient.EnvClientCert: &t.ClientCert, temporalclient.EnvClientKey: &t.ClientKey,
		temporalclient.EnvServerName: &t.ServerName, envS3Endpoint: &r.s3.Endpoint, envS3Bucket: &r.s3.Bucket, envS3Region: &r.s3.Region} {
		if v, ok := vals[k]; ok {
			*dst = v
		}
	}
	if p := vals[envS3CA]; p != "" {
		b, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("join file: %s: %w", envS3CA, err)
		}
		r.s3.CABundle = b
	}
	if id := vals[envS3KeyID]; id != "" {
		r.s3.Credentials = &s3store.Credentials{AccessKeyID: id, SecretAccessKey: vals[envS3Secret]}
	}
	return nil
}

// loadJoin reads the join file at path into r.
func (r *remote) loadJoin(path string) error {
	vals, err := readJoin(path)
	if err != nil {
		return err
	}
	return r.applyJoin(vals)
}

// writeJoin writes a join file of vals (mode 0600) at path.
func writeJoin(path string, vals map[string]string, write func(string, []byte, os.FileMode) error) error {
	var b strings.Builder
	b.WriteString("# How to reach this sfsweep server: sfsweep worker|submit|status|serve -join <this file>.\n")
	b.WriteString("# Paths are relative to this file's folder; copy the folder whole. It holds the\n")
	b.WriteString("# store's secret key: keep it readable by its owner only.\n")
	for _, k := range joinKeys {
		if v, ok := vals[k]; ok {
			fmt.Fprintf(&b, "%s=%s\n", k, v)
		}
	}
	return write(path, []byte(b.String()), 0o600)
}
