package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/metadata"

	"github.com/mcpd-dev/mcpd/internal/audit"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// recordsByApp are the tools/call records of the daemon's audit log (on by
// default, in its state directory), by the app they name.
func recordsByApp(t *testing.T, d *daemon) map[string][]audit.Record {
	t.Helper()
	out := map[string][]audit.Record{}
	for _, r := range readAudit(t, filepath.Join(d.dir, "state", audit.FileName)) {
		if r.Method == "tools/call" {
			out[r.App] = append(out[r.App], r)
		}
	}
	return out
}

// TestAuditProfileEveryFront: a call made under a profile is recorded with
// the profile's name and the caller's uid on every front — gRPC with the
// mcpd-profile metadata, mcpdctl bridge --profile, and the HTTP face's
// /profiles/NAME/mcp in both eras — and a call under none names none.
func TestAuditProfileEveryFront(t *testing.T) {
	skipShort(t)
	d := startProfileDaemon(t, "--http-listen", "127.0.0.1:0")
	c := d.client()
	grpcCtx := metadata.AppendToOutgoingContext(ctxT(t), "mcpd-client-name", "grpc-app", "mcpd-profile", "safe")
	if _, _, err := callTool(grpcCtx, c, &mcpdv1.CallToolRequest{Server: "a", Tool: "echo", ArgumentsJson: echoArgs("x")}); err != nil {
		t.Fatal(err)
	}
	plainCtx := metadata.AppendToOutgoingContext(ctxT(t), "mcpd-client-name", "plain-app")
	if _, _, err := callTool(plainCtx, c, &mcpdv1.CallToolRequest{Server: "a", Tool: "echo", ArgumentsJson: echoArgs("x")}); err != nil {
		t.Fatal(err)
	}
	cs := profileBridge(t, d, "--profile", "safe")
	callText(t, cs, "a__echo", map[string]any{"message": "via bridge"})

	urls, reason := httpStatus(t, d)
	var safeURL string
	for _, u := range urls {
		if strings.HasSuffix(u, "/profiles/safe/mcp") {
			safeURL = u
		}
	}
	if safeURL == "" {
		t.Fatalf("status URLs %v (%q) lack the profile's", urls, reason)
	}
	eras := map[string]string{"http-legacy": "2025-11-25", "http-modern": "2026-07-28"}
	for name, era := range eras {
		client := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, nil)
		hs, err := client.Connect(ctxT(t), &mcp.StreamableClientTransport{Endpoint: safeURL, MaxRetries: -1},
			&mcp.ClientSessionOptions{ProtocolVersion: era})
		if err != nil {
			t.Fatal(err)
		}
		callText(t, hs, "a__echo", map[string]any{"message": "over http"})
		hs.Close()
	}

	byApp := recordsByApp(t, d)
	want := map[string]struct{ front, profile string }{
		"grpc-app":                      {audit.FrontGRPC, "safe"},
		"plain-app":                     {audit.FrontGRPC, ""},
		"profile-host (mcpdctl bridge)": {audit.FrontBridge, "safe"},
		"http-legacy":                   {audit.FrontHTTP, "safe"},
		"http-modern":                   {audit.FrontHTTP, "safe"},
	}
	for app, w := range want {
		recs := byApp[app]
		if len(recs) != 1 {
			t.Errorf("%s: %d records, want 1 (records %v)", app, len(recs), byApp)
			continue
		}
		r := recs[0]
		if r.Front != w.front || r.Profile != w.profile || r.Server != "a" || r.Name != "echo" || r.Outcome != audit.OutcomeResult {
			t.Errorf("%s: record %+v, want front %s profile %q", app, r, w.front, w.profile)
		}
		if r.UID != os.Getuid() {
			t.Errorf("%s: uid %d, want the caller's %d", app, r.UID, os.Getuid())
		}
	}
}
