// Package netx holds the two network helpers the embedded servers share: waiting for a
// port to accept connections.
package netx

import (
	"context"
	"fmt"
	"net"
	"time"
)

// WaitListening waits until addr accepts TCP connections, for at most timeout.
func WaitListening(ctx context.Context, addr string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var d net.Dialer
	for {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			return c.Close()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not listening: %w", err)
		case <-time.After(5 * time.Millisecond):
		}
	}
}
