package s3store_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/retry"

	"github.com/sfsweep/sfsweep/infra/s3store"
	"github.com/sfsweep/sfsweep/internal/faultproxy"
)

// TestFaultOnFirstAttempt injects each fault into the first request of each operation:
// the operation succeeds, its data round-trips, and the proxy saw the fault and a retry.
// A Slow first attempt succeeds within the response timeout, without a retry; a Stall is
// cut by the 500 ms response timeout and retried.
func TestFaultOnFirstAttempt(t *testing.T) {
	l := newFaultLab(t)
	ctx := context.Background()
	const slowDelay, responseTimeout = 50 * time.Millisecond, 500 * time.Millisecond
	data := randomBytes(1, 300<<10)
	for _, o := range ops(data) {
		for _, f := range append(slices.Clone(faultKinds), faultproxy.Slow) {
			t.Run(o.name+"/"+f.String(), func(t *testing.T) {
				prefix := "first/" + o.name + "-" + f.String()
				key := "obj"
				rec := &recorder{decide: func(r faultproxy.Request) faultproxy.Fault {
					if r.Method == o.method && r.N == 1 {
						return f
					}
					return faultproxy.None
				}}
				p, s := l.proxy(t, rec, faultproxy.Options{SlowDelay: slowDelay}, prefix,
					s3store.Config{MaxBackoff: 5 * time.Millisecond, ResponseTimeout: responseTimeout})
				if o.setUp != nil {
					if err := o.setUp(ctx, l.direct, prefix+"/"+key); err != nil {
						t.Fatal(err)
					}
				}
				start := time.Now()
				if err := o.run(ctx, s, key); err != nil {
					t.Fatalf("%s with %v on the first attempt: %v", o.name, f, err)
				}
				elapsed := time.Since(start)
				if o.check != nil {
					if err := o.check(ctx, l.direct, prefix+"/"+key); err != nil {
						t.Fatal(err)
					}
				}
				pk := o.proxyK(prefix, key)
				ev := p.Events()
				if len(ev) != 1 || ev[0].Fault != f || ev[0].Method != o.method || ev[0].Key != pk || ev[0].N != 1 {
					t.Fatalf("events %+v, want one %v on %s %q, N=1", ev, f, o.method, pk)
				}
				var ns []int
				for _, r := range rec.requests(o.method, pk) {
					ns = append(ns, r.N)
				}
				want := []int{1, 2}
				if f == faultproxy.Slow {
					want = []int{1}
				}
				if !slices.Equal(ns, want) {
					t.Fatalf("%s %q sent with N = %v, want %v", o.method, pk, ns, want)
				}
				switch f {
				case faultproxy.Slow:
					if elapsed < slowDelay {
						t.Errorf("%s took %v, less than the delay %v", o.name, elapsed, slowDelay)
					}
				case faultproxy.Stall:
					if elapsed < responseTimeout || elapsed > 5*time.Second {
						t.Errorf("%s took %v with a stall, want the response timeout %v and a retry", o.name, elapsed, responseTimeout)
					}
				}
			})
		}
	}
}

// TestFaultOnEveryAttempt makes every attempt of an operation fail: the operation fails
// promptly, after exactly MaxAttempts requests, with an error naming its key.
func TestFaultOnEveryAttempt(t *testing.T) {
	l := newFaultLab(t)
	ctx := context.Background()
	const attempts = 3
	const responseTimeout = 200 * time.Millisecond
	for _, o := range ops(randomBytes(2, 10<<10)) {
		for _, f := range faultKinds {
			t.Run(o.name+"/"+f.String(), func(t *testing.T) {
				prefix := "every/" + o.name + "-" + f.String()
				key := "obj"
				rec := &recorder{decide: func(r faultproxy.Request) faultproxy.Fault {
					if r.Method == o.method {
						return f
					}
					return faultproxy.None
				}}
				p, s := l.proxy(t, rec, faultproxy.Options{}, prefix, s3store.Config{
					MaxAttempts: attempts, MaxBackoff: 5 * time.Millisecond, ResponseTimeout: responseTimeout,
				})
				if o.setUp != nil {
					if err := o.setUp(ctx, l.direct, prefix+"/"+key); err != nil {
						t.Fatal(err)
					}
				}
				start := time.Now()
				err := o.run(ctx, s, key)
				elapsed := time.Since(start)
				if err == nil {
					t.Fatalf("%s succeeded with %v on every attempt", o.name, f)
				}
				want := "s3://" + l.gw.Bucket() + "/" + prefix + "/"
				if o.name != "List" {
					want += key
				}
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not name %s", err, want)
				}
				var mae *retry.MaxAttemptsError
				if !errors.As(err, &mae) || mae.Attempt != attempts {
					t.Errorf("error %q: want the SDK's error after %d attempts", err, attempts)
				}
				if n := p.Requests(); n != attempts {
					t.Errorf("%d requests reached the proxy, want %d", n, attempts)
				}
				if limit := attempts*responseTimeout + 2*time.Second; elapsed > limit {
					t.Errorf("%s failed after %v, want at most %v", o.name, elapsed, limit)
				}
			})
		}
	}
}

