// Package s3gw runs an S3 gateway inside the calling process for sfsweep's embedded mode:
// versitygw with its posix backend, so every object is a plain file under a directory
// (bucket b, key k is the file Root/b/k), served on 127.0.0.1 with a free port.
//
// Requests must be signed (AWS Signature Version 4) with an access key generated for the
// installation on the first start and kept in a file readable only by its owner; later
// starts reuse it, so the objects and their credentials stay together.
//
// Two properties of versitygw shape the use of this package:
//
//   - Only one gateway can run in a process at a time (versitygw keeps package state).
//   - The posix backend resolves object paths against the working directory: while the
//     gateway runs, the process's working directory is Root. Start resolves its own paths
//     first; callers must turn every relative path they still need into an absolute one
//     (filepath.Abs) before Start. Stop restores the previous working directory.
package s3gw

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"github.com/versity/versitygw/auth"
	"github.com/versity/versitygw/backend/meta"
	"github.com/versity/versitygw/backend/posix"
	"github.com/versity/versitygw/embedgw"
	"github.com/versity/versitygw/s3api"

	"github.com/sfsweep/sfsweep/infra/s3store"
	"github.com/sfsweep/sfsweep/internal/netx"
)

// Defaults of Options.
const (
	DefaultBucket = "sfsweep"
	DefaultRegion = "us-east-1"
)

const host = "127.0.0.1"

// Options configure a gateway.
type Options struct {
	// Root is the directory the objects are stored under, created if missing. Required.
	Root string
	// CredentialsFile holds the gateway's access key (JSON, mode 0600), generated if
	// missing. Empty means "s3-credentials.json" beside Root (outside it, so it is never
	// served as an object).
	CredentialsFile string
	// Bucket is created on start if missing; empty means DefaultBucket.
	Bucket string
	// Region reported to clients and used in signatures; empty means DefaultRegion.
	Region string
	// Port to listen on at 127.0.0.1; zero picks a free one.
	Port int
}

// Gateway is a running S3 gateway.
type Gateway struct {
	root, bucket, region string
	endpoint             string
	creds                s3store.Credentials
	metaDir              string // sidecar metadata directory, "" with extended attributes
	transport            *http.Transport

	cancel  context.CancelFunc
	done    chan error
	prevDir string
	stop    sync.Once
	stopErr error
}

// running guards the one gateway a process may run.
var running sync.Mutex

// Start starts a gateway and returns once it serves requests and the bucket exists.
func Start(ctx context.Context, opts Options) (*Gateway, error) {
	if opts.Root == "" {
		return nil, errors.New("s3gw: root: must be set")
	}
	if opts.Bucket == "" {
		opts.Bucket = DefaultBucket
	}
	if opts.Region == "" {
		opts.Region = DefaultRegion
	}
	if opts.Port < 0 || opts.Port > 65535 {
		return nil, fmt.Errorf("s3gw: port %d: must be in [0, 65535]", opts.Port)
	}
	if !validBucket(opts.Bucket) {
		return nil, fmt.Errorf("s3gw: bucket %q: must be 3–63 lower-case letters, digits, '-' or '.'", opts.Bucket)
	}
	root, err := filepath.Abs(opts.Root)
	if err != nil {
		return nil, fmt.Errorf("s3gw: root %s: %w", opts.Root, err)
	}
	credFile := opts.CredentialsFile
	if credFile == "" {
		credFile = filepath.Join(filepath.Dir(root), "s3-credentials.json")
	}
	if credFile, err = filepath.Abs(credFile); err != nil {
		return nil, fmt.Errorf("s3gw: credentials file %s: %w", opts.CredentialsFile, err)
	}
	if within(root, credFile) {
		return nil, fmt.Errorf("s3gw: credentials file %s: must not be inside root %s", credFile, root)
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("s3gw: root: %w", err)
	}
	creds, err := loadOrCreateCredentials(credFile)
	if err != nil {
		return nil, err
	}
	if !running.TryLock() {
		return nil, errors.New("s3gw: a gateway is already running in this process")
	}
	g := &Gateway{root: root, bucket: opts.Bucket, region: opts.Region, creds: creds}
	g.transport = http.DefaultTransport.(*http.Transport).Clone()
	g.transport.MaxIdleConnsPerHost = 64
	// as s3store's own client: a request the gateway never answers, or an upload it stops
	// reading, fails and is retried
	s3store.BoundWaits(g.transport, s3store.DefaultResponseTimeout)
	if err := g.start(ctx, opts.Port); err != nil {
		running.Unlock()
		return nil, err
	}
	if err := g.createBucket(ctx); err != nil {
		g.Stop()
		return nil, err
	}
	return g, nil
}

