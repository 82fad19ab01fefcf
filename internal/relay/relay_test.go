package relay

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuf is the host's stdout, written by the relay's goroutines.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// relaySocket is mcpd's end of a relay on a real Unix socket: the
// connection mcpd's bridge socket accepted, and the relay's end.
func relaySocket(t *testing.T) (mcpd net.Conn, relayEnd Conn) {
	t.Helper()
	ln, err := net.Listen("unix", filepath.Join(t.TempDir(), "b.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("unix", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); s.Close() })
	return s, c.(*net.UnixConn)
}

// A connection to mcpd that breaks in the middle of an answer, even one
// far longer than a relay buffer, never hands the host the cut line: the
// host sees only whole JSON messages, and the request the cut answer
// belonged to is answered with an error.
func TestRelayCutLineNeverReachesHost(t *testing.T) {
	mcpd, end := relaySocket(t)
	out := &syncBuf{}
	r := &session{conn: end, src: bufio.NewReader(end), out: out, warnf: t.Logf,
		down:     func() error { return errors.New("mcpd is not running") },
		fallback: func(in io.Reader, _ io.Writer) error { _, err := io.Copy(io.Discard, in); return err },
		track:    tracker{max: 64 << 20}}
	in, host := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- r.run(context.Background(), in) }()

	if _, err := host.Write([]byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"big"}}` + "\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(mcpd).ReadSlice('\n'); err != nil {
		t.Fatal(err)
	}
	// The answer's first 2 MiB, then mcpd is gone.
	cut := `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"` + strings.Repeat("x", 2<<20)
	if _, err := mcpd.Write([]byte(cut)); err != nil {
		t.Fatal(err)
	}
	mcpd.Close()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), `"id":7,"error"`) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	host.Close()
	if err := <-done; err != nil {
		t.Fatalf("relay: %v", err)
	}
	got := out.String()
	var answered bool
	for _, line := range strings.Split(strings.TrimSuffix(got, "\n"), "\n") {
		var m struct {
			ID    json.RawMessage `json:"id"`
			Error *struct{}       `json:"error"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Errorf("the host got a line that is not JSON (%d bytes: %.60q...)", len(line), line)
			continue
		}
		answered = answered || (string(m.ID) == "7" && m.Error != nil)
	}
	if !answered {
		t.Errorf("request 7 was not answered with an error; host got %.200q", got)
	}
}
