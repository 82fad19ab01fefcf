package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/status"

	"github.com/mcpd-dev/mcpd/internal/apiclient"
	"github.com/mcpd-dev/mcpd/internal/paths"
	"github.com/mcpd-dev/mcpd/internal/version"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// Exit codes of mcpdctl.
const (
	exitOK      = 0 // success
	exitFailure = 1 // the command failed
	exitUsage   = 2 // the command line was wrong
)

// clientName is how mcpdctl identifies itself to mcpd.
const clientName = "mcpdctl"

// resolveSocket turns the --socket flag into the socket path; a variable so
// that the resolution order lives in one place (internal/paths).
var resolveSocket = paths.SocketPath

// timeNow is the clock used for durations computed on the client side
// (how long an app has been connected); tests replace it.
var timeNow = time.Now

// cli is the state of one mcpdctl invocation.
type cli struct {
	stdout, stderr io.Writer
	socketFlag     string // --socket
	showVersion    bool   // the top-level --version
	root           *cobra.Command

	// Set by connect.
	socket string // absolute socket path
	conn   *grpc.ClientConn

	// timeout is the current verb's --timeout, for error messages.
	timeout time.Duration
	// cancels end the contexts dial made; close calls them.
	cancels []context.CancelFunc
}

// withTimeout bounds ctx by the verb's --timeout (0: no bound) and remembers
// it for error messages. The returned cancel must always be called: it also
// releases any stream still open.
func (c *cli) withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	c.timeout = d
	if d <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}

// connect resolves the socket and creates the gRPC client, once per
// invocation. It does not wait for the connection: the first RPC does.
func (c *cli) connect() (mcpdv1.McpdClient, error) {
	if c.conn != nil {
		return mcpdv1.NewMcpdClient(c.conn), nil
	}
	path, err := resolveSocket(c.socketFlag)
	if err != nil {
		return nil, err // says which path and why
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("socket path: %w", err)
	}
	c.socket = abs
	if _, err := os.Stat(abs); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, c.notRunning()
		}
		if errors.Is(err, fs.ErrPermission) {
			return nil, fmt.Errorf("cannot reach mcpd's socket at %s: %w (its directory belongs to another user; mcpd accepts connections only from its own uid)", abs, fs.ErrPermission)
		}
		return nil, fmt.Errorf("socket: %w", err)
	}
	conn, err := apiclient.Dial(abs, apiclient.TellLostCalls())
	if err != nil {
		return nil, err
	}
	c.conn = conn
	return mcpdv1.NewMcpdClient(conn), nil
}

// dial is withTimeout and connect, for a verb that talks to mcpd until it
// returns: the context ends when the invocation does (close).
func (c *cli) dial(ctx context.Context, timeout time.Duration) (context.Context, mcpdv1.McpdClient, error) {
	ctx, cancel := c.withTimeout(ctx, timeout)
	c.cancels = append(c.cancels, cancel)
	client, err := c.connect()
	return ctx, client, err
}

func (c *cli) close() {
	for _, cancel := range c.cancels {
		cancel()
	}
	c.cancels = nil
	if c.conn != nil {
		c.conn.Close()
		c.conn = nil
	}
}

// mcpdMade reports whether an UNAVAILABLE is mcpd's verdict on a server
// (it carries mcpd's class of the failure), not gRPC's own: the
// connection's state alone can lag, under load, behind a stream mcpd
// ended with its reason.
func mcpdMade(err error) bool {
	reason, _ := mcpdv1.ReasonOf(err)
	return reason != mcpdv1.ErrorReason_ERROR_REASON_UNSPECIFIED
}

// notRunning is the one-line error for a daemon that cannot be reached.
func (c *cli) notRunning() error {
	where := "no socket at " + c.socket
	if fi, err := os.Stat(c.socket); err == nil {
		if err := c.otherUsersSocket(fi); err != nil {
			return err
		}
		// A socket file nobody answers on: mcpd died without removing
		// it, or an ssh forward is gone (forward.go).
		return c.deadSocket()
	}
	mcpd := mcpdCommand()
	if c.socketFlag != "" {
		// A plain "mcpd" (or the systemd unit) would listen elsewhere.
		return fmt.Errorf("mcpd is not running (%s); start it with: %s --socket %s", where, mcpd, c.socket)
	}
	return fmt.Errorf("mcpd is not running (%s); start it with: %s (or: systemctl --user start mcpd)", where, mcpd)
}

