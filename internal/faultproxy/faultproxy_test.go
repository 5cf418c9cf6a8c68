package faultproxy

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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

func TestForwardPreservesRequestAndResponse(t *testing.T) {
	u := startUpstream(t, []byte("object bytes"))
	p := startProxy(t, Options{Upstream: u.srv.URL})
	c := newClient(t, 5*time.Second)

	body := pattern(3000)
	req, err := http.NewRequest(http.MethodPut, p.URL()+"/bkt/dir/a%20b.json?partNumber=2&x=y", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "s3.example.test:9000"
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=K/20260101/us-east-1/s3/aws4_request")
	req.Header.Set("X-Amz-Date", "20260101T000000Z")
	req.Header.Set("X-Amz-Meta-Trial", "42")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent || resp.Header.Get("X-Upstream") != "yes" {
		t.Fatalf("PUT through the proxy: %s, X-Upstream %q", resp.Status, resp.Header.Get("X-Upstream"))
	}
	s := u.next(t)
	if s.method != http.MethodPut || s.host != req.Host || s.uri != "/bkt/dir/a%20b.json?partNumber=2&x=y" {
		t.Errorf("upstream saw %s %s with Host %q, want PUT /bkt/dir/a%%20b.json?partNumber=2&x=y with Host %q", s.method, s.uri, s.host, req.Host)
	}
	for _, h := range []string{"Authorization", "X-Amz-Date", "X-Amz-Meta-Trial"} {
		if got := s.header.Get(h); got != req.Header.Get(h) {
			t.Errorf("upstream saw %s %q, want %q", h, got, req.Header.Get(h))
		}
	}
	if s.bodyErr != nil || !bytes.Equal(s.body, body) {
		t.Errorf("upstream read %d bytes (%v), want the %d sent", len(s.body), s.bodyErr, len(body))
	}

	resp, err = do(t, c, http.MethodGet, p.URL()+"/bkt/k", nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || string(got) != "object bytes" || resp.ContentLength != int64(len("object bytes")) {
		t.Fatalf("GET through the proxy: %q (Content-Length %d), %v", got, resp.ContentLength, err)
	}
	u.next(t)
	if n, ev := p.Requests(), p.Events(); n != 2 || len(ev) != 0 {
		t.Fatalf("Requests = %d, Events = %v; want 2 and none", n, ev)
	}
}

func TestErrorFaults(t *testing.T) {
	for _, tc := range []struct {
		fault  Fault
		status int
		code   string
	}{
		{Error500, 500, "<Code>InternalError</Code>"},
		{Error503, 503, "<Code>SlowDown</Code>"},
	} {
		t.Run(tc.fault.String(), func(t *testing.T) {
			u := startUpstream(t, nil)
			p := startProxy(t, Options{Upstream: u.srv.URL, Decide: always(tc.fault)})
			c := newClient(t, 5*time.Second)
			resp, err := do(t, c, http.MethodPut, p.URL()+"/bkt/a/b?x=1", pattern(100))
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != tc.status || !bytes.Contains(b, []byte(tc.code)) ||
				!bytes.Contains(b, []byte("<Resource>/bkt/a/b</Resource>")) || resp.Header.Get("Content-Type") != "application/xml" {
				t.Fatalf("answer %s %q (%s), %v; want %d with %s", resp.Status, b, resp.Header.Get("Content-Type"), err, tc.status, tc.code)
			}
			u.none(t)
			ev := p.Events()
			if len(ev) != 1 || ev[0].Fault != tc.fault || ev[0].Method != http.MethodPut || ev[0].Bucket != "bkt" ||
				ev[0].Key != "a/b" || ev[0].N != 1 || ev[0].Query.Get("x") != "1" || ev[0].Time.IsZero() {
				t.Fatalf("Events = %+v", ev)
			}
		})
	}
}

func TestDrop(t *testing.T) {
	u := startUpstream(t, []byte("x"))
	p := startProxy(t, Options{Upstream: u.srv.URL, Decide: always(Drop)})
	for _, method := range []string{http.MethodPut, http.MethodGet} {
		c := newClient(t, 5*time.Second)
		resp, err := do(t, c, method, p.URL()+"/bkt/k", pattern(64<<10))
		if err == nil {
			resp.Body.Close()
			t.Fatalf("%s with Drop: %s, want a connection error", method, resp.Status)
		}
	}
	u.none(t)
	if n := len(p.Events()); n != 2 {
		t.Fatalf("%d events, want 2", n)
	}
}

func TestTruncateRequest(t *testing.T) {
	u := startUpstream(t, nil)
	p := startProxy(t, Options{Upstream: u.srv.URL, Decide: always(Truncate)})
	c := newClient(t, 5*time.Second)
	body := pattern(1001)
	resp, err := do(t, c, http.MethodPut, p.URL()+"/bkt/k?a=b", body)
	if err == nil {
		resp.Body.Close()
		t.Fatalf("PUT with Truncate: %s, want a connection error", resp.Status)
	}
	s := u.next(t)
	if s.uri != "/bkt/k?a=b" || s.header.Get("Content-Length") != "1001" {
		t.Errorf("upstream saw %s with Content-Length %q, want /bkt/k?a=b with 1001", s.uri, s.header.Get("Content-Length"))
	}
	if !errors.Is(s.bodyErr, io.ErrUnexpectedEOF) || !bytes.Equal(s.body, body[:500]) {
		t.Fatalf("upstream read %d bytes, %v; want the first 500 and io.ErrUnexpectedEOF", len(s.body), s.bodyErr)
	}
}

func TestTruncateResponse(t *testing.T) {
	full := pattern(10000)
	u := startUpstream(t, full)
	p := startProxy(t, Options{Upstream: u.srv.URL, Decide: always(Truncate)})
	c := newClient(t, 5*time.Second)

	resp, err := do(t, c, http.MethodGet, p.URL()+"/bkt/k", nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.ContentLength != int64(len(full)) || resp.Header.Get("X-Upstream") != "yes" {
		t.Errorf("GET with Truncate: %s, Content-Length %d; want 200 and %d with the upstream's headers", resp.Status, resp.ContentLength, len(full))
	}
	if !errors.Is(err, io.ErrUnexpectedEOF) || !bytes.Equal(got, full[:len(full)/2]) {
		t.Fatalf("read %d bytes, %v; want the first %d and io.ErrUnexpectedEOF", len(got), err, len(full)/2)
	}
	u.next(t)

	// A response without a body loses half its header block.
	resp, err = do(t, c, http.MethodDelete, p.URL()+"/bkt/k", nil)
	if err == nil {
		resp.Body.Close()
		t.Fatalf("DELETE with Truncate: %s, want an error", resp.Status)
	}
	if s := u.next(t); s.method != http.MethodDelete {
		t.Fatalf("upstream saw %s, want the DELETE forwarded", s.method)
	}
}

func TestSlow(t *testing.T) {
	u := startUpstream(t, []byte("late"))
	const delay = 150 * time.Millisecond
	p := startProxy(t, Options{Upstream: u.srv.URL, Decide: always(Slow), SlowDelay: delay})
	c := newClient(t, 5*time.Second)
	start := time.Now()
	resp, err := do(t, c, http.MethodGet, p.URL()+"/bkt/k", nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if el := time.Since(start); err != nil || string(got) != "late" || el < delay {
		t.Fatalf("GET with Slow: %q, %v after %v; want %q after at least %v", got, err, el, "late", delay)
	}
	u.next(t)
}

func TestStall(t *testing.T) {
	u := startUpstream(t, []byte("x"))

	t.Run("elapses", func(t *testing.T) {
		const stall = 200 * time.Millisecond
		p := startProxy(t, Options{Upstream: u.srv.URL, Decide: always(Stall), StallFor: stall})
		start := time.Now()
		resp, err := do(t, newClient(t, 5*time.Second), http.MethodPut, p.URL()+"/bkt/k", pattern(1000))
		if el := time.Since(start); err == nil || el < stall {
			if err == nil {
				resp.Body.Close()
			}
			t.Fatalf("PUT with Stall: error %v after %v; want a connection error after at least %v", err, el, stall)
		}
		u.none(t)
	})

	t.Run("client gives up", func(t *testing.T) {
		p := startProxy(t, Options{Upstream: u.srv.URL, Decide: always(Stall)})
		start := time.Now()
		resp, err := do(t, newClient(t, 100*time.Millisecond), http.MethodGet, p.URL()+"/bkt/k", nil)
		if err == nil {
			resp.Body.Close()
			t.Fatalf("GET with Stall: %s, want a timeout", resp.Status)
		}
		// The stall ended with the client: closing the proxy does not wait for StallFor.
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		if el := time.Since(start); el > 5*time.Second {
			t.Fatalf("the stall lasted %v after its client gave up", el)
		}
	})

	t.Run("ends at Close", func(t *testing.T) {
		p := startProxy(t, Options{Upstream: u.srv.URL, Decide: always(Stall)})
		errc := make(chan error, 1)
		go func() {
			resp, err := do(t, newClient(t, 0), http.MethodGet, p.URL()+"/bkt/k", nil)
			if err == nil {
				resp.Body.Close()
			}
			errc <- err
		}()
		for p.Requests() == 0 {
			time.Sleep(5 * time.Millisecond)
		}
		start := time.Now()
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-errc:
			if err == nil {
				t.Fatal("the stalled request got a response")
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the stalled request did not end at Close")
		}
		if el := time.Since(start); el > 5*time.Second {
			t.Fatalf("Close took %v", el)
		}
	})
}

// countingConn counts the bytes a client wrote.
type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c countingConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.n.Add(int64(n))
	return n, err
}

// StallRead leaves an upload of more than the connection buffers blocked in the client's
// write, then closes the connection after StallFor; the upstream sees nothing.
func TestStallRead(t *testing.T) {
	u := startUpstream(t, []byte("x"))
	const stall = 500 * time.Millisecond
	p := startProxy(t, Options{Upstream: u.srv.URL, Decide: always(StallRead), StallFor: stall})
	var written atomic.Int64
	var d net.Dialer
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		return countingConn{c, &written}, err
	}}
	t.Cleanup(tr.CloseIdleConnections)
	body := pattern(64 << 20)
	errc := make(chan error, 1)
	start := time.Now()
	go func() {
		resp, err := do(t, &http.Client{Transport: tr}, http.MethodPut, p.URL()+"/bkt/k", body)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	for p.Requests() == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(stall / 2)
	if n := written.Load(); n >= int64(len(body)) {
		t.Fatalf("the client wrote %d bytes of a %d-byte upload while the proxy stopped reading", n, len(body))
	}
	select {
	case err := <-errc:
		if el := time.Since(start); err == nil || el < stall {
			t.Fatalf("PUT with StallRead: error %v after %v; want a connection error after at least %v", err, el, stall)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the stalled upload did not end after StallFor")
	}
	u.none(t)
}

func TestSeriesAndEvents(t *testing.T) {
	u := startUpstream(t, []byte("x"))
	var mu sync.Mutex
	var decided []Request
	p := startProxy(t, Options{Upstream: u.srv.URL, Decide: func(r Request) Fault {
		mu.Lock()
		defer mu.Unlock()
		decided = append(decided, r)
		if r.N == 1 {
			return Error503
		}
		return None
	}})
	c := newClient(t, 5*time.Second)
	paths := []struct{ method, path string }{
		{"GET", "/b/k"}, {"GET", "/b/k"}, {"PUT", "/b/k"}, {"GET", "/b/dir/k"},
		{"GET", "/b?list-type=2"}, {"GET", "/b?list-type=2&continuation-token=t"}, {"GET", "/b/k"},
	}
	for _, r := range paths {
		resp, err := do(t, c, r.method, p.URL()+r.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	var gotN []int
	for _, r := range decided {
		gotN = append(gotN, r.N)
	}
	if want := []int{1, 2, 1, 1, 1, 2, 3}; !slices.Equal(gotN, want) {
		t.Fatalf("N = %v, want %v", gotN, want)
	}
	if r := decided[3]; r.Bucket != "b" || r.Key != "dir/k" {
		t.Errorf("/b/dir/k parsed as bucket %q key %q", r.Bucket, r.Key)
	}
	if r := decided[5]; r.Bucket != "b" || r.Key != "" || r.Query.Get("continuation-token") != "t" {
		t.Errorf("a listing parsed as bucket %q key %q query %v", r.Bucket, r.Key, r.Query)
	}
	ev := p.Events()
	var got []string
	for _, e := range ev {
		if e.Fault != Error503 {
			t.Errorf("event %+v, want only 503s", e)
		}
		got = append(got, e.Method+" "+e.Bucket+"/"+e.Key)
	}
	if want := []string{"GET b/k", "PUT b/k", "GET b/dir/k", "GET b/"}; !slices.Equal(got, want) {
		t.Fatalf("events %q, want %q", got, want)
	}
	for i := 1; i < len(ev); i++ {
		if ev[i].Time.Before(ev[i-1].Time) {
			t.Fatalf("events out of order: %v then %v", ev[i-1].Time, ev[i].Time)
		}
	}
	if n := p.Requests(); n != len(paths) {
		t.Fatalf("Requests = %d, want %d", n, len(paths))
	}
}

func TestRandom(t *testing.T) {
	reqs := make([]Request, 4000)
	for i := range reqs {
		reqs[i] = Request{Method: []string{"GET", "PUT"}[i%2], Bucket: "b", Key: "k" + strconv.Itoa(i/8), N: 1 + i%4}
	}
	decideAll := func(d func(Request) Fault) []Fault {
		out := make([]Fault, len(reqs))
		var wg sync.WaitGroup
		for w := range 8 { // concurrently, in an order that differs between runs
			wg.Go(func() {
				for i := w; i < len(reqs); i += 8 {
					out[i] = d(reqs[i])
				}
			})
		}
		wg.Wait()
		return out
	}
	a := decideAll(Random(7, 0.3, Error500, Drop, Truncate))
	if b := decideAll(Random(7, 0.3, Error500, Drop, Truncate)); !slices.Equal(a, b) {
		t.Fatal("Random with the same seed decided differently")
	}
	if c := decideAll(Random(8, 0.3, Error500, Drop, Truncate)); slices.Equal(a, c) {
		t.Fatal("Random with another seed decided the same")
	}
	counts := map[Fault]int{}
	for _, f := range a {
		counts[f]++
	}
	faulty := len(reqs) - counts[None]
	if r := float64(faulty) / float64(len(reqs)); math.Abs(r-0.3) > 0.04 {
		t.Errorf("fault rate %.3f, want about 0.3", r)
	}
	for f, n := range counts {
		switch f {
		case None:
		case Error500, Drop, Truncate:
			if n < faulty/5 {
				t.Errorf("%v drawn %d times of %d faults", f, n, faulty)
			}
		default:
			t.Errorf("%v drawn, not among the faults given", f)
		}
	}
	for _, f := range decideAll(Random(1, 0)) {
		if f != None {
			t.Fatalf("rate 0 gave %v", f)
		}
	}
	seenAll := map[Fault]bool{}
	for _, f := range decideAll(Random(1, 1)) {
		seenAll[f] = true
	}
	if len(seenAll) != len(All) || seenAll[None] {
		t.Fatalf("rate 1 without a list drew %v, want every fault of All", seenAll)
	}
}

// TestRandomProxy checks that a proxy without Decide draws its faults with Random.
func TestRandomProxy(t *testing.T) {
	u := startUpstream(t, []byte("x"))
	p := startProxy(t, Options{Upstream: u.srv.URL, Seed: 3, Rate: 0.5, Faults: []Fault{Error503}})
	c := newClient(t, 5*time.Second)
	d := Random(3, 0.5, Error503)
	var want []int
	for i := range 40 {
		key := "k" + strconv.Itoa(i)
		resp, err := do(t, c, http.MethodGet, p.URL()+"/b/"+key, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if d(Request{Method: "GET", Bucket: "b", Key: key, N: 1}) == Error503 {
			want = append(want, i)
			if resp.StatusCode != 503 {
				t.Errorf("GET %s: %s, want 503", key, resp.Status)
			}
		}
	}
	var got []int
	for _, e := range p.Events() {
		i, _ := strconv.Atoi(strings.TrimPrefix(e.Key, "k"))
		got = append(got, i)
	}
	if !slices.Equal(got, want) || len(want) == 0 {
		t.Fatalf("faults on requests %v, want %v", got, want)
	}
}

func TestStartErrors(t *testing.T) {
	for _, o := range []Options{
		{},
		{Upstream: "127.0.0.1:80"},
		{Upstream: "https://127.0.0.1:80"},
		{Upstream: "http://127.0.0.1:80/prefix"},
		{Upstream: "http://127.0.0.1:80", SlowDelay: -1},
		{Upstream: "http://127.0.0.1:80", Faults: []Fault{None}},
	} {
		if p, err := Start(o); err == nil {
			p.Close()
			t.Errorf("Start(%+v) succeeded", o)
		} else if !strings.HasPrefix(err.Error(), "faultproxy: ") {
			t.Errorf("Start(%+v): %v, want an error naming the package", o, err)
		}
	}
}

func TestFaultString(t *testing.T) {
	want := map[Fault]string{None: "none", Error500: "500", Error503: "503", Slow: "slow", Drop: "drop",
		Truncate: "truncate", Stall: "stall", StallRead: "stall-read", Fault(99): "Fault(99)"}
	for f, s := range want {
		if f.String() != s {
			t.Errorf("Fault(%d).String() = %q, want %q", int(f), f.String(), s)
		}
	}
}

// TestUpstreamDown checks that a proxy whose upstream is gone answers 502.
func TestUpstreamDown(t *testing.T) {
	u := startUpstream(t, nil)
	u.srv.Close()
	p := startProxy(t, Options{Upstream: u.srv.URL})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, p.URL()+"/b/k", nil)
	resp, err := newClient(t, 0).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("GET with the upstream down: %s, want 502", resp.Status)
	}
}
