//go:build !unix

package gpulock

import (
	"context"
	"os"
	"path/filepath"
	"time"
)

// Poll is how often a waiter tries again.
var Poll = 200 * time.Millisecond

// Dir is the directory of the node's locks.
func Dir() string { return filepath.Join(os.TempDir(), "sfsweep-gpus") }

// GPU is the locks of one GPU of the node, by its UUID. Without flock(2) there are none:
// a node's processes do not share its GPUs, and a trial of several GPUs holds them alone
// only within its process.
type GPU struct {
	Dir, UUID string
}

// Share holds nothing where there is no flock.
func (g GPU) Share(ctx context.Context, waiting func()) (func(), error) { return func() {}, ctx.Err() }

// Take holds nothing where there is no flock.
func (g GPU) Take(ctx context.Context, waiting func()) (func(), error) { return func() {}, ctx.Err() }
