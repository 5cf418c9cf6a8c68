// Package faultproxy is an HTTP reverse proxy for S3 endpoints that injects the faults an
// object store shows under load or failure: error responses, slow answers, dropped and cut
// connections, and requests that are never answered. Tests put it between sfsweep's S3
// client (infra/s3store) and a real endpoint (the embedded gateway of infra/s3gw) to check
// that every operation survives such faults, or fails with a clear error once its attempts
// are spent.
//
// The proxy listens on 127.0.0.1 at a free port and forwards each request unchanged —
// method, path, query, headers, body and Host header — so that AWS Signature Version 4
// signatures made for the proxy's address verify at the upstream. Requests are taken to be
// addressed path-style (/bucket/key), as s3store addresses a custom endpoint.
//
// A Decide function picks the fault of each request from its method, bucket, key, query
// and N, its number among the requests with the same method, bucket and key: N = 2 is the
// first retry of a request. Random gives a reproducible random choice.
package faultproxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Event records one injected fault.
type Event struct {
	Request
	Fault Fault
	Time  time.Time // when the fault was decided
}

// Default durations of Options.
const (
	DefaultSlowDelay = 500 * time.Millisecond
	DefaultStallFor  = 30 * time.Second
)

// Options configure a proxy.
type Options struct {
	// Upstream is the base URL of the real endpoint, e.g. http://127.0.0.1:7070: http,
	// a host and no path. Required.
	Upstream string
	// Decide picks the fault of each request; it is called concurrently. Nil means
	// Random(Seed, Rate, Faults...).
	Decide func(Request) Fault
	// Seed, Rate and Faults configure the random choice when Decide is nil; a Rate of 0
	// makes a proxy that injects nothing.
	Seed   uint64
	Rate   float64
	Faults []Fault
	// SlowDelay is the wait of a Slow request; 0 means DefaultSlowDelay.
	SlowDelay time.Duration
	// StallFor is the longest a Stall lasts; 0 means DefaultStallFor.
	StallFor time.Duration
}

// Proxy is a running fault-injecting proxy. Its methods are safe for concurrent use.
type Proxy struct {
	upstream  *url.URL
	decide    func(Request) Fault
	slowDelay time.Duration
	stallFor  time.Duration

	url       string
	srv       *http.Server
	served    chan error // the result of srv.Serve
	transport *http.Transport
	dialer    *net.Dialer
	cancel    context.CancelFunc // cancels every request's context
	handlers  sync.WaitGroup

	mu       sync.Mutex
	closed   bool
	requests int
	series   map[seriesKey]int
	events   []Event

	closeOnce sync.Once
	closeErr  error
}

type seriesKey struct{ method, bucket, key string }

// Start starts a proxy to opts.Upstream on 127.0.0.1 at a free port.
func Start(opts Options) (*Proxy, error) {
	up, err := url.Parse(opts.Upstream)
	if err != nil || up.Scheme != "http" || up.Host == "" || (up.Path != "" && up.Path != "/") || up.RawQuery != "" {
		return nil, fmt.Errorf("faultproxy: upstream %q: must be an http:// URL with a host and no path", opts.Upstream)
	}
	if opts.SlowDelay < 0 || opts.StallFor < 0 {
		return nil, fmt.Errorf("faultproxy: slow delay %v, stall %v: must not be negative", opts.SlowDelay, opts.StallFor)
	}
	for _, f := range opts.Faults {
		if f <= None || int(f) >= len(faultNames) {
			return nil, fmt.Errorf("faultproxy: faults: %v is not a fault to inject", f)
		}
	}
	p := &Proxy{
		upstream:  up,
		decide:    opts.Decide,
		slowDelay: opts.SlowDelay,
		stallFor:  opts.StallFor,
		served:    make(chan error, 1),
		dialer:    &net.Dialer{Timeout: 10 * time.Second},
		series:    map[seriesKey]int{},
	}
	if p.decide == nil {
		p.decide = Random(opts.Seed, opts.Rate, opts.Faults...)
	}
	if p.slowDelay == 0 {
		p.slowDelay = DefaultSlowDelay
	}
	if p.stallFor == 0 {
		p.stallFor = DefaultStallFor
	}
	p.transport = &http.Transport{
		DialContext:         p.dialer.DialContext,
		DisableCompression:  true, // forward the upstream's bytes as they are
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     30 * time.Second,
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("faultproxy: listen: %w", err)
	}
	p.url = "http://" + ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	p.srv = &http.Server{
		Handler:           p,
		ReadHeaderTimeout: 30 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	go func() { p.served <- p.srv.Serve(ln) }()
	return p, nil
}

// URL returns the proxy's address, http://127.0.0.1:PORT.
func (p *Proxy) URL() string { return p.url }

// Events returns every injected fault (every decision but None), in the order decided.
func (p *Proxy) Events() []Event {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.events)
}

