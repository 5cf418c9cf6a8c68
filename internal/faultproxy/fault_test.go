package faultproxy

import (
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

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

func TestFaultString(t *testing.T) {
	want := map[Fault]string{None: "none", Error500: "500", Error503: "503", Slow: "slow", Drop: "drop",
		Truncate: "truncate", Stall: "stall", StallRead: "stall-read", Fault(99): "Fault(99)"}
	for f, s := range want {
		if f.String() != s {
			t.Errorf("Fault(%d).String() = %q, want %q", int(f), f.String(), s)
		}
	}
}