// start runs the gateway, trying new free ports where the one picked was taken meanwhile.
func (g *Gateway) start(ctx context.Context, port int) error {
	prev, err := os.Getwd()
	if err != nil {
		return fmt.Errorf("s3gw: working directory: %w", err)
	}
	g.prevDir = prev
	var ms meta.MetadataStorer = meta.XattrMeta{}
	if (meta.XattrMeta{}).Test(g.root) != nil {
		// No extended attributes on this file system: keep metadata in a sidecar tree
		// beside Root.
		g.metaDir = g.root + ".meta"
		if err := os.MkdirAll(g.metaDir, 0o755); err != nil {
			return fmt.Errorf("s3gw: metadata directory: %w", err)
		}
		sc, err := meta.NewSideCar(g.metaDir)
		if err != nil {
			return fmt.Errorf("s3gw: metadata directory %s: %w", g.metaDir, err)
		}
		ms = sc
	}
	var lastErr error
	for range 3 {
		p := port
		if p == 0 {
			if p, err = freePort(); err != nil {
				return err
			}
		}
		lastErr = g.run(ctx, p, ms)
		if lastErr == nil {
			return nil
		}
		if port != 0 || !strings.Contains(lastErr.Error(), "address already in use") {
			break
		}
	}
	return lastErr
}

// run starts versitygw on port and waits until it listens or fails.
func (g *Gateway) run(ctx context.Context, port int, ms meta.MetadataStorer) error {
	opts := posix.PosixOpts{Concurrency: 64}
	if g.metaDir != "" {
		opts.SideCarDir = g.metaDir
	}
	be, err := posix.New(g.root, ms, opts) // changes the working directory to g.root
	if err != nil {
		os.Chdir(g.prevDir)
		return fmt.Errorf("s3gw: posix backend at %s: %w", g.root, err)
	}
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	ready := make(chan struct{})
	var once sync.Once
	cfg := &embedgw.Config{
		RootUserAccess:    g.creds.AccessKeyID,
		RootUserSecret:    g.creds.SecretAccessKey,
		Region:            g.region,
		Ports:             []string{addr},
		MaxConnections:    256,
		MaxRequests:       256,
		MultipartMaxParts: 10000,
		Quiet:             true,
		KeepAlive:         true, // a new connection per request costs ~5× on small objects
		// The root account alone, without versitygw's notice on stdout that it chose so.
		IAMService: auth.NewIAMServiceSingle(auth.Account{
			Access: g.creds.AccessKeyID, Secret: g.creds.SecretAccessKey, Role: auth.RoleAdmin,
		}),
		S3Options: []s3api.Option{s3api.WithOnListen(func() { once.Do(func() { close(ready) }) })},
	}
	runCtx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- embedgw.RunVersityGW(runCtx, pruned{be, g.root}, cfg) }()
	timeout := time.NewTimer(30 * time.Second)
	defer timeout.Stop()
	select {
	case <-ready:
	case err := <-done:
		cancel()
		os.Chdir(g.prevDir)
		return fmt.Errorf("s3gw: serve on %s: %w", addr, err)
	case <-ctx.Done():
		cancel()
		<-done
		os.Chdir(g.prevDir)
		return fmt.Errorf("s3gw: start on %s: %w", addr, ctx.Err())
	case <-timeout.C:
		cancel()
		<-done
		os.Chdir(g.prevDir)
		return fmt.Errorf("s3gw: start on %s: not listening after 30s", addr)
	}
	// OnListen fires just before the listener accepts; wait until a connection succeeds.
	if err := netx.WaitListening(ctx, addr, 10*time.Second); err != nil {
		cancel()
		<-done
		os.Chdir(g.prevDir)
		return fmt.Errorf("s3gw: start on %s: %w", addr, err)
	}
	g.endpoint = "http://" + addr
	g.cancel, g.done = cancel, done
	return nil
}

func (g *Gateway) createBucket(ctx context.Context) error {
	c := s3.New(s3.Options{
		BaseEndpoint: aws.String(g.endpoint),
		UsePathStyle: true,
		Region:       g.region,
		Credentials:  aws.CredentialsProviderFunc(g.awsCredentials),
		HTTPClient:   &http.Client{Transport: g.transport},
	})
	_, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(g.bucket)})
	var ae smithy.APIError
	if err != nil && errors.As(err, &ae) && ae.ErrorCode() == "BucketAlreadyOwnedByYou" {
		err = nil
	}
	if err != nil {
		return fmt.Errorf("s3gw: create bucket %s: %w", g.bucket, err)
	}
	return nil
}

func (g *Gateway) awsCredentials(context.Context) (aws.Credentials, error) {
	return aws.Credentials{AccessKeyID: g.creds.AccessKeyID, SecretAccessKey: g.creds.SecretAccessKey, Source: "s3gw"}, nil
}

// Endpoint returns the gateway's URL, http://127.0.0.1:PORT.
func (g *Gateway) Endpoint() string { return g.endpoint }