// Requests returns the number of requests the proxy has received.
func (p *Proxy) Requests() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.requests
}

// Close stops the proxy: it closes the listener and every client connection, ends stalls
// and slow waits at once, aborts forwarded requests and waits for their handlers.
func (p *Proxy) Close() error {
	p.closeOnce.Do(func() {
		p.mu.Lock()
		p.closed = true
		p.mu.Unlock()
		p.cancel()
		err := p.srv.Close()
		p.handlers.Wait()
		p.transport.CloseIdleConnections()
		if serr := <-p.served; !errors.Is(serr, http.ErrServerClosed) && err == nil {
			err = serr
		}
		if err != nil {
			p.closeErr = fmt.Errorf("faultproxy: close: %w", err)
		}
	})
	return p.closeErr
}

// ServeHTTP decides the request's fault and applies it.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	req, ok := p.enter(r)
	if !ok {
		hangUp(w)
		return
	}
	defer p.handlers.Done()
	fault := p.decide(req)
	if fault != None {
		p.mu.Lock()
		p.events = append(p.events, Event{Request: req, Fault: fault, Time: time.Now()})
		p.mu.Unlock()
	}
	switch fault {
	case None:
		p.forward(w, r)
	case Error500:
		answerError(w, r, http.StatusInternalServerError, "InternalError", "We encountered an internal error. Please try again.")
	case Error503:
		answerError(w, r, http.StatusServiceUnavailable, "SlowDown", "Please reduce your request rate.")
	case Slow:
		if !wait(r.Context(), p.slowDelay) {
			hangUp(w)
			return
		}
		p.forward(w, r)
	case Drop:
		io.CopyN(io.Discard, r.Body, partOf(r.ContentLength))
		hangUp(w)
	case Truncate:
		if r.ContentLength != 0 {
			p.truncateRequest(w, r)
		} else {
			p.truncateResponse(w, r)
		}
	case Stall:
		io.Copy(io.Discard, r.Body)
		wait(r.Context(), p.stallFor)
		hangUp(w)
	case StallRead:
		io.CopyN(io.Discard, r.Body, partOf(r.ContentLength))
		wait(r.Context(), p.stallFor)
		hangUp(w)
	default:
		answerError(w, r, http.StatusInternalServerError, "InternalError", "faultproxy: Decide returned unknown "+fault.String())
	}
}

// enter counts the request and registers its handler, unless the proxy is closing.
func (p *Proxy) enter(r *http.Request) (Request, bool) {
	bucket, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	req := Request{Method: r.Method, Bucket: bucket, Key: key, Query: r.URL.Query()}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return req, false
	}
	p.handlers.Add(1)
	p.requests++
	k := seriesKey{r.Method, bucket, key}
	p.series[k]++
	req.N = p.series[k]
	return req, true
}

// wait waits for d or until ctx is done, and reports whether d passed.
func wait(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// partOf is how much of a request body of the given length Drop reads: half of it, or
// 32 KiB of a body of unknown length.
func partOf(length int64) int64 {
	if length < 0 {
		return 32 << 10
	}
	return length / 2
}

// hopHeaders are the headers of one connection, not forwarded. Expect is answered by the
// proxy's own server.
var hopHeaders = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization",
	"Te", "Trailer", "Transfer-Encoding", "Upgrade", "Expect",
}

