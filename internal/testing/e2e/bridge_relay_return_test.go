package e2e

import (
	"slices"
	"syscall"
	"testing"
	"time"
)

// A relayed session that fell back to the bridge run in mcpdctl (mcpd
// stopped) goes back to mcpd's bridge socket once mcpd is back, at a
// point between messages: the host's session goes on through the relay,
// with its calls answered as before.
func TestBridgeRelayReturnsAfterRestart(t *testing.T) {
	skipShort(t)
	d := startBridgeDaemon(t, map[string]map[string]any{"g": gosdkServer("")})
	cs, _ := goHost(t, d, "host", true, "g")
	if got := callText(t, cs, "echo", map[string]any{"message": "relayed"}); got != "relayed" {
		t.Fatalf("echo = %q", got)
	}
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	d.wait()
	d2 := spawnDaemon(t, d.socket, d.config)
	d2.waitServing()
	if got := callText(t, cs, "echo", map[string]any{"message": "back"}); got != "back" {
		t.Fatalf("echo after restart = %q", got)
	}
	// Calls keep coming (the host is busy), and the session moves back to
	// the relay between two of them.
	deadline := time.Now().Add(30 * time.Second)
	for {
		if got := callText(t, cs, "echo", map[string]any{"message": "again"}); got != "again" {
			t.Fatalf("echo = %q", got)
		}
		apps := appsByTransport(t, d2)
		if slices.Contains(apps["relay"], "host (mcpdctl bridge)") && !slices.Contains(apps["grpc"], "host (mcpdctl bridge)") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("apps %v: the session never went back to the relay", apps)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got := callText(t, cs, "echo", map[string]any{"message": "relayed again"}); got != "relayed again" {
		t.Fatalf("echo through the relay again = %q", got)
	}
	d2.status(d2.client())
}
