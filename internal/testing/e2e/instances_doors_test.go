package e2e

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The doors of hosts to a shared server: each host through it is one app
// whose every request reaches its own single instance.

// shareIdle is the idleTimeout of the shared servers of these tests: an
// instance whose hosts have all left goes that long after.
const shareIdle = 2 * time.Second

// doorHost is one MCP host connected through a door.
type doorHost struct {
	name    string
	cs      *mcp.ClientSession
	cmd     *exec.Cmd       // the mcpdctl bridge it runs; nil over HTTP
	http    *http.Transport // its own connections over HTTP; nil through a bridge
	changed chan struct{}   // a tools/list_changed reached it
}

// connectDoorHost connects host name through door: "relay" (mcpdctl bridge
// through mcpd's bridge socket), "grpc" (mcpdctl bridge with
// MCPD_BRIDGE_RELAY=0), "http" (an HTTP-face session) or "http-modern"
// (a 2026-07-28 host of the HTTP face: no session, its clientInfo on each
// request); root, if set, is the workspace root it names.
func connectDoorHost(t *testing.T, d *daemon, base, door, name, root string) *doorHost {
	t.Helper()
	h := &doorHost{name: name, changed: make(chan struct{}, 16)}
	client := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1.0.0"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case h.changed <- struct{}{}:
			default:
			}
		},
	})
	var (
		transport mcp.Transport
		sopts     *mcp.ClientSessionOptions
	)
	switch door {
	case "http", "http-modern":
		endpoint := base + "/servers/per/mcp"
		if root != "" {
			endpoint += "?root=" + url.QueryEscape(root)
		}
		// Connections of its own, which it closes when it leaves.
		h.http = &http.Transport{}
		transport = &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &http.Client{Transport: h.http}, MaxRetries: -1}
		sopts = &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}
		if door == "http-modern" {
			sopts.ProtocolVersion = "2026-07-28"
		}
	default:
		args := []string{"per"}
		if root != "" {
			args = []string{"--root", root, "per"}
		}
		h.cmd = bridgeCommand(d, args...)
		if door == "grpc" {
			h.cmd.Env = append(h.cmd.Env, "MCPD_BRIDGE_RELAY=0")
		}
		transport = &mcp.CommandTransport{Command: h.cmd}
	}
	cs, err := client.Connect(ctxT(t), transport, sopts)
	if err != nil {
		t.Fatalf("%s through %s: connect: %v", name, door, err)
	}
	h.cs = cs
	t.Cleanup(func() { _ = cs.Close() })
	return h
}

// toolNames is what the host's tools/list shows.
func (h *doorHost) toolNames(t *testing.T) []string {
	t.Helper()
	res, err := h.cs.ListTools(ctxT(t), nil)
	if err != nil {
		t.Fatalf("%s: tools/list: %v", h.name, err)
	}
	var out []string
	for _, tl := range res.Tools {
		out = append(out, tl.Name)
	}
	return out
}