// mcpdCommand is how to run mcpd from here: "mcpd" when it is on $PATH,
// else the mcpd next to this mcpdctl (a checkout's bin/), else "mcpd".
func mcpdCommand() string {
	if _, err := exec.LookPath("mcpd"); err == nil {
		return "mcpd"
	}
	self, err := os.Executable()
	if err != nil {
		return "mcpd"
	}
	wd, _ := os.Getwd()
	return siblingMcpd(self, wd)
}

// siblingMcpd is the executable mcpd in the directory of self, relative to
// wd when it is below it, else "mcpd".
func siblingMcpd(self, wd string) string {
	sibling := filepath.Join(filepath.Dir(self), "mcpd")
	if fi, err := os.Stat(sibling); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		return "mcpd"
	}
	if rel, err := filepath.Rel(wd, sibling); wd != "" && err == nil && !strings.HasPrefix(rel, "..") {
		return "./" + rel
	}
	return sibling
}

// otherUsersSocket returns the error for a socket owned by another uid,
// whose mcpd turns this uid away at the handshake (which a client sees only
// as a connection that closed), or nil for our own socket.
func (c *cli) otherUsersSocket(fi os.FileInfo) error {
	owner, ok := paths.FileOwner(fi)
	if me := os.Geteuid(); ok && owner != me {
		return fmt.Errorf("mcpd's socket at %s belongs to uid %d; mcpd accepts connections only from its own uid, and this is uid %d: run mcpdctl as uid %d", c.socket, owner, me, owner)
	}
	return nil
}

// rpcError turns the error of an RPC into mcpdctl's message. server is the
// server the RPC named, empty for none.
func (c *cli) rpcError(ctx context.Context, err error, server string) error {
	// Our own deadline, however it surfaced: mcpd sees the same deadline
	// and may reset the stream a moment before the client's timer fires,
	// so compare with the clock rather than trust ctx.Err alone.
	if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
		return fmt.Errorf("timed out after %s (see --timeout)", c.timeout)
	}
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	switch st.Code() {
	case codes.Unavailable:
		// An Unavailable that mcpd sent (a server in a crash loop) arrives
		// on a ready connection; one the client made up means no daemon.
		if apiclient.LostConnection(err) {
			return fmt.Errorf("lost the connection to mcpd during the call (it stopped or restarted): %s", st.Message())
		}
		if reason, _ := mcpdv1.ReasonOf(err); reason == mcpdv1.ErrorReason_ERROR_REASON_SHUTTING_DOWN {
			// mcpd's own answer, though its connection may be gone by now.
			return errors.New(st.Message())
		}
		if (c.conn == nil || c.conn.GetState() != connectivity.Ready) && !mcpdMade(err) {
			return c.notRunning()
		}
	case codes.NotFound:
		if server != "" {
			return c.noSuchServer(ctx, server)
		}
	case codes.Canceled:
		if errors.Is(ctx.Err(), context.Canceled) {
			return errors.New("interrupted")
		}
	}
	return errors.New(st.Message())
}

// warnf prints a warning line on stderr, sanitized (it may quote a child);
// the command goes on.
func (c *cli) warnf(format string, args ...any) {
	fmt.Fprintf(c.stderr, "mcpdctl: warning: %s\n", sanitizeText(fmt.Sprintf(format, args...)))
}

// callOptions are the options sent with every MCP RPC.
func (c *cli) callOptions() *mcpdv1.CallOptions {
	return &mcpdv1.CallOptions{
		TimeoutMs: c.timeout.Milliseconds(),
		Client:    &mcpdv1.ClientInfo{Name: clientName, Version: version.Version},
	}
}
