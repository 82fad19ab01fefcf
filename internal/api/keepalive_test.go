package api

import (
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"testing"
	"time"
)

// HTTP/2 frame types and flags (RFC 9113 section 6) the keepalive test
// speaks.
const (
	h2Settings = 0x4
	h2Ping     = 0x6
	h2GoAway   = 0x7
	h2FlagAck  = 0x1
)

// h2Frame is one HTTP/2 frame.
type h2Frame struct {
	typ, flags byte
	payload    []byte
}

// h2Conn is a bare HTTP/2 client connection: enough to send pings the way
// an app's gRPC library does. grpc-go's own client never pings more often
// than every 10 s, which would make the test slow.
type h2Conn struct {
	conn   net.Conn
	frames chan h2Frame // closed when the connection ends
	done   chan struct{}
}

func dialH2(t *testing.T, path string) *h2Conn {
	t.Helper()
	conn, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	c := &h2Conn{conn: conn, frames: make(chan h2Frame, 16), done: make(chan struct{})}
	go c.read() // owned: the cleanup waits for done
	t.Cleanup(func() {
		conn.Close()
		for range c.frames { // unblock read until it sees the close
		}
		<-c.done
	})
	if _, err := io.WriteString(conn, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	c.write(t, h2Settings, 0, nil)
	return c
}

// read delivers the server's frames until the connection ends.
func (c *h2Conn) read() {
	defer close(c.done)
	defer close(c.frames)
	var hdr [9]byte
	for {
		if _, err := io.ReadFull(c.conn, hdr[:]); err != nil {
			return
		}
		n := int(hdr[0])<<16 | int(hdr[1])<<8 | int(hdr[2])
		f := h2Frame{typ: hdr[3], flags: hdr[4], payload: make([]byte, n)}
		if _, err := io.ReadFull(c.conn, f.payload); err != nil {
			return
		}
		c.frames <- f
	}
}

// write sends one frame on stream 0.
func (c *h2Conn) write(t *testing.T, typ, flags byte, payload []byte) {
	t.Helper()
	b := make([]byte, 9, 9+len(payload))
	b[0], b[1], b[2] = byte(len(payload)>>16), byte(len(payload)>>8), byte(len(payload))
	b[3], b[4] = typ, flags
	if _, err := c.conn.Write(append(b, payload...)); err != nil {
		t.Fatal(err)
	}
}

// await reads frames until want reports true for one, acknowledging the
// server's settings on the way. A GOAWAY or the end of the connection is
// an error.
func (c *h2Conn) await(want func(h2Frame) bool) error {
	for f := range c.frames {
		switch {
		case f.typ == h2GoAway:
			code := binary.BigEndian.Uint32(f.payload[4:8])
			return fmt.Errorf("server sent GOAWAY, code %d, %q", code, f.payload[8:])
		case f.typ == h2Settings && f.flags&h2FlagAck == 0:
			b := []byte{0, 0, 0, h2Settings, h2FlagAck, 0, 0, 0, 0}
			if _, err := c.conn.Write(b); err != nil {
				return err
			}
		case want(f):
			return nil
		}
	}
	return io.ErrUnexpectedEOF
}

// An app may keep its connection alive with pings as often as
// keepaliveMinTime, also while it has no call in flight; grpc-go's default
// policy answers the fourth such ping with GOAWAY "too_many_pings", which
// ends the app's calls.
func TestKeepalivePingsAreAccepted(t *testing.T) {
	h := newHarness(t, &fakeBackend{})
	c := dialH2(t, h.path)
	isSettingsAck := func(f h2Frame) bool { return f.typ == h2Settings && f.flags&h2FlagAck != 0 }
	if err := c.await(isSettingsAck); err != nil {
		t.Fatalf("handshake: %v", err)
	}
	for i := range 4 {
		if i > 0 {
			// The pace of the pings is what the test is about.
			time.Sleep(keepaliveMinTime + 200*time.Millisecond)
		}
		data := []byte{0, 0, 0, 0, 0, 0, 0, byte(i)}
		c.write(t, h2Ping, 0, data)
		if err := c.await(func(f h2Frame) bool {
			return f.typ == h2Ping && f.flags&h2FlagAck != 0 && string(f.payload) == string(data)
		}); err != nil {
			t.Fatalf("ping %d: %v", i+1, err)
		}
	}
	// The server handles frames in order: the acknowledgement of these
	// settings comes after any GOAWAY the last ping caused.
	c.write(t, h2Settings, 0, nil)
	if err := c.await(isSettingsAck); err != nil {
		t.Fatalf("after the pings: %v", err)
	}
}
