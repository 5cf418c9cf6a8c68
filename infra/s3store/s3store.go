// Package s3store is the blob.Store of sfsweep on any S3-compatible object store (AWS S3,
// MinIO, Ceph, the embedded gateway of infra/s3gw), through aws-sdk-go-v2.
//
// A Store works in one bucket under one key prefix: the object of key k is
// Prefix + k. Keys are checked with blob.ValidKey, so none can leave the prefix. An S3
// PUT replaces an object whole, so Put is atomic as blob.Store requires.
//
// Every request is retried on transient failures — connection errors, throttling, 5xx
// answers, responses cut short — with exponential backoff and full jitter, up to
// Config.MaxAttempts attempts, and without the SDK's client-side retry quota. Get reads
// the object's body inside the retry loop, so a body that breaks off is fetched again and
// never returned in part. An attempt that waits longer than Config.ResponseTimeout for
// the server — for its answer, for the next bytes of a body, or for it to take more of an
// upload — fails and is retried.
//
// PutReader and GetWriter (blob.Streams) move an object of any size through a few parts
// of memory with aws-sdk-go-v2's transfer manager: a multipart upload, and a get of
// ranges a few at once, each part's body read within its attempt and so retried as Get's.
package s3store

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"

	"github.com/sfsweep/sfsweep/internal/blob"
)

// Defaults of Config.
const (
	// DefaultMaxAttempts is the number of attempts of one request when Config.MaxAttempts
	// is 0: the first try and up to four retries with exponential backoff and jitter.
	DefaultMaxAttempts = 5
	// DefaultMaxBackoff is the longest wait between two attempts when Config.MaxBackoff
	// is 0.
	DefaultMaxBackoff = 10 * time.Second
	// DefaultResponseTimeout is how long an attempt waits for the server when
	// Config.ResponseTimeout is 0: long enough for a busy server to answer, short enough
	// that a worker whose request was lost does not wait for good.
	DefaultResponseTimeout = 2 * time.Minute
)

// Credentials are a static S3 access key. Their String and GoString methods never show the
// secret, so they can be logged.
type Credentials struct {
	AccessKeyID     string
	SecretAccessKey string
}

// String returns the access key ID with the secret redacted.
func (c Credentials) String() string {
	return fmt.Sprintf("{AccessKeyID:%s SecretAccessKey:[redacted]}", c.AccessKeyID)
}

// GoString is String, for %#v.
func (c Credentials) GoString() string { return "s3store.Credentials" + c.String() }

// Config says where a Store keeps its objects and how it reaches them.
type Config struct {
	// Endpoint is the URL of a custom S3 endpoint (http or https), addressed path-style
	// (http://host:port/bucket/key). Empty means AWS S3 with virtual-hosted addressing.
	Endpoint string
	// Region of the bucket. Empty means the region of the standard AWS configuration
	// (AWS_REGION, ~/.aws/config), or us-east-1 for a custom endpoint without one.
	Region string
	// Bucket holds the objects. Required.
	Bucket string
	// Prefix is prepended to every key, e.g. "sfsweep/" or "team/sweeps". A missing
	// trailing slash is added. Empty means the bucket's root.
	Prefix string
	// Credentials, if set, are used as they are; nil means the standard AWS configuration
	// chain (environment, shared files, SSO, web identity, instance roles).
	Credentials *Credentials
	// CABundle is PEM of the certificate authorities an https endpoint's certificate is
	// checked against in place of the system's (a lab's own, from sfsweep server); nil
	// means the system's roots, or those of AWS_CA_BUNDLE.
	CABundle []byte
	// MaxAttempts bounds the attempts of each request (transient errors, throttling, 5xx
	// responses, responses cut short and timeouts are retried with backoff); 0 means
	// DefaultMaxAttempts.
	MaxAttempts int
	// MaxBackoff bounds the wait between two attempts: before retry i (1, 2, ...) the
	// store waits a random duration in [0, min(MaxBackoff, 2^i s)). 0 means
	// DefaultMaxBackoff.
	MaxBackoff time.Duration
	// ResponseTimeout bounds how long an attempt waits for the server: for the response's
	// headers once the request has been sent whole, for each write of the request that
	// the server leaves blocked (the upload as a whole is not limited, so a large Put that
	// moves is not cut), and, in Get, for each read of the body. An attempt that waits
	// longer fails and is retried. 0 means DefaultResponseTimeout. The waits for headers
	// and writes are set on the SDK's default HTTP client only: an HTTPClient below is
	// used as its caller built it.
	ResponseTimeout time.Duration
	// PageSize is the number of keys asked for per List request; 0 means the server's
	// default (1000 on AWS).
	PageSize int
	// HTTPClient sends the requests; nil means the SDK's default client with
	// ResponseTimeout as its response header timeout.
	HTTPClient *http.Client
}

