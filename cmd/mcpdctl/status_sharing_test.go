package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/mcpd-dev/mcpd/internal/apiclient"

	"github.com/mcpd-dev/mcpd/internal/testing/mcpdtest"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// TestStatusSharing runs a real daemon with two stdio servers and three
// apps that each use both: one lists, one calls a tool and subscribes,
// and an MCP host through mcpdctl bridge lists and registers as a host.
// Status then says 3 apps (1 host) use 2 processes, and 6 without mcpd,
// with the children's measured memory.
func TestStatusSharing(t *testing.T) {
	sock := mcpdtest.Start(t, "a", "legacy", "b", "legacy")
	lister := appClient(t, sock, "lister")
	for _, s := range []string{"a", "b"} {
		if _, err := lister.ListTools(t.Context(), &mcpdv1.ListToolsRequest{Server: s}); err != nil {
			t.Fatal(err)
		}
	}
	caller := appClient(t, sock, "caller")
	if _, err := caller.CallToolUnary(t.Context(), &mcpdv1.CallToolRequest{Server: "a", Tool: "echo", ArgumentsJson: `{"message":"hi"}`}); err != nil {
		t.Fatal(err)
	}
	sub, err := caller.Subscribe(t.Context(), &mcpdv1.SubscribeRequest{Servers: []string{"b"}, ToolsListChanged: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sub.Recv(); err != nil { // the acknowledgement: the use is noted
		t.Fatal(err)
	}

	h := startBridgeOf(t, sock, "a", "b")
	h.Send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25",` +
		`"capabilities":{"roots":{}},"clientInfo":{"name":"host","version":"1"}}}`)
	h.Response("0")
	h.Send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	h.Send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	h.Response("1")

	var got struct {
		Sharing sharingJSON `json:"sharing"`
	}
	waitUntil(t, func() bool { // the bridge registers its Host stream on its own time
		r := mcpdctl(t, "--socket", sock, "status", "--json")
		if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
			t.Fatalf("status --json: %v\n%s", err, r.stdout)
		}
		return got.Sharing.Hosts == 1
	})
	s := got.Sharing
	if s.Apps != 3 || s.Processes != 2 || s.ProcessesWithoutMcpd != 6 || s.RemoteServers != 0 {
		t.Errorf("sharing = %+v, want 3 apps using 2 processes, 6 without mcpd", s)
	}
	if s.RSSBytes <= 0 || s.RSSBytesWithoutMcpd < 2*s.RSSBytes {
		t.Errorf("sharing memory: RSS %d, without mcpd %d; want > 0 and about 3 times as much", s.RSSBytes, s.RSSBytesWithoutMcpd)
	}
	if s.PSSBytes > s.RSSBytes || s.PSSBytesWithoutMcpd > s.RSSBytesWithoutMcpd {
		t.Errorf("sharing: PSS %d (without mcpd %d) over RSS %d (%d)", s.PSSBytes, s.PSSBytesWithoutMcpd, s.RSSBytes, s.RSSBytesWithoutMcpd)
	}

	r := mcpdctl(t, "--socket", sock, "status")
	lines := strings.Split(r.stdout, "\n")
	want := regexp.MustCompile(`^sharing: 3 apps \(1 host\) use 2 server processes \([0-9.]+ MiB\); without mcpd: 6 processes \(~[0-9.]+ MiB\)$`)
	if len(lines) < 2 || !want.MatchString(lines[1]) {
		t.Errorf("status: the line after the daemon's is not the sharing line %s:\n%s", want, r.stdout)
	}
}

// appClient is a gRPC app on sock that names itself name in every call.
func appClient(t *testing.T, sock, name string) mcpdv1.McpdClient {
	t.Helper()
	conn, err := apiclient.Dial(sock, apiclient.EveryCall(apiclient.Metadata{Client: name}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return mcpdv1.NewMcpdClient(conn)
}

func TestPrintSharing(t *testing.T) {
	const mib = 1 << 20
	tests := []struct {
		name string
		in   *mcpdv1.SharingStatus
		want string
	}{
		{"nothing", &mcpdv1.SharingStatus{}, ""},
		{"PSS", &mcpdv1.SharingStatus{Apps: 3, Hosts: 2, Processes: 2, RssBytes: 200 * mib, PssBytes: 124 * mib,
			ProcessesWithoutMcpd: 6, RssBytesWithoutMcpd: 600 * mib, PssBytesWithoutMcpd: 372 * mib},
			"sharing: 3 apps (2 hosts) use 2 server processes (124 MiB); without mcpd: 6 processes (~372 MiB)\n"},
		{"RSS without PSS, one of each, a remote server", &mcpdv1.SharingStatus{Apps: 1, Hosts: 1, Processes: 1, RemoteServers: 1,
			RssBytes: 5 * mib / 2, ProcessesWithoutMcpd: 1, RssBytesWithoutMcpd: 5 * mib / 2},
			"sharing: 1 app (1 host) uses 1 server process (2.5 MiB) and 1 remote server; without mcpd: 1 process (~2.5 MiB)\n"},
		{"an autostarted server, no app", &mcpdv1.SharingStatus{Processes: 1},
			"sharing: no app yet; 1 server process running; without mcpd: 0 processes\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			printSharing(&b, tt.in)
			if b.String() != tt.want {
				t.Errorf("printSharing = %q, want %q", b.String(), tt.want)
			}
		})
	}
}
