package rawio

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// heldPair is a connected pair of Unix sockets, the first a Conn.
func heldPair(t *testing.T) (*Conn, net.Conn) {
	t.Helper()
	server, client := unixPair(t)
	c, ok := server.(*Conn)
	if !ok {
		t.Fatalf("accepted %T, want *Conn", server)
	}
	return c, client
}

// What is written while a connection holds reaches the peer only at
// Release, whole and in order; writes after Release go out at once.
func TestHoldReleasesInOrder(t *testing.T) {
	c, peer := heldPair(t)
	c.Hold()
	pieces := [][]byte{bytes.Repeat([]byte("a"), 4096), []byte("bb"), bytes.Repeat([]byte("c"), 7000)}
	var want []byte
	for _, p := range pieces {
		if n, err := c.Write(p); n != len(p) || err != nil {
			t.Fatalf("held write = %d, %v", n, err)
		}
		want = append(want, p...)
	}
	peer.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if n, err := peer.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("the peer read %d bytes (%v) before Release", n, err)
	}
	if err := c.Release(); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if _, err := c.Write([]byte("d")); err != nil {
		t.Fatal(err)
	}
	want = append(want, 'd')
	peer.SetReadDeadline(time.Now().Add(10 * time.Second))
	got := make([]byte, len(want))
	if _, err := io.ReadFull(peer, got); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("the peer read %d bytes, %v; equal to what was written: %v", len(got), err, bytes.Equal(got, want))
	}
	if err := c.Release(); err != nil { // nothing held: nothing written
		t.Fatalf("Release with nothing held: %v", err)
	}
}

// A Release whose write fails says so, as a write would.
func TestReleaseOnClosedPeer(t *testing.T) {
	c, peer := heldPair(t)
	peer.Close()
	c.Hold()
	_, _ = c.Write(bytes.Repeat([]byte("x"), 1<<20)) // more than the socket holds
	var op *net.OpError
	if err := c.Release(); !errors.As(err, &op) || op.Op != "write" {
		t.Fatalf("Release to a closed peer = %v, want a write *net.OpError", err)
	}
}