// Store is a blob.Store in one S3 bucket under one key prefix. It is safe for concurrent use.
type Store struct {
	client      *s3.Client
	tm          *transfermanager.Client // PutReader and GetWriter
	bucket      string
	prefix      string
	pageSize    int32
	readTimeout time.Duration // the longest wait for a read of a Get's body
}

var (
	_ blob.Store   = (*Store)(nil)
	_ blob.Streams = (*Store)(nil)
)

// The transfer manager's sizes (PutReader, GetWriter): parts of streamPart bytes,
// streamParts of them in flight at once in an upload and two buffered in a get, so that a
// stream holds a few parts of memory, whatever the object's size: a 2 GiB checkpoint
// pushed and restored through program.Mirror raises the process's peak resident memory
// by 89 and 68 MiB (program's TestMirrorStreamsMemory).
const (
	streamPart  = 8 << 20
	streamParts = 4
)

// New returns a Store for cfg. It does not contact the endpoint; credentials of the
// configuration chain are resolved on the first request.
func New(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.Bucket == "" {
		return nil, errors.New("s3store: bucket: must be set")
	}
	if strings.ContainsAny(cfg.Bucket, "/\\ ") {
		return nil, fmt.Errorf("s3store: bucket %q: must not contain slashes or spaces", cfg.Bucket)
	}
	prefix, err := normalizePrefix(cfg.Prefix)
	if err != nil {
		return nil, err
	}
	if cfg.MaxAttempts < 0 {
		return nil, fmt.Errorf("s3store: max attempts %d: must be ≥ 0", cfg.MaxAttempts)
	}
	if cfg.MaxBackoff < 0 {
		return nil, fmt.Errorf("s3store: max backoff %v: must be ≥ 0", cfg.MaxBackoff)
	}
	if cfg.ResponseTimeout < 0 {
		return nil, fmt.Errorf("s3store: response timeout %v: must be ≥ 0", cfg.ResponseTimeout)
	}
	if cfg.PageSize < 0 || cfg.PageSize > 1000 {
		return nil, fmt.Errorf("s3store: page size %d: must be in [0, 1000]", cfg.PageSize)
	}
	if cfg.Endpoint != "" {
		u, err := url.Parse(cfg.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("s3store: endpoint %q: must be an http:// or https:// URL with a host", cfg.Endpoint)
		}
	}
	attempts := cmp.Or(cfg.MaxAttempts, DefaultMaxAttempts)
	maxBackoff := cmp.Or(cfg.MaxBackoff, DefaultMaxBackoff)
	responseTimeout := cmp.Or(cfg.ResponseTimeout, DefaultResponseTimeout)

	opts := []func(*config.LoadOptions) error{
		config.WithRetryer(func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = attempts
				o.Backoff = fullJitter(maxBackoff)
				// The standard retryer spends tokens of a bucket shared by all requests of
				// the client on every retry (5, 10 after a timeout; 500 in all) and fails
				// retries at once, with "retry quota exceeded", when it is empty. That
				// protects a service from a fleet of clients; sfsweep runs a few workers
				// against one store, and a burst of errors — a gateway restart, a minute
				// of throttling — would empty the bucket and fail every operation in
				// flight, each failure a lost trial or checkpoint. Backoff alone paces
				// the retries.
				o.RateLimiter = ratelimit.None
				o.Retryables = append(o.Retryables, retry.IsErrorRetryableFunc(retryCutResponse))
			})
		}),
	}
	if cfg.Region != "" {
		opts = append(opts, config.WithRegion(cfg.Region))
	}
	if c := cfg.Credentials; c != nil {
		if c.AccessKeyID == "" || c.SecretAccessKey == "" {
			return nil, errors.New("s3store: credentials: access key ID and secret must both be set")
		}
		opts = append(opts, config.WithCredentialsProvider(
			credentials.NewStaticCredentialsProvider(c.AccessKeyID, c.SecretAccessKey, "")))
	}
	if len(cfg.CABundle) > 0 {
		opts = append(opts, config.WithCustomCABundle(bytes.NewReader(cfg.CABundle)))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("s3store: load AWS configuration: %w", err)
	}
	if awsCfg.Region == "" && cfg.Endpoint != "" {
		awsCfg.Region = "us-east-1"
	}
	client := s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		if cfg.HTTPClient != nil {
			o.HTTPClient = cfg.HTTPClient
		} else {
			o.HTTPClient = withResponseTimeout(awsCfg.HTTPClient, responseTimeout)
		}
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
			o.UsePathStyle = true
		}
		// Get validates the checksum an object carries (see readBody); one without a
		// whole-object checksum (a multipart upload, another tool's object) is no
		// error, and the SDK would log each such Get.
		o.DisableLogOutputChecksumValidationSkipped = true
	})
	tm := transfermanager.New(partClient{client, responseTimeout}, func(o *transfermanager.Options) {
		o.PartSizeBytes = streamPart
		o.MultipartUploadThreshold = 2 * streamPart
		o.Concurrency = streamParts
		o.GetObjectBufferSize = 2 * streamPart
	})
	return &Store{client: client, tm: tm, bucket: cfg.Bucket, prefix: prefix, pageSize: int32(cfg.PageSize), readTimeout: responseTimeout}, nil
}

