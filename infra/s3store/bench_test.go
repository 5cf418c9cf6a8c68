package s3store_test

import (
	"context"
	"fmt"
	"testing"

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
