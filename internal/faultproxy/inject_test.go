package faultproxy

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"
)

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