// withResponseTimeout returns the SDK's default HTTP client — the one the configuration
// chain built (it may carry a custom CA bundle), or a new one — with BoundWaits(d).
func withResponseTimeout(c aws.HTTPClient, d time.Duration) *awshttp.BuildableClient {
	b, ok := c.(*awshttp.BuildableClient)
	if !ok {
		b = awshttp.NewBuildableClient()
	}
	return b.WithTransportOptions(func(tr *http.Transport) { BoundWaits(tr, d) })
}

// BoundWaits makes every wait of tr for the server end after d: for a response's headers
// once the request has been written whole (http.Transport.ResponseHeaderTimeout), and for
// each write of a request that the server leaves blocked, which is what an upload meets
// when the server stops reading its body (idleWriteConn). The SDK sets neither
// (aws/transport/http/client.go), and its own read timeout (BuildableClient.WithReadTimeout)
// is an inactivity limit on every read of the connection, including those that wait for
// the answer while a large body is still being uploaded, so it would cut long Puts.
// BoundWaits must be called before tr makes its first connection.
func BoundWaits(tr *http.Transport, d time.Duration) {
	tr.ResponseHeaderTimeout = d
	dial := tr.DialContext
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return idleWriteConn{Conn: conn, idle: d}, nil
	}
}

// idleWriteConn fails a write that the peer leaves blocked for idle: each write gets a
// deadline idle from its start. A write blocks only while the connection's buffers are
// full, so a slow upload that keeps moving is never cut, and a stopped one fails (with
// os.ErrDeadlineExceeded, a timeout the retryer repeats) instead of hanging.
type idleWriteConn struct {
	net.Conn
	idle time.Duration
}

