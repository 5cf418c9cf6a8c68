// Package s3store is the blob.Store of sfsweep on any S3-compatible object store (AWS S3,
// MinIO, Ceph, the embedded gateway of infra/s3gw), through aws-sdk-go-v2.
//
// A Store works in one bucket under one key prefix: the object of key k is
// Prefix + k. Keys are checked with blob.ValidKey, so none can leave the prefix. An S3
// PUT replaces an object whole, so Put is atomic as blob.Store requires.
package s3store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/sfsweep/sfsweep/internal/blob"
)

// DefaultMaxAttempts is the number of attempts of one request when Config.MaxAttempts is 0:
// the first try and up to four retries with exponential backoff and jitter.
const DefaultMaxAttempts = 5

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
	// MaxAttempts bounds the attempts of each request (transient errors, throttling and
	// 5xx responses are retried with backoff); 0 means DefaultMaxAttempts.
	MaxAttempts int
	// PageSize is the number of keys asked for per List request; 0 means the server's
	// default (1000 on AWS).
	PageSize int
	// HTTPClient sends the requests; nil means the SDK's default client.
	HTTPClient *http.Client
}

// Store is a blob.Store in one S3 bucket under one key prefix. It is safe for concurrent use.
type Store struct {
	client   *s3.Client
	bucket   string
	prefix   string
	pageSize int32
}

var _ blob.Store = (*Store)(nil)

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
	if cfg.PageSize < 0 || cfg.PageSize > 1000 {
		return nil, fmt.Errorf("s3store: page size %d: must be in [0, 1000]", cfg.PageSize)
	}
	if cfg.Endpoint != "" {
		u, err := url.Parse(cfg.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("s3store: endpoint %q: must be an http:// or https:// URL with a host", cfg.Endpoint)
		}
	}
	attempts := cfg.MaxAttempts
	if attempts == 0 {
		attempts = DefaultMaxAttempts
	}

	opts := []func(*config.LoadOptions) error{
		config.WithRetryer(func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = attempts
				o.MaxBackoff = 10 * time.Second
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
		}
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
			o.UsePathStyle = true
		}
	})
	return &Store{client: client, bucket: cfg.Bucket, prefix: prefix, pageSize: int32(cfg.PageSize)}, nil
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
func (s *Store) Get(ctx context.Context, key string) ([]byte, error) {
	k, err := s.objectKey(key)
	if err != nil {
		return nil, err
	}
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(k)})
	if err != nil {
		if isNotFound(err) {
			return nil, fmt.Errorf("s3store: get s3://%s/%s: %w", s.bucket, k, blob.ErrNotFound)
		}
		return nil, fmt.Errorf("s3store: get s3://%s/%s: %w", s.bucket, k, err)
	}
	defer out.Body.Close()
	var buf bytes.Buffer
	if out.ContentLength != nil && *out.ContentLength > 0 {
		buf.Grow(int(*out.ContentLength))
	}
	if _, err := io.Copy(&buf, out.Body); err != nil {
		return nil, fmt.Errorf("s3store: get s3://%s/%s: read body: %w", s.bucket, k, err)
	}
	if out.ContentLength != nil && int64(buf.Len()) != *out.ContentLength {
		return nil, fmt.Errorf("s3store: get s3://%s/%s: read %d bytes of %d", s.bucket, k, buf.Len(), *out.ContentLength)
	}
	return buf.Bytes(), nil
}

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
