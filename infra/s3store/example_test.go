package s3store_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sfsweep/sfsweep/infra/s3gw"
	"github.com/sfsweep/sfsweep/infra/s3store"
)

// The embedded mode: a gateway storing plain files, and a store on it under a prefix.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "sfsweep-example-")
	defer os.RemoveAll(dir)

	gw, err := s3gw.Start(ctx, s3gw.Options{Root: filepath.Join(dir, "s3")})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer gw.Stop()
	store, err := s3store.New(ctx, gw.StoreConfig("sweeps"))
	if err != nil {
		fmt.Println(err)
		return
	}
	store.Put(ctx, "trials/0a1b/result.json", []byte(`{"final_loss":3.21}`))
	keys, _ := store.List(ctx, "trials/")
	data, _ := store.Get(ctx, keys[0])
	fmt.Println(keys, string(data))

	// the object is a plain file: Root/bucket/prefix/key
	file, _ := os.ReadFile(filepath.Join(dir, "s3", gw.Bucket(), "sweeps", "trials", "0a1b", "result.json"))
	fmt.Println(string(file))
	// Output:
	// [trials/0a1b/result.json] {"final_loss":3.21}
	// {"final_loss":3.21}
}
