package s3store_test

import (
	"bytes"
	"context"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/sfsweep/sfsweep/infra/s3store"
	"github.com/sfsweep/sfsweep/internal/faultproxy"
)

// TestPutStopsBeingRead: the server takes half of a 64 MiB upload and then stops
// reading, with no answer. The write that the full connection buffers leave blocked fails
// after the response timeout, and the retry stores the object whole. Without a bound on
// writes the Put would hang until its context ends (a minute here).
func TestPutStopsBeingRead(t *testing.T) {
	l := newFaultLab(t)
	rec := &recorder{decide: func(r faultproxy.Request) faultproxy.Fault {
		if r.Method == "PUT" && r.N == 1 {
			return faultproxy.StallRead
		}
		return faultproxy.None
	}}
	const responseTimeout = 500 * time.Millisecond
	p, s := l.proxy(t, rec, faultproxy.Options{StallFor: 10 * time.Minute}, "stall-read",
		s3store.Config{MaxBackoff: 5 * time.Millisecond, ResponseTimeout: responseTimeout})
	data := randomBytes(3, 64<<20)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := time.Now()
	if err := s.Put(ctx, "obj", data); err != nil {
		t.Fatalf("Put after %v: %v", time.Since(start), err)
	}
	var ns []int
	for _, r := range rec.requests("PUT", "stall-read/obj") {
		ns = append(ns, r.N)
	}
	if ev := p.Events(); len(ev) != 1 || ev[0].Fault != faultproxy.StallRead || !slices.Equal(ns, []int{1, 2}) {
		t.Fatalf("events %+v, PUT sent with N = %v; want one stall-read, then a retry", ev, ns)
	}
	if !bytes.Equal(l.objectFile(t, "stall-read/obj"), data) {
		t.Fatal("the stored object differs from the one put")
	}
	t.Logf("Put of %d MiB with a stalled first attempt: %v (response timeout %v)", len(data)>>20, time.Since(start), responseTimeout)
}

// TestGetBodyStall serves a body that stops halfway and then nothing: Get gives up on the
// attempt after the response timeout and gets the whole body on the next.
func TestGetBodyStall(t *testing.T) {
	body := randomBytes(7, 64<<10)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	srv, n := fakeS3(t, body, func(n int, w http.ResponseWriter, r *http.Request) bool {
		if n > 1 {
			return false
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.Write(body[:len(body)/2])
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-release:
		}
		return true
	})
	const timeout = 200 * time.Millisecond
	s := fakeStore(t, srv.URL, s3store.Config{MaxBackoff: time.Millisecond, ResponseTimeout: timeout})
	start := time.Now()
	got, err := s.Get(context.Background(), "k")
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("Get: %d bytes, %v; want the %d served", len(got), err, len(body))
	}
	if el := time.Since(start); el < timeout || n.Load() != 2 {
		t.Fatalf("Get took %v and %d attempts, want the timeout %v and 2", el, n.Load(), timeout)
	}
}
