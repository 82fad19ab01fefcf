package main

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc"

	"github.com/mcpd-dev/mcpd/internal/testing/mcpdtest"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// loginMcpd answers Login with a URL, then a login, and Logout with
// whether there was one.
type loginMcpd struct {
	mcpdv1.UnimplementedMcpdServer
}

const testAuthURL = "https://as.example/authorize?client_id=c&code_challenge=x&code_challenge_method=S256&state=s"

func (loginMcpd) Login(req *mcpdv1.LoginRequest, stream grpc.ServerStreamingServer[mcpdv1.LoginEvent]) error {
	if err := stream.Send(&mcpdv1.LoginEvent{Event: &mcpdv1.LoginEvent_AuthorizationUrl{AuthorizationUrl: testAuthURL}}); err != nil {
		return err
	}
	return stream.Send(&mcpdv1.LoginEvent{Event: &mcpdv1.LoginEvent_Done{Done: &mcpdv1.OAuthStatus{
		LoggedIn: true, Issuer: "https://as.example", Scopes: append([]string{"read"}, req.GetScopes()...),
		ExpiresAtUnixMs: 1_700_003_600_000, HasRefreshToken: true,
	}}})
}

func (loginMcpd) Logout(_ context.Context, req *mcpdv1.LogoutRequest) (*mcpdv1.LogoutResponse, error) {
	return &mcpdv1.LogoutResponse{WasLoggedIn: req.GetName() == "remote"}, nil
}

func TestLoginPrintsTheURLAloneOnStdout(t *testing.T) {
	sock := mcpdtest.Serve(t, loginMcpd{})
	r := mcpdctl(t, "--socket", sock, "login", "remote", "--no-browser", "--scope", "write")
	if r.code != exitOK || r.stdout != testAuthURL+"\n" {
		t.Fatalf("login: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "Logged in to remote: issuer https://as.example, scopes read write") ||
		!strings.Contains(r.stderr, "refreshable") {
		t.Fatalf("login stderr %q", r.stderr)
	}
	r = mcpdctl(t, "--socket", sock, "logout", "remote")
	if r.code != exitOK || r.stdout != "logged out of remote\n" {
		t.Fatalf("logout: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	r = mcpdctl(t, "--socket", sock, "logout", "other")
	if r.code != exitOK || r.stdout != "other had no login\n" {
		t.Fatalf("logout other: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

// A stdio server has no OAuth: login and logout say so, and print no URL.
func TestLoginOfAStdioServerIsAClearError(t *testing.T) {
	sock := mcpdtest.Start(t, "local", "modern")
	for _, verb := range []string{"login", "logout"} {
		r := mcpdctl(t, "--socket", sock, verb, "local", "--no-browser")
		if verb == "logout" {
			r = mcpdctl(t, "--socket", sock, verb, "local")
		}
		if r.code == exitOK || r.stdout != "" || !strings.Contains(r.stderr, "not a remote (url) server") {
			t.Fatalf("%s local: exit %d, stdout %q, stderr %q", verb, r.code, r.stdout, r.stderr)
		}
	}
}

func TestStatusShowsLogins(t *testing.T) {
	var b strings.Builder
	printOAuth(&b, []*mcpdv1.ServerStatus{
		{Name: "local"},
		{Name: "remote", Oauth: &mcpdv1.OAuthStatus{LoggedIn: true, Issuer: "https://as.example",
			Scopes: []string{"read", "write"}, ExpiresAtUnixMs: fakeNow.Add(90 * 60 * 1e9).UnixMilli()}},
		{Name: "other", Oauth: &mcpdv1.OAuthStatus{LoginRequired: true, Reason: "refresh refused"}},
	})
	out := b.String()
	for _, want := range []string{"SERVER", "remote  logged in", "https://as.example", "read write", "in 1h30m",
		"other   login required: refresh refused"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	if strings.Contains(out, "local") {
		t.Errorf("a server without OAuth is listed:\n%s", out)
	}
}
