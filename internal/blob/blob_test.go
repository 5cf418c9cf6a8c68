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

// List walks only the directories that can hold keys with the prefix, and answers for
// every prefix what filtering every key by it answers.
func TestDirListPrefixes(t *testing.T) {
	ctx := context.Background()
	d, err := NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	all := []string{"ax", "ab/c", "a/bx", "a/bc/d", "a/b/c", "a/b/cd/e", "abc", "b/a/b", "a/b/cx/f", "sweeps/s-1/tables/t.md", "sweeps/s-10/x"}
	for _, k := range all {
		if err := d.Put(ctx, k, []byte(k)); err != nil {
			t.Fatal(err)
		}
	}
	for _, prefix := range []string{"", "a", "a/", "a/b", "a/b/", "a/b/c", "a/bc/", "ab", "ab/", "b/a/", "c/", "a/b/cd/e/",
		"sweeps/s-1", "sweeps/s-1/", "sweeps/s-1/tables/", "../a", "a/../b/", "a/b/c/"} {
		var want []string
		for _, k := range all {
			if len(k) >= len(prefix) && k[:len(prefix)] == prefix {
				want = append(want, k)
			}
		}
		slices.Sort(want)
		got, err := d.List(ctx, prefix)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("List(%q) = %v, %v; want %v", prefix, got, err, want)
		}
	}
}