// TestRetryQuotaOff sends more failing attempts than the SDK's retry quota allows: with
// it, operations would fail with "retry quota exceeded" once its 500 tokens are spent.
func TestRetryQuotaOff(t *testing.T) {
	l := newFaultLab(t)
	ctx := context.Background()
	rec := &recorder{decide: func(r faultproxy.Request) faultproxy.Fault {
		if r.N <= 3 {
			return faultproxy.Error503
		}
		return faultproxy.None
	}}
	p, s := l.proxy(t, rec, faultproxy.Options{}, "quota", s3store.Config{MaxBackoff: time.Millisecond})
	// Each Delete fails three times: 10 tokens spent and 1 returned, so the quota would
	// run out after 56 of them.
	const ops = 80
	for i := range ops {
		if err := s.Delete(ctx, "k"+strconv.Itoa(i)); err != nil {
			t.Fatalf("Delete %d: %v", i, err)
		}
	}
	if n := p.Requests(); n != 4*ops {
		t.Fatalf("%d requests, want %d", n, 4*ops)
	}
}

func TestRetryConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg  s3store.Config
		want string
	}{
		{s3store.Config{Bucket: "b", MaxBackoff: -time.Second}, "max backoff -1s"},
		{s3store.Config{Bucket: "b", ResponseTimeout: -time.Second}, "response timeout -1s"},
	} {
		if _, err := s3store.New(context.Background(), tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v) = %v, want an error containing %q", tc.cfg, err, tc.want)
		}
	}
}

// A stream of several parts goes through faults of its parts: every third request of each
// series (the parts of an upload, the ranges of a download) fails once, a part upload with
// a 503, a ranged get with its body cut short. The transfer manager retries each part on
// its own, and the object is the same bytes both ways.
func TestStreamsThroughFaults(t *testing.T) {
	l := newFaultLab(t)
	ctx := context.Background()
	rec := &recorder{decide: func(r faultproxy.Request) faultproxy.Fault {
		switch {
		case r.N%3 != 2:
			return faultproxy.None
		case r.Method == http.MethodPut:
			return faultproxy.Error503
		case r.Method == http.MethodGet && r.Key != "":
			return faultproxy.Truncate
		}
		return faultproxy.None
	}}
	p, s := l.proxy(t, rec, faultproxy.Options{}, "streams", s3store.Config{MaxBackoff: 5 * time.Millisecond})
	data := randomBytes(5, 50<<20+3)
	if err := s.PutReader(ctx, "big", bytes.NewReader(data), int64(len(data))); err != nil {
		t.Fatalf("PutReader through faults: %v", err)
	}
	if b := l.objectFile(t, "streams/big"); !bytes.Equal(b, data) {
		t.Fatalf("the object is %d bytes, not the %d put", len(b), len(data))
	}
	var buf bytes.Buffer
	if n, err := s.GetWriter(ctx, "big", &buf); err != nil || n != int64(len(data)) || !bytes.Equal(buf.Bytes(), data) {
		t.Fatalf("GetWriter through faults: %d bytes, %v", n, err)
	}
	var puts, gets int
	for _, e := range p.Events() {
		switch e.Fault {
		case faultproxy.Error503:
			puts++
		case faultproxy.Truncate:
			gets++
		}
	}
	if puts == 0 || gets == 0 {
		t.Fatalf("%d part uploads and %d ranged gets were faulted: the test injected too little", puts, gets)
	}
}
