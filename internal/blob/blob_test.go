package blob

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestDir(t *testing.T) {
	ctx := context.Background()
	d, err := NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Get(ctx, "a/b"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get of a missing key: %v, want ErrNotFound", err)
	}
	for _, k := range []string{"t/2/x.json", "t/1/x.json", "u/y"} {
		if err := d.Put(ctx, k, []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Put(ctx, "t/1/x.json", []byte("new")); err != nil {
		t.Fatal(err)
	}
	if b, err := d.Get(ctx, "t/1/x.json"); err != nil || string(b) != "new" {
		t.Fatalf("Get after overwrite = %q, %v", b, err)
	}
	// a leftover temporary file of an interrupted Put is not an object
	if err := os.WriteFile(filepath.Join(d.Root(), "t", ".tmp-z-1"), []byte("partial"), 0o644); err != nil {
		t.Fatal(err)
	}
	keys, err := d.List(ctx, "t/")
	if err != nil || !slices.Equal(keys, []string{"t/1/x.json", "t/2/x.json"}) {
		t.Fatalf("List(t/) = %v, %v", keys, err)
	}
	if err := d.Delete(ctx, "t/1/x.json"); err != nil {
		t.Fatal(err)
	}
	if err := d.Delete(ctx, "t/1/x.json"); err != nil {
		t.Fatalf("second Delete: %v", err)
	}
	if _, err := d.Get(ctx, "t/1/x.json"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get after Delete: %v", err)
	}
}

func TestValidKey(t *testing.T) {
	for _, k := range []string{"", "/etc/passwd", "../x", "a/../../b", "a//b", "a/./b", `a\b`, "a\x00b", "a/"} {
		if ValidKey(k) == nil {
			t.Errorf("ValidKey(%q) = nil, want an error", k)
		}
	}
	for _, k := range []string{"a", "trials/0a1b/result.json", "x..y/z"} {
		if err := ValidKey(k); err != nil {
			t.Errorf("ValidKey(%q) = %v", k, err)
		}
	}
	d, _ := NewDir(t.TempDir())
	if err := d.Put(context.Background(), "../../escape", []byte("x")); err == nil {
		t.Error("Put of ../../escape succeeded")
	}
}
