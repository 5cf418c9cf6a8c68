package netx

import (
	"context"
	"net"
	"testing"
	"time"
)

func TestWaitListening(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := WaitListening(context.Background(), addr, time.Second); err != nil {
		t.Fatalf("listening address: %v", err)
	}
	ln.Close()
	if err := WaitListening(context.Background(), addr, 50*time.Millisecond); err == nil {
		t.Fatal("a closed port reported as listening")
	}
}