func (c idleWriteConn) Write(b []byte) (int, error) {
	if err := c.Conn.SetWriteDeadline(time.Now().Add(c.idle)); err != nil {
		return 0, err
	}
	return c.Conn.Write(b)
}

// fullJitter is exponential backoff with full jitter: before retry i (1, 2, ...) a random
// wait in [0, min(maxBackoff, 2^i s)). The SDK's own backoff waits exactly its maximum,
// without jitter, once the exponential reaches it, and always when the maximum is under
// a second (aws/retry/jitter_backoff.go, backoffDelayLegacy), so workers that failed
// together would retry together.
func fullJitter(maxBackoff time.Duration) retry.BackoffDelayerFunc {
	return func(attempt int, _ error) (time.Duration, error) {
		d := maxBackoff
		if attempt < 30 { // from 2^30 s on, the maximum applies
			d = min(d, time.Second<<attempt)
		}
		return rand.N(d), nil
	}
}

// retryCutResponse reports a response whose body broke off (the connection closed before
// its Content-Length was read, seen when the SDK decodes a listing or an error) as
// retryable, like the connection errors the SDK retries. Other errors are left to the
// SDK's checks.
func retryCutResponse(err error) aws.Ternary {
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return aws.TrueTernary
	}
	return aws.UnknownTernary
}

// normalizePrefix checks a key prefix and gives it a trailing slash.
func normalizePrefix(p string) (string, error) {
	if p == "" {
		return "", nil
	}
	if err := blob.ValidKey(strings.TrimSuffix(p, "/")); err != nil {
		return "", fmt.Errorf("s3store: prefix %q: %w", p, err)
	}
	return strings.TrimSuffix(p, "/") + "/", nil
}

// Bucket returns the bucket of the store.
func (s *Store) Bucket() string { return s.bucket }

// Prefix returns the key prefix of the store, "" or ending in a slash.
func (s *Store) Prefix() string { return s.prefix }

func (s *Store) objectKey(key string) (string, error) {
	if err := blob.ValidKey(key); err != nil {
		return "", err
	}
	return s.prefix + key, nil
}

// Put writes data under key, replacing any object there.
func (s *Store) Put(ctx context.Context, key string, data []byte) error {
	k, err := s.objectKey(key)
	if err != nil {
		return err
	}
	// A seekable body lets the SDK compute the checksum before sending and rewind on retry.
	_, err = s.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket:        aws.String(s.bucket),
		Key:           aws.String(k),
		Body:          bytes.NewReader(data),
		ContentLength: aws.Int64(int64(len(data))),
	})
	if err != nil {
		return fmt.Errorf("s3store: put s3://%s/%s: %w", s.bucket, k, err)
	}
	return nil
}

// Get returns the object under key; a missing key is an error wrapping blob.ErrNotFound.
// The body is read whole within each attempt (see readBody), so an object is returned
// complete or not at all.
func (s *Store) Get(ctx context.Context, key string) ([]byte, error) {
	k, err := s.objectKey(key)
	if err != nil {
		return nil, err
	}
	rb := &readBody{idle: s.readTimeout}
	_, err = s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(k)}, rb.add)
	if err != nil {
		if isNotFound(err) {
			return nil, fmt.Errorf("s3store: get s3://%s/%s: %w", s.bucket, k, blob.ErrNotFound)
		}
		return nil, fmt.Errorf("s3store: get s3://%s/%s: %w", s.bucket, k, err)
	}
	return rb.data, nil
}

