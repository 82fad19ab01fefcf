package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/pflag"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

var openCmd = &command{
	name:     "open",
	synopsis: "[--no-browser]",
	short:    "open mcpd's dashboard in the browser",
	long: `Prints the URL of mcpd's live dashboard (served on its HTTP face, by
default http://127.0.0.1:6273/) and opens it in the user's browser when there
is a display (xdg-open), unless --no-browser. Without a browser, open the
printed URL yourself. The dashboard is off when the HTTP face is
(--http-listen off) or when the config sets "dashboard": false.`,
	maxArgs: 0,
	setup:   openSetup,
}

func openSetup(fs *pflag.FlagSet) runFunc {
	noBrowser := fs.Bool("no-browser", false, "print the URL only; do not open a browser")
	timeout := timeoutFlag(fs, 10*time.Second)
	return func(ctx context.Context, c *cli, _ *command, _ []string) error {
		return c.runOpen(ctx, !*noBrowser, *timeout)
	}
}

func (c *cli) runOpen(ctx context.Context, browser bool, timeout time.Duration) error {
	ctx, client, err := c.dial(ctx, timeout)
	if err != nil {
		return err
	}
	st, err := client.GetStatus(ctx, &mcpdv1.GetStatusRequest{})
	if err != nil {
		return c.rpcError(ctx, err, "")
	}
	h := st.GetHttp()
	if len(h.GetUrls()) == 0 {
		reason := h.GetOffReason()
		if reason == "" {
			reason = "not serving"
		}
		return fmt.Errorf("the dashboard is served on mcpd's HTTP face, which is off: %s", reason)
	}
	base := strings.TrimSuffix(h.GetUrls()[0], "/mcp") + "/"
	if strings.HasPrefix(h.GetListen(), "unix:") {
		return fmt.Errorf("mcpd's HTTP face listens on %s, which a browser cannot open; set --http-listen or \"httpListen\" to a loopback address such as 127.0.0.1:6273", h.GetListen())
	}
	if err := dashboardOn(ctx, base); err != nil {
		return err
	}
	fmt.Fprintln(c.stdout, base)
	if !browser {
		return nil
	}
	if runtime.GOOS != "darwin" && os.Getenv("DISPLAY") == "" && os.Getenv("WAYLAND_DISPLAY") == "" {
		fmt.Fprintln(c.stderr, "No display here: open the URL above in a browser.")
		return nil
	}
	openBrowser(ctx, base)
	return nil
}

// errDashboardOff is the error of open when the config turned the
// dashboard off.
var errDashboardOff = errors.New(`the dashboard is off ("dashboard": false in mcpd's config)`)

// dashboardOn asks the dashboard at base whether it is served: a 404 of
// its ping means the config turned it off. Any other failure is left to
// the browser to show.
func dashboardOn(ctx context.Context, base string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"dashboard/api/ping", nil)
	if err != nil {
		return nil
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return errDashboardOff
	}
	return nil
}