// Bucket returns the bucket created on start.
func (g *Gateway) Bucket() string { return g.bucket }

// Region returns the gateway's region.
func (g *Gateway) Region() string { return g.region }

// Root returns the absolute directory the objects are stored under.
func (g *Gateway) Root() string { return g.root }

// Credentials returns the installation's access key.
func (g *Gateway) Credentials() s3store.Credentials { return g.creds }

// StoreConfig returns the s3store configuration that reaches the gateway's bucket under
// prefix. Its HTTP client is the gateway's own: Stop closes the client's idle connections
// (the gateway keeps connections alive, and waits for open ones when it stops).
func (g *Gateway) StoreConfig(prefix string) s3store.Config {
	c := g.creds
	return s3store.Config{
		Endpoint: g.endpoint, Region: g.region, Bucket: g.bucket, Prefix: prefix, Credentials: &c,
		HTTPClient: &http.Client{Transport: g.transport},
	}
}

// Stop shuts the gateway down, waits for it and restores the working directory of the
// process. It is safe to call more than once.
func (g *Gateway) Stop() error {
	g.stop.Do(func() {
		// The server waits for open connections, and counts a connection that never
		// carried a request as idle only after 5 s: close the pooled ones first.
		g.transport.CloseIdleConnections()
		g.cancel()
		if err := <-g.done; err != nil && !errors.Is(err, context.Canceled) {
			g.stopErr = fmt.Errorf("s3gw: stop: %w", err)
		}
		if err := os.Chdir(g.prevDir); err != nil && g.stopErr == nil {
			g.stopErr = fmt.Errorf("s3gw: restore working directory: %w", err)
		}
		running.Unlock()
	})
	return g.stopErr
}

// credentialsFile is the JSON form of the credentials file.
type credentialsFile struct {
	AccessKeyID     string `json:"access_key_id"`
	SecretAccessKey string `json:"secret_access_key"`
}

// loadOrCreateCredentials reads the access key in path, or generates one and writes it
// there with mode 0600. A file that group or others may read is refused.
func loadOrCreateCredentials(path string) (s3store.Credentials, error) {
	fi, err := os.Stat(path)
	switch {
	case err == nil:
		if m := fi.Mode().Perm(); m&0o077 != 0 {
			return s3store.Credentials{}, fmt.Errorf("s3gw: credentials file %s: mode %04o: must not be accessible to group or others (chmod 600)", path, m)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return s3store.Credentials{}, fmt.Errorf("s3gw: credentials file: %w", err)
		}
		var cf credentialsFile
		if err := json.Unmarshal(b, &cf); err != nil {
			return s3store.Credentials{}, fmt.Errorf("s3gw: credentials file %s: not valid JSON", path)
		}
		if cf.AccessKeyID == "" || cf.SecretAccessKey == "" {
			return s3store.Credentials{}, fmt.Errorf("s3gw: credentials file %s: access_key_id and secret_access_key must be set", path)
		}
		return s3store.Credentials{AccessKeyID: cf.AccessKeyID, SecretAccessKey: cf.SecretAccessKey}, nil
	case !errors.Is(err, fs.ErrNotExist):
		return s3store.Credentials{}, fmt.Errorf("s3gw: credentials file: %w", err)
	}
	cf := credentialsFile{
		AccessKeyID:     "SFS" + randomString(17, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"),
		SecretAccessKey: randomString(40, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"),
	}
	b, err := json.MarshalIndent(cf, "", "  ")
	if err != nil {
		return s3store.Credentials{}, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return s3store.Credentials{}, fmt.Errorf("s3gw: credentials file: %w", err)
	}
	// CreateTemp makes the file with mode 0600; the rename publishes it whole.
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-credentials-*")
	if err != nil {
		return s3store.Credentials{}, fmt.Errorf("s3gw: credentials file: %w", err)
	}
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Chmod(0o600)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return s3store.Credentials{}, fmt.Errorf("s3gw: write credentials file %s: %w", path, err)
	}
	return s3store.Credentials{AccessKeyID: cf.AccessKeyID, SecretAccessKey: cf.SecretAccessKey}, nil
}

// randomString returns n characters drawn uniformly from alphabet (of 32 or 64 letters)
// with crypto/rand.
func randomString(n int, alphabet string) string {
	b := make([]byte, n)
	rand.Read(b) // never fails (crypto/rand panics instead)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}

func validBucket(b string) bool {
	if len(b) < 3 || len(b) > 63 {
		return false
	}
	for _, r := range b {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '.') {
			return false
		}
	}
	return b[0] != '-' && b[0] != '.' && b[len(b)-1] != '-' && b[len(b)-1] != '.'
}

// within reports whether path is dir or inside it.
func within(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, fmt.Errorf("s3gw: find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}