func removeHopHeaders(h http.Header) {
	for _, f := range h.Values("Connection") {
		for name := range strings.SplitSeq(f, ",") {
			if name = strings.TrimSpace(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, name := range hopHeaders {
		h.Del(name)
	}
}

// outRequest returns the request to send upstream for r: the same method, path, query,
// Host header, other end-to-end headers and body.
func (p *Proxy) outRequest(r *http.Request) *http.Request {
	out := r.Clone(r.Context())
	out.RequestURI = ""
	out.URL.Scheme = p.upstream.Scheme
	out.URL.Host = p.upstream.Host
	out.Host = r.Host // SigV4 signs the Host header the client sent
	removeHopHeaders(out.Header)
	return out
}

// forward sends r upstream and copies the response back. A failure after the response
// has begun closes the client's connection, so the client sees a cut response rather than
// a short one.
func (p *Proxy) forward(w http.ResponseWriter, r *http.Request) {
	resp, err := p.transport.RoundTrip(p.outRequest(r))
	if err != nil {
		if r.Context().Err() != nil { // the client gave up, or the proxy is closing
			hangUp(w)
			return
		}
		answerError(w, r, http.StatusBadGateway, "BadGateway", "faultproxy: upstream: "+err.Error())
		return
	}
	defer resp.Body.Close()
	h := w.Header()
	for k, vs := range resp.Header {
		h[k] = vs
	}
	removeHopHeaders(h)
	w.WriteHeader(resp.StatusCode)
	if _, err := io.Copy(w, resp.Body); err != nil {
		panic(http.ErrAbortHandler) // the server closes the connection without finishing the response
	}
}

// truncateRequest sends the upstream r's headers and the first half of its body over a
// connection of its own, cuts that connection, then closes the client's.
func (p *Proxy) truncateRequest(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		hangUp(w)
		return
	}
	out := p.outRequest(r)
	out.Header.Set("Content-Length", strconv.Itoa(len(body)))
	conn, err := p.dialer.DialContext(r.Context(), "tcp", p.upstream.Host)
	if err == nil {
		bw := bufio.NewWriter(conn)
		fmt.Fprintf(bw, "%s %s HTTP/1.1\r\nHost: %s\r\n", out.Method, out.URL.RequestURI(), out.Host)
		out.Header.Write(bw)
		bw.WriteString("\r\n")
		bw.Write(body[:len(body)/2])
		bw.Flush()
		conn.Close()
	}
	hangUp(w)
}

// truncateResponse forwards r, then sends the client the response's status line, its
// headers with the full Content-Length and half its body (or, for a response without a
// body, half of its header block) and closes the connection.
func (p *Proxy) truncateResponse(w http.ResponseWriter, r *http.Request) {
	resp, err := p.transport.RoundTrip(p.outRequest(r))
	if err != nil {
		hangUp(w)
		return
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		hangUp(w)
		return
	}
	var head bytes.Buffer
	fmt.Fprintf(&head, "HTTP/1.1 %s\r\n", resp.Status)
	h := resp.Header.Clone()
	removeHopHeaders(h)
	if r.Method != http.MethodHead {
		h.Set("Content-Length", strconv.Itoa(len(body)))
	}
	h.Write(&head)
	head.WriteString("\r\n")
	conn, bw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	defer conn.Close()
	if len(body) == 0 || r.Method == http.MethodHead {
		bw.Write(head.Bytes()[:head.Len()/2])
	} else {
		bw.Write(head.Bytes())
		bw.Write(body[:len(body)/2])
	}
	bw.Flush()
}

// hangUp closes the client's connection without a response.
func hangUp(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		// Not hijackable: aborting the handler makes the server close the connection.
		panic(http.ErrAbortHandler)
	}
	conn.Close()
}

// answerError reads the request's body, as S3 does before it answers, and answers with
// status and an S3 XML error body of code and msg.
func answerError(w http.ResponseWriter, r *http.Request, status int, code, msg string) {
	io.Copy(io.Discard, r.Body)
	var b bytes.Buffer
	b.WriteString(xml.Header)
	b.WriteString("<Error><Code>" + code + "</Code><Message>")
	xml.EscapeText(&b, []byte(msg))
	b.WriteString("</Message><Resource>")
	xml.EscapeText(&b, []byte(r.URL.Path))
	b.WriteString("</Resource></Error>")
	w.Header().Set("Content-Type", "application/xml")
	w.Header().Set("Content-Length", strconv.Itoa(b.Len()))
	w.WriteHeader(status)
	w.Write(b.Bytes())
}