// PutReader writes the size bytes of r under key through aws-sdk-go-v2's transfer
// manager: an object of more than two parts goes as a multipart upload, part by part, each
// part buffered (and so retried) on its own, and S3 makes the object only once every part
// is in. Its memory is a few parts (streamPart, streamParts), whatever the size. A reader
// that gives another number of bytes than size fails the put and leaves the object under
// key as it was.
func (s *Store) PutReader(ctx context.Context, key string, r io.Reader, size int64) error {
	k, err := s.objectKey(key)
	if err != nil {
		return err
	}
	// a reader of the wrong size fails the upload before its last part, which S3 then
	// aborts: the object under key stays as it was
	_, err = s.tm.UploadObject(ctx, &transfermanager.UploadObjectInput{
		Bucket:        aws.String(s.bucket),
		Key:           aws.String(k),
		Body:          blob.Exact(r, size),
		ContentLength: aws.Int64(size),
	})
	if err != nil {
		return fmt.Errorf("s3store: put s3://%s/%s: %w", s.bucket, k, err)
	}
	return nil
}

// GetWriter writes the object under key to w through the transfer manager, which fetches
// it in parts, a few at once (streamParts), and retries a part whose body breaks off; a
// missing key is an error wrapping blob.ErrNotFound, with nothing written.
func (s *Store) GetWriter(ctx context.Context, key string, w io.Writer) (int64, error) {
	k, err := s.objectKey(key)
	if err != nil {
		return 0, err
	}
	out, err := s.tm.GetObject(ctx, &transfermanager.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(k)})
	if err != nil {
		if isNotFound(err) {
			return 0, fmt.Errorf("s3store: get s3://%s/%s: %w", s.bucket, k, blob.ErrNotFound)
		}
		return 0, fmt.Errorf("s3store: get s3://%s/%s: %w", s.bucket, k, err)
	}
	n, err := io.Copy(w, out.Body)
	if err == nil && out.ContentLength != nil && n != *out.ContentLength {
		err = blob.SizeError{Want: *out.ContentLength, Got: n}
	}
	if err != nil {
		return n, fmt.Errorf("s3store: get s3://%s/%s: %w", s.bucket, k, err)
	}
	return n, nil
}

// readBody is a middleware of GetObject that reads the object's body whole into data.
// The SDK retries the sending of a request and the decoding of its response, but returns
// an object's body unread: a connection cut in the middle of it would surface in the
// caller's read, after the retry loop. Placed first in the deserialize step, which runs
// within each attempt, readBody makes a body that breaks off, comes short, fails the
// response checksum the SDK validates as it is read, or stalls for longer than idle a
// failed attempt that the retryer repeats with backoff, up to the store's attempts.
type readBody struct {
	idle time.Duration
	data []byte
	// keep gives the response the body read, for a caller that reads it (partClient)
	keep bool
}

// partClient is the S3 client of the transfer manager, whose GetObject of a part reads the
// part's body within each attempt (readBody), so that a part whose body breaks off is
// fetched again with the store's retries: the transfer manager's streamed get reads the
// bodies it is handed once, and would fail on the first cut.
type partClient struct {
	*s3.Client
	idle time.Duration
}

func (c partClient) GetObject(ctx context.Context, in *s3.GetObjectInput, optFns ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	rb := &readBody{idle: c.idle, keep: true}
	return c.Client.GetObject(ctx, in, append(optFns, rb.add)...)
}

// add places the middleware first in a request's deserialize step.
func (m *readBody) add(o *s3.Options) {
	o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
		return st.Deserialize.Add(m, middleware.Before)
	})
}

// ID names the middleware in the stack.
func (*readBody) ID() string { return "s3store.ReadBody" }

