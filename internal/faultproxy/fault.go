package faultproxy

import (
	"hash/fnv"
	"math/rand/v2"
	"net/url"
	"slices"
	"strconv"
)

// Fault is what the proxy does to one request.
type Fault int

// The faults. Every fault but None, Slow and an elapsed Stall leaves the client without a
// usable response, so the request fails and a client that retries sends it again.
const (
	// None forwards the request and its response unchanged.
	None Fault = iota
	// Error500 answers 500 InternalError with an S3 XML error body, without forwarding.
	Error500
	// Error503 answers 503 SlowDown with an S3 XML error body, without forwarding.
	Error503
	// Slow waits Options.SlowDelay, then forwards the request normally.
	Slow
	// Drop reads part of the request body, then closes the client's connection without
	// a response. The upstream never sees the request.
	Drop
	// Truncate cuts a transfer in half. A request with a body (a PUT or POST) reaches the
	// upstream with its full Content-Length but only the first half of its body, after
	// which the upstream connection is cut, and the client's connection is closed without
	// a response. Any other request is forwarded, and its response reaches the client with
	// its status, its headers and its full Content-Length but only half its body, or, if
	// the response has no body, only half its header block; then the connection is closed.
	Truncate
	// Stall reads the request and answers nothing until Options.StallFor has passed, the
	// client gives up or the proxy is closed, then closes the client's connection.
	Stall
	// StallRead reads part of the request body (as Drop), then stops reading and answers
	// nothing until Options.StallFor has passed, the client gives up or the proxy is
	// closed, then closes the client's connection: a client uploading more than the
	// connection's buffers hold is left blocked in a write, not waiting for a response.
	StallRead
)

var faultNames = [...]string{
	None:      "none",
	Error500:  "500",
	Error503:  "503",
	Slow:      "slow",
	Drop:      "drop",
	Truncate:  "truncate",
	Stall:     "stall",
	StallRead: "stall-read",
}

// String returns the fault's short name: "none", "500", "503", "slow", "drop", "truncate",
// "stall" or "stall-read".
func (f Fault) String() string {
	if f < 0 || int(f) >= len(faultNames) {
		return "Fault(" + strconv.Itoa(int(f)) + ")"
	}
	return faultNames[f]
}

// All lists every fault but None.
var All = []Fault{Error500, Error503, Slow, Drop, Truncate, Stall, StallRead}

// Request is what a Decide function knows of a request.
type Request struct {
	Method string
	Bucket string // first segment of the path; "" for the service root
	Key    string // rest of the path, unescaped; "" for a bucket-level request such as a listing
	Query  url.Values
	// N is the request's number among those with the same Method, Bucket and Key,
	// counted from 1: a client's first retry of a request has N = 2. Requests that differ
	// only in their query (the pages of a listing) count as one series.
	N int
}

// Random returns a Decide function that gives a request a fault with probability rate,
// chosen uniformly from faults (from All if faults is empty). The choice depends only on
// seed and the request's Method, Bucket, Key and N, so the same requests get the same
// faults in every run, whatever order concurrent requests arrive in. A rate of 0 or less
// injects nothing, 1 or more a fault on every request. The function is safe for
// concurrent use.
func Random(seed uint64, rate float64, faults ...Fault) func(Request) Fault {
	if len(faults) == 0 {
		faults = All
	}
	faults = slices.Clone(faults)
	return func(r Request) Fault {
		h := fnv.New64a()
		for _, s := range []string{r.Method, r.Bucket, r.Key, strconv.Itoa(r.N)} {
			h.Write([]byte(s))
			h.Write([]byte{0})
		}
		rng := rand.New(rand.NewPCG(seed, h.Sum64()))
		if rng.Float64() >= rate {
			return None
		}
		return faults[rng.IntN(len(faults))]
	}
}
