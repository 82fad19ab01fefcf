package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/mcpd-dev/mcpd/internal/oauth"
	"github.com/mcpd-dev/mcpd/internal/testing/oauthtest"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// goSDKResource is the Go SDK's Streamable HTTP handler (stateless) with
// one tool, echo: the MCP server behind the fake authorization server.
func goSDKResource() http.Handler {
	srv := mcp.NewServer(&mcp.Implementation{Name: "oauth-protected", Version: "1.0.0"}, nil)
	type echoIn struct {
		Message string `json:"message"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "echo the message back"},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Message}}}, nil, nil
		})
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true})
}

// mcpdctlLogin runs "mcpdctl login NAME --no-browser" and follows the URL
// it prints as a consenting user's browser would: the authorization server
// redirects straight back to mcpd.
func mcpdctlLogin(t *testing.T, d *daemon, name string) {
	t.Helper()
	var stdout, stderr syncBuffer
	cmd := exec.CommandContext(ctxT(t), mcpdctlBin, "--socket", d.socket, "login", name, "--no-browser")
	cmd.Env, cmd.Stdout, cmd.Stderr = daemonEnv(), &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	poll(t, "the authorization URL on mcpdctl login's stdout", func() (bool, error) {
		select {
		case err := <-done:
			done <- err
			return false, fmt.Errorf("mcpdctl login ended (%v): %s", err, stderr.String())
		default:
		}
		return strings.Contains(stdout.String(), "\n"), nil
	})
	browser := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := browser.Get(strings.TrimSpace(stdout.String()))
	if err != nil {
		t.Fatalf("open the authorization URL: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the login's redirect ended at %s: %s", resp.Request.URL.Redacted(), resp.Status)
	}
	if err := <-done; err != nil || !strings.Contains(stderr.String(), "Logged in to "+name) {
		t.Fatalf("mcpdctl login: %v: %s", err, stderr.String())
	}
}

// TestRemoteRevokedRefreshToken logs in to an OAuth-protected remote
// server through mcpdctl login, then the access token expires at the
// resource server and the authorization server refuses the refresh
// (invalid_grant): the server needs a login again, says so in status and
// in the calls' errors, and no token shows anywhere.
func TestRemoteRevokedRefreshToken(t *testing.T) {
	bridgeBins(t)
	as := oauthtest.New(t, goSDKResource())
	d := startBridgeDaemon(t, map[string]map[string]any{"corp": {"url": as.MCPURL()}})
	c := d.client()
	echo := &mcpdv1.CallToolRequest{Server: "corp", Tool: "echo", ArgumentsJson: echoArgs("hi corp")}

	// Before any login the server answers 401: login required.
	if _, _, err := callTool(ctxT(t), c, echo); status.Code(err) != codes.Unauthenticated {
		t.Fatalf("call before login: %v, want Unauthenticated", err)
	}
	mcpdctlLogin(t, d, "corp")
	resp, _, err := callTool(ctxT(t), c, echo)
	if err != nil {
		t.Fatalf("call after login: %v", err)
	}
	if got := text(t, resp); got != "hi corp" {
		t.Errorf("echo = %q", got)
	}
	if o := d.serverStatus(c, "corp").GetOauth(); !o.GetLoggedIn() || !o.GetHasRefreshToken() || o.GetIssuer() != as.URL() {
		t.Errorf("oauth status after login: %v", o)
	}

	as.RevokeAll()
	_, _, callErr := callTool(ctxT(t), c, echo)
	want := `server "corp" requires login; run: mcpdctl login corp`
	if st := status.Convert(callErr); st.Code() != codes.Unauthenticated || st.Message() != want {
		t.Fatalf("call after the refresh was refused: %v, want Unauthenticated %q", callErr, want)
	}
	if as.Refreshes.Load() == 0 {
		t.Error("mcpd did not try to refresh the token")
	}
	// The call fails as the connection ends; the state follows.
	var st *mcpdv1.ServerStatus
	poll(t, "state login required", func() (bool, error) {
		st = d.serverStatus(c, "corp")
		return st.GetState() == mcpdv1.ServerState_SERVER_STATE_LOGIN_REQUIRED, nil
	})
	if o := st.GetOauth(); !o.GetLoginRequired() || o.GetLoggedIn() || o.GetReason() != "refresh refused" {
		t.Errorf("oauth status after the refused refresh: %v", o)
	}
	// A refused refresh is not retried: the next call fails at once.
	refreshes := as.Refreshes.Load()
	if _, _, err := callTool(ctxT(t), c, echo); status.Code(err) != codes.Unauthenticated || as.Refreshes.Load() != refreshes {
		t.Errorf("second call: %v after %d more refreshes", err, as.Refreshes.Load()-refreshes)
	}

	out, err := exec.Command(mcpdctlBin, "--socket", d.socket, "status").CombinedOutput()
	if !strings.Contains(string(out), "login required: refresh refused (run: mcpdctl login corp)") {
		t.Errorf("mcpdctl status (%v):\n%s", err, out)
	}
	if fi, err := os.Stat(filepath.Join(d.dir, "state", oauth.FileName)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("token file: %v, want mode 0600", err)
	}
	statusJSON, _ := protojson.Marshal(st)
	seen := d.stderr.String() + string(out) + string(statusJSON) + callErr.Error()
	for _, s := range as.Secrets() {
		if strings.Contains(seen, s) {
			t.Errorf("token %.6s… appears in mcpd's log, status or errors", s)
		}
	}
}
