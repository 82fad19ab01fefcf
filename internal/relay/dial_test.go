package relay

import (
	"bufio"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/mcpd-dev/mcpd/internal/bridge"
)

// Dial tells a header mcpd cannot read (its answer's badHeader: the
// caller runs its own bridge, ErrNoSocket) from the bridge's own failure
// (an error as mcpd words it).
func TestDialAnswers(t *testing.T) {
	for _, tc := range []struct {
		name, answer string
		noSocket     bool
	}{
		{"bad header", `{"ok":false,"error":"bad header: unknown field \"colour\"","badHeader":true}`, true},
		{"bridge failure", `{"ok":false,"error":"no such server \"nope\""}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, err := os.MkdirTemp("", "relay")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(dir) })
			api := filepath.Join(dir, "mcpd.sock")
			ln, err := net.Listen("unix", bridge.RelaySocketPath(api))
			if err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			defer wg.Wait()
			defer ln.Close()
			wg.Go(func() { // mcpd's bridge socket: reads the header, answers
				c, err := ln.Accept()
				if err != nil {
					return
				}
				defer c.Close()
				if _, err := bufio.NewReader(c).ReadSlice('\n'); err == nil {
					c.Write([]byte(tc.answer + "\n"))
				}
			})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			conn, _, err := Dial(ctx, api, bridge.RelayHeader{Names: []string{"g"}})
			if err == nil {
				conn.Close()
				t.Fatal("Dial succeeded")
			}
			if got := errors.Is(err, ErrNoSocket); got != tc.noSocket {
				t.Errorf("Dial: %v; ErrNoSocket %v, want %v", err, got, tc.noSocket)
			}
		})
	}
}
