package s3store_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/sfsweep/sfsweep/infra/s3store"
	"github.com/sfsweep/sfsweep/internal/blob"
)

// BenchmarkStore measures Put, Get and List on the embedded gateway against blob.Dir on the
// same disk, the baseline: compare the two as a ratio.
//
//	go test -run '^$' -bench Store -benchtime 200x ./infra/s3store
func BenchmarkStore(b *testing.B) {
	ctx := context.Background()
	g := startGateway(b)
	dir, err := blob.NewDir(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	stores := []struct {
		name string
		s    blob.Store
	}{{"dir", dir}, {"s3", newStore(b, g.StoreConfig("bench"))}}
	for _, size := range []int{4 << 10, 1 << 20} {
		data := make([]byte, size)
		for _, st := range stores {
			b.Run(fmt.Sprintf("put/%s/%dKiB", st.name, size>>10), func(b *testing.B) {
				b.SetBytes(int64(size))
				for i := range b.N {
					if err := st.s.Put(ctx, fmt.Sprintf("put/%d", i%16), data); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run(fmt.Sprintf("get/%s/%dKiB", st.name, size>>10), func(b *testing.B) {
				if err := st.s.Put(ctx, "get", data); err != nil {
					b.Fatal(err)
				}
				b.SetBytes(int64(size))
				for range b.N {
					if _, err := st.s.Get(ctx, "get"); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
	for _, st := range stores {
		b.Run("list100/"+st.name, func(b *testing.B) {
			for i := range 100 {
				if err := st.s.Put(ctx, fmt.Sprintf("list/%03d", i), []byte("x")); err != nil {
					b.Fatal(err)
				}
			}
			for range b.N {
				if keys, err := st.s.List(ctx, "list/"); err != nil || len(keys) != 100 {
					b.Fatal(len(keys), err)
				}
			}
		})
	}
}

// BenchmarkBoundedWrites measures a 16 MiB Put through the SDK's default client with the
// store's bounds on waits (a deadline set before every write to the connection) against a
// plain transport without them, the baseline, on the same gateway: compare as a ratio.
//
//	go test -run '^$' -bench BoundedWrites -benchtime 40x -count 5 ./infra/s3store
func BenchmarkBoundedWrites(b *testing.B) {
	ctx := context.Background()
	g := startGateway(b)
	bounded := g.StoreConfig("bounded")
	bounded.HTTPClient = nil // the SDK's default client, with BoundWaits
	plain := g.StoreConfig("plain")
	plain.HTTPClient = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	data := make([]byte, 16<<20)
	for _, c := range []struct {
		name string
		cfg  s3store.Config
	}{{"plain", plain}, {"bounded", bounded}} {
		s := newStore(b, c.cfg)
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for i := range b.N {
				if err := s.Put(ctx, fmt.Sprintf("obj/%d", i%4), data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
