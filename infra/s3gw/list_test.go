package s3gw

import (
	"context"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/versity/versitygw/backend/meta"
	"github.com/versity/versitygw/backend/posix"

	"github.com/sfsweep/sfsweep/infra/s3store"
)

// posixAt opens a second posix backend on a running gateway's objects, to compare its
// listings with the pruned ones.
func posixAt(t testing.TB, g *Gateway) *posix.Posix {
	t.Helper()
	var ms meta.MetadataStorer = meta.XattrMeta{}
	if g.metaDir != "" {
		sc, err := meta.NewSideCar(g.metaDir)
		if err != nil {
			t.Fatal(err)
		}
		ms = sc
	}
	be, err := posix.New(g.root, ms, posix.PosixOpts{Concurrency: 8, SideCarDir: g.metaDir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(be.Shutdown)
	return be
}

// wire is a listing as the gateway sends it.
func wire(t *testing.T, v any) string {
	b, err := xml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestPrunedListings checks that the gateway's listings equal the posix backend's own,
// as sent, for prefixes under existing and missing directories, under files, with
// and without a delimiter, a start key and a key limit; and that over the wire a missing
// trial's checkpoints list as empty while an existing one's list its objects.
func TestPrunedListings(t *testing.T) {
	ctx := context.Background()
	g := mustStart(t, Options{Root: filepath.Join(t.TempDir(), "s3")})
	s, err := s3store.New(ctx, g.StoreConfig(""))
	if err != nil {
		t.Fatal(err)
	}
	keys := []string{
		"top.json", "trials/a/config.json", "trials/a/result.json", "trials/a/checkpoints/step-000001.safetensors",
		"trials/a/checkpoints/step-000002.safetensors", "trials/b/config.json", "trials/b0/x", "sweeps/s/plans/r/page-000000.json",
	}
	for _, k := range keys {
		if err := s.Put(ctx, k, []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.List(ctx, "trials/c/checkpoints/")
	if err != nil || len(got) != 0 {
		t.Fatalf("missing trial's checkpoints: %v, %v; want none", got, err)
	}
	got, err = s.List(ctx, "trials/a/checkpoints/")
	if want := keys[3:5]; err != nil || !slices.Equal(got, want) {
		t.Fatalf("trial a's checkpoints: %v, %v; want %v", got, err, want)
	}

	be := posixAt(t, g)
	pr := pruned{Posix: be, root: g.root}
	prefixes := []string{"", "trials/", "trials/a/", "trials/a/checkpoints/", "trials/a/check", "trials/b", "trials/b/checkpoints/",
		"trials/c/", "trials/c/checkpoints/", "trials/a/config.json/", "top.json/x", "nope/x", "sweeps/s/plans/r/page-", "trials//a/"}
	pruneable := 0
	for _, bucket := range []string{g.bucket, "no-such-bucket"} {
		for _, prefix := range prefixes {
			if pr.prefixDirMissing(&bucket, &prefix) {
				pruneable++
			}
			for _, delim := range []string{"", "/"} {
				for _, after := range []string{"", "trials/a/"} {
					for _, maxKeys := range []int32{1000, 1, 0} {
						name := fmt.Sprintf("%s %q delim %q after %q max %d", bucket, prefix, delim, after, maxKeys)
						in := &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix), Delimiter: aws.String(delim),
							StartAfter: aws.String(after), MaxKeys: aws.Int32(maxKeys)}
						want, werr := be.ListObjectsV2(ctx, in)
						have, herr := pr.ListObjectsV2(ctx, in)
						if fmt.Sprint(werr) != fmt.Sprint(herr) || wire(t, want) != wire(t, have) {
							t.Errorf("V2 %s:\n posix  %s %v\n pruned %s %v", name, wire(t, want), werr, wire(t, have), herr)
						}
						in1 := &s3.ListObjectsInput{Bucket: aws.String(bucket), Prefix: aws.String(prefix), Delimiter: aws.String(delim),
							Marker: aws.String(after), MaxKeys: aws.Int32(maxKeys)}
						want1, werr := be.ListObjects(ctx, in1)
						have1, herr := pr.ListObjects(ctx, in1)
						if fmt.Sprint(werr) != fmt.Sprint(herr) || wire(t, want1) != wire(t, have1) {
							t.Errorf("V1 %s:\n posix  %s %v\n pruned %s %v", name, wire(t, want1), werr, wire(t, have1), herr)
						}
					}
				}
			}
		}
	}
	// the prefixes under trials/b/checkpoints, trials/c, trials/c/checkpoints, a file
	// (config.json, top.json) and nope/ of the gateway's bucket
	if pruneable != 6 {
		t.Errorf("%d listings answered without a walk, want 6", pruneable)
	}
}

// BenchmarkListMissingPrefix lists a fresh trial's checkpoints in a bucket of 5,000
// trials, through the posix backend (which walks the bucket) and the pruned one.
func BenchmarkListMissingPrefix(b *testing.B) {
	g := mustStart(b, Options{Root: filepath.Join(b.TempDir(), "s3")})
	for i := range 5000 {
		dir := filepath.Join(g.root, g.bucket, "trials", fmt.Sprintf("%064x", i))
		if err := os.MkdirAll(filepath.Join(dir, "checkpoints"), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte("{}"), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	be := posixAt(b, g)
	in := &s3.ListObjectsV2Input{Bucket: aws.String(g.bucket), Prefix: aws.String("trials/fresh/checkpoints/"),
		StartAfter: aws.String(""), MaxKeys: aws.Int32(1000)}
	for _, c := range []struct {
		name string
		list func(context.Context, *s3.ListObjectsV2Input) (int, error)
	}{
		{"posix", func(ctx context.Context, in *s3.ListObjectsV2Input) (int, error) {
			r, err := be.ListObjectsV2(ctx, in)
			return len(r.Contents), err
		}},
		{"pruned", func(ctx context.Context, in *s3.ListObjectsV2Input) (int, error) {
			r, err := pruned{Posix: be, root: g.root}.ListObjectsV2(ctx, in)
			return len(r.Contents), err
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if n, err := c.list(context.Background(), in); err != nil || n != 0 {
					b.Fatal(n, err)
				}
			}
		})
	}
}