func (h *doorHost) call(t *testing.T, tool string, args map[string]any) string {
	t.Helper()
	res, err := h.cs.CallTool(ctxT(t), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil || res.IsError {
		t.Fatalf("%s: %s: %+v, %v", h.name, tool, res, err)
	}
	return toolText(t, res)
}

// drain forgets the list changes the host was told of so far.
func (h *doorHost) drain() {
	for {
		select {
		case <-h.changed:
		default:
			return
		}
	}
}

// testShareDoor runs two hosts through door on the server "per" shared
// as share says ("client", or "root" with a root each): each starts one
// instance and only its own; a tool one adds to its instance is told to it
// alone and is on its next tools/list, never on the other's; a host that
// leaves takes its instance with it after the idle timeout.
func testShareDoor(t *testing.T, door, share string) {
	srv := fakeServer("legacy")
	srv["share"] = share
	srv["idleTimeout"] = shareIdle.String()
	var (
		d    *daemon
		base string
	)
	if strings.HasPrefix(door, "http") {
		d, base = startHTTPDaemon(t, map[string]map[string]any{"per": srv})
	} else {
		d = startBridgeDaemon(t, map[string]map[string]any{"per": srv})
	}
	c := d.client()
	var roots [2]string
	if share == "root" {
		roots = [2]string{t.TempDir(), t.TempDir()}
	}
	hosts := [2]*doorHost{
		connectDoorHost(t, d, base, door, "host-a", roots[0]),
		connectDoorHost(t, d, base, door, "host-b", roots[1]),
	}
	for _, h := range hosts {
		if got := h.call(t, "echo", map[string]any{"message": h.name}); got != h.name {
			t.Fatalf("%s: echo = %q", h.name, got)
		}
		h.toolNames(t)
	}

	// One instance per host, keyed by its identity.
	want := make([]string, 2)
	for i, h := range hosts {
		switch {
		case share == "root":
			want[i] = roots[i]
		case h.cmd != nil:
			want[i] = h.name + " (pid " + itoa(h.cmd.Process.Pid) + ")"
		case door == "http":
			want[i] = h.name + " (HTTP session "
		default:
			// The process holding the loopback TCP peer socket: this one.
			want[i] = h.name + " (pid " + itoa(os.Getpid()) + ")"
		}
	}
	keys := func() []string {
		var out []string
		for k := range instancesOf(d, c, "per") {
			out = append(out, k)
		}
		slices.Sort(out)
		return out
	}
	if got := keys(); len(got) != 2 || !strings.HasPrefix(got[0], want[0]) || !strings.HasPrefix(got[1], want[1]) {
		t.Fatalf("instances of per = %q, want one each: %q", got, want)
	}

	// Each host adds a tool to its own instance: it is told, and lists it
	// right after; the other is not told and never lists it.
	for round := range 2 {
		for i, h := range hosts {
			other := hosts[1-i]
			other.drain()
			added := h.name + "-tool-" + itoa(round)
			h.call(t, "addtool", map[string]any{"name": added})
			select {
			case <-h.changed:
			case <-time.After(20 * time.Second):
				t.Fatalf("%s: no tools/list_changed after its addtool", h.name)
			}
			if got := h.toolNames(t); !slices.Contains(got, added) {
				t.Errorf("%s: tools/list right after its list_changed = %v, want %s in it", h.name, got, added)
			}
			for _, n := range other.toolNames(t) {
				if strings.HasPrefix(n, h.name+"-tool-") {
					t.Errorf("%s lists %s, added to %s's instance", other.name, n, h.name)
				}
			}
			select {
			case <-other.changed:
				t.Errorf("%s was told of a change of %s's instance", other.name, h.name)
			default:
			}
		}
	}
	if got := keys(); len(got) != 2 {
		t.Errorf("instances of per after the calls = %q, want still 2", got)
	}

	// Host b leaves: its instance goes within its idle timeout (and the
	// sweep's second), generously timed; host a's stays.
	pidB := int(instancesOf(d, c, "per")[keys()[1]].GetPid())
	_ = hosts[1].cs.Close()
	if hosts[1].cmd != nil {
		_ = hosts[1].cmd.Wait()
	}
	if hosts[1].http != nil {
		hosts[1].http.CloseIdleConnections()
	}
	left := time.Now()
	poll(t, "host b's instance to go", func() (bool, error) {
		got := keys()
		return len(got) == 1 && got[0] == keys()[0] && strings.HasPrefix(got[0], want[0]), nil
	})
	if took := time.Since(left); took > shareIdle+5*time.Second {
		t.Errorf("host b's instance went %s after it left, want about %s", took, shareIdle+time.Second)
	}
	poll(t, "host b's child to exit", func() (bool, error) { return pidB == 0 || !alive(pidB), nil })
	if got := hosts[0].call(t, "echo", map[string]any{"message": "still"}); got != "still" {
		t.Errorf("host a after b left: echo = %q", got)
	}
}

func TestShareClientInstancePerHostThroughDoors(t *testing.T) {
	skipShort(t)
	for _, door := range []string{"relay", "grpc", "http", "http-modern"} {
		t.Run(door, func(t *testing.T) { testShareDoor(t, door, "client") })
	}
}

func TestShareRootInstancePerRootThroughDoors(t *testing.T) {
	skipShort(t)
	for _, door := range []string{"relay", "grpc", "http", "http-modern"} {
		t.Run(door, func(t *testing.T) { testShareDoor(t, door, "root") })
	}
}
