package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/pflag"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

var loginCmd = &command{
	name:     "login",
	synopsis: "NAME [--no-browser] [--scope SCOPE]...",
	short:    "log in to a remote server with OAuth; every app then shares the token",
	long: `mcpd runs the OAuth login (it keeps the token): login prints the
authorization URL alone on one line of stdout, opens it in a browser when
there is a display (unless --no-browser), and returns when the authorization
server has redirected back to mcpd and the token has arrived.`,
	minArgs:  1,
	maxArgs:  1,
	setup:    loginSetup,
	complete: completeServerArg,
}

func loginSetup(fs *pflag.FlagSet) runFunc {
	noBrowser := fs.Bool("no-browser", false, "print the URL only; do not open a browser")
	scopes := fs.StringArray("scope", nil, "also ask for this `SCOPE` (repeatable)")
	timeout := timeoutFlag(fs, 10*time.Minute)
	return func(ctx context.Context, c *cli, _ *command, args []string) error {
		return c.runLogin(ctx, args[0], *scopes, !*noBrowser, *timeout)
	}
}

func (c *cli) runLogin(ctx context.Context, name string, scopes []string, browser bool, timeout time.Duration) error {
	ctx, client, err := c.dial(ctx, timeout)
	if err != nil {
		return err
	}
	stream, err := client.Login(ctx, &mcpdv1.LoginRequest{Name: name, Scopes: scopes})
	if err != nil {
		return c.rpcError(ctx, err, name)
	}
	for {
		ev, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("mcpd ended the login of %s without an outcome", name)
		}
		if err != nil {
			return c.rpcError(ctx, err, name)
		}
		if u := ev.GetAuthorizationUrl(); u != "" {
			fmt.Fprintln(c.stdout, u)
			fmt.Fprintf(c.stderr, "Open the URL above in a browser to log in to %s; waiting for the authorization server...\n", name)
			if browser {
				openBrowser(ctx, u)
			}
			continue
		}
		if st := ev.GetDone(); st != nil {
			fmt.Fprintf(c.stderr, "Logged in to %s: %s\n", name, oauthSummary(st))
			return nil
		}
	}
}

// oauthSummary is a login in one line: issuer, scopes, expiry.
func oauthSummary(st *mcpdv1.OAuthStatus) string {
	parts := []string{"issuer " + sanitizeText(st.GetIssuer())}
	if s := st.GetScopes(); len(s) > 0 {
		parts = append(parts, "scopes "+sanitizeText(strings.Join(s, " ")))
	}
	if ms := st.GetExpiresAtUnixMs(); ms != 0 {
		parts = append(parts, "expires "+time.UnixMilli(ms).Format(time.RFC3339))
	}
	if st.GetHasRefreshToken() {
		parts = append(parts, "refreshable")
	}
	return strings.Join(parts, ", ")
}

// openBrowser opens u when there is a display to open it on; failing
// quietly is fine, the URL is on stdout.
func openBrowser(ctx context.Context, u string) {
	var argv []string
	switch {
	case runtime.GOOS == "darwin":
		argv = []string{"open", u}
	case os.Getenv("DISPLAY") != "" || os.Getenv("WAYLAND_DISPLAY") != "":
		argv = []string{"xdg-open", u}
	default:
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, nil, nil
	_ = cmd.Run()
}