// HandleDeserialize sends the attempt and reads its response's body.
func (m *readBody) HandleDeserialize(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (
	middleware.DeserializeOutput, middleware.Metadata, error,
) {
	// The attempt's request runs under attemptCtx, so that cancelling it ends a stalled
	// read of the body.
	attemptCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	out, md, err := next.HandleDeserialize(attemptCtx, in)
	if err != nil {
		return out, md, err
	}
	res, ok := out.Result.(*s3.GetObjectOutput)
	if !ok {
		return out, md, fmt.Errorf("read body: result of type %T, want *s3.GetObjectOutput", out.Result)
	}
	data, err := readAll(res.Body, res.ContentLength, m.idle, cancel)
	res.Body.Close()
	res.Body = http.NoBody
	switch {
	case err == nil:
		m.data = data
		if m.keep {
			res.Body = io.NopCloser(bytes.NewReader(data))
		}
		return out, md, nil
	case ctx.Err() != nil: // the caller gave up: not retried
		return out, md, fmt.Errorf("read body: %w", ctx.Err())
	default:
		return out, md, retryableError{fmt.Errorf("read body: %w", err)}
	}
}

// readAll reads body to its end. If no byte arrives for idle, it calls cancel, which
// aborts the attempt's request and so the read. A body of another length than length
// (when known) is an error.
func readAll(body io.Reader, length *int64, idle time.Duration, cancel context.CancelFunc) ([]byte, error) {
	var stalled atomic.Bool
	timer := time.AfterFunc(idle, func() {
		stalled.Store(true)
		cancel()
	})
	defer timer.Stop()
	var buf bytes.Buffer
	if length != nil && *length > 0 {
		buf.Grow(int(*length))
	}
	_, err := buf.ReadFrom(&idleReader{r: body, timer: timer, idle: idle})
	switch {
	case err != nil && stalled.Load():
		return nil, fmt.Errorf("no data for %v after %d bytes: %w", idle, buf.Len(), err)
	case err != nil:
		return nil, fmt.Errorf("after %d bytes: %w", buf.Len(), err)
	case length != nil && int64(buf.Len()) != *length:
		return nil, fmt.Errorf("read %d bytes of %d", buf.Len(), *length)
	}
	return buf.Bytes(), nil
}

// idleReader restarts timer, to idle, whenever a read brings data.
type idleReader struct {
	r     io.Reader
	timer *time.Timer
	idle  time.Duration
}

func (r *idleReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if n > 0 {
		r.timer.Reset(r.idle)
	}
	return n, err
}

// retryableError marks the failure of one attempt that a new attempt may not meet; the
// SDK's retryer asks for the RetryableError method.
type retryableError struct{ err error }

func (e retryableError) Error() string        { return e.err.Error() }
func (e retryableError) Unwrap() error        { return e.err }
func (e retryableError) RetryableError() bool { return true }

// List returns the keys that start with prefix, in lexical order. The prefix is relative to
// the store's prefix and may end inside a segment ("trials/0a"); it may not contain "." or
// ".." segments.
func (s *Store) List(ctx context.Context, prefix string) ([]string, error) {
	if prefix != "" {
		if err := blob.ValidKey(strings.TrimSuffix(prefix, "/")); err != nil {
			return nil, fmt.Errorf("s3store: list prefix %q: %w", prefix, err)
		}
	}
	full := s.prefix + prefix
	in := &s3.ListObjectsV2Input{Bucket: aws.String(s.bucket), Prefix: aws.String(full)}
	if s.pageSize > 0 {
		in.MaxKeys = aws.Int32(s.pageSize)
	}
	var keys []string
	p := s3.NewListObjectsV2Paginator(s.client, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("s3store: list s3://%s/%s: %w", s.bucket, full, err)
		}
		for _, o := range page.Contents {
			k := aws.ToString(o.Key)
			// Gateways over file systems may report directories as "dir/" objects.
			if !strings.HasPrefix(k, s.prefix) || strings.HasSuffix(k, "/") {
				continue
			}
			keys = append(keys, k[len(s.prefix):])
		}
	}
	slices.Sort(keys)
	return keys, nil
}

// Delete removes the object under key; deleting a missing key is not an error.
func (s *Store) Delete(ctx context.Context, key string) error {
	k, err := s.objectKey(key)
	if err != nil {
		return err
	}
	_, err = s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(k)})
	if err != nil && !isNotFound(err) {
		return fmt.Errorf("s3store: delete s3://%s/%s: %w", s.bucket, k, err)
	}
	return nil
}

// isNotFound reports whether err is S3's answer for a missing object.
func isNotFound(err error) bool {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "NoSuchKey", "NotFound":
			return true
		}
	}
	return false
}
