package faultproxy

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"
)

// seen is a request as the upstream received it.
type seen struct {
	method, host, uri string
	header            http.Header
	body              []byte
	bodyErr           error
}

// upstream is a plain HTTP server standing in for S3: it records every request it
// receives and answers GET and HEAD with body, anything else with 204.
type upstream struct {
	srv  *httptest.Server
	reqs chan seen
	body []byte
}

func startUpstream(t *testing.T, body []byte) *upstream {
	t.Helper()
	u := &upstream{reqs: make(chan seen, 100), body: body}
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		u.reqs <- seen{method: r.Method, host: r.Host, uri: r.RequestURI, header: r.Header.Clone(), body: b, bodyErr: err}
		w.Header().Set("X-Upstream", "yes")
		switch r.Method {
		case http.MethodGet, http.MethodHead:
			w.Header().Set("Content-Length", strconv.Itoa(len(u.body)))
			w.WriteHeader(http.StatusOK)
			w.Write(u.body)
		default:
			w.WriteHeader(http.StatusNoContent)
		}
	}))
	t.Cleanup(u.srv.Close)
	return u
}

// next returns the next request the upstream received, failing the test after a second.
func (u *upstream) next(t *testing.T) seen {
	t.Helper()
	select {
	case s := <-u.reqs:
		return s
	case <-time.After(time.Second):
		t.Fatal("the upstream received no request")
		return seen{}
	}
}

// none checks that the upstream received no request.
func (u *upstream) none(t *testing.T) {
	t.Helper()
	select {
	case s := <-u.reqs:
		t.Fatalf("the upstream received %s %s", s.method, s.uri)
	case <-time.After(50 * time.Millisecond):
	}
}

func startProxy(t *testing.T, opts Options) *Proxy {
	t.Helper()
	p, err := Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Error(err)
		}
	})
	return p
}

// always returns a Decide function that gives every request f.
func always(f Fault) func(Request) Fault { return func(Request) Fault { return f } }

// newClient returns a client with a connection pool of its own, so no test sees another's
// connections.
func newClient(t *testing.T, timeout time.Duration) *http.Client {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: timeout}
}

func do(t *testing.T, c *http.Client, method, url string, body []byte) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return c.Do(req)
}

func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i/251)
	}
	return b
}
