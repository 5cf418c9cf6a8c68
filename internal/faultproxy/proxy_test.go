package faultproxy

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

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
