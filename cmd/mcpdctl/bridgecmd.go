package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/mcpd-dev/mcpd/internal/apiclient"
	"github.com/mcpd-dev/mcpd/internal/apiconv"
	"github.com/mcpd-dev/mcpd/internal/bridge"
	"github.com/mcpd-dev/mcpd/internal/bridgegrpc"
	"github.com/mcpd-dev/mcpd/internal/cpuprofile"
	"github.com/mcpd-dev/mcpd/internal/pollio"
	"github.com/mcpd-dev/mcpd/internal/profile"
	"github.com/mcpd-dev/mcpd/internal/rawio"
	"github.com/mcpd-dev/mcpd/internal/relay"
	"github.com/mcpd-dev/mcpd/internal/service"
	"github.com/mcpd-dev/mcpd/internal/version"
)

var bridgeCmd = &command{
	name:     "bridge",
	synopsis: "NAME... | --all | --profile PROFILE [NAME...]",
	short:    "serve mcpd's servers to an MCP host on stdin/stdout",
	long: `The bridge is an MCP server on stdio for hosts that launch servers as
commands (Claude Desktop, Cursor, VS Code, Zed): configure the host to run
"mcpdctl bridge NAME" instead of the server itself, and it uses the shared,
supervised, cached server through mcpd. It speaks both protocol eras
(initialize and server/discover). With several names, or --all, the servers
are served as one: tool and prompt names are prefixed "server__name".
Requests a legacy server sends to its client (roots/list,
sampling/createMessage, elicitation/create) reach the host behind the
bridge when the host declared it answers them: a legacy host as requests,
a modern host as an input_required result of its call in flight. Log
messages reach the host for its own requests once it asked for them
(logging/setLevel, or a per-request logLevel); after logging/setLevel, also
those a server sends outside any request. If mcpd is not running,
the bridge still starts: it answers initialize and server/discover at
once, and a request that needs mcpd (tools/list, a call) made in its
first --wait (10s) waits for mcpd, so a host launched just before mcpd
(at login) gets its answers once mcpd runs; later, or with --wait 0,
such a request is answered "mcpd is not running" at once. The bridge
connects when mcpd is there and tells the host its lists changed. With
socket activation (mcpd.socket enabled), the bridge's first connection
starts mcpd. A server that is down (crash loop,
failed, stopped) does not stop the bridge: serving several, the others
are served and the host is warned which one is missing; serving one,
requests get the reason. When it runs again the host is told its lists
changed. Serving several, a server slower than 5s to list is given as it
last listed (left out if it never did) until its answer comes, and a
name that clashes with another server's once the bridge is up is left
out with a warning. Lines longer than --max-line-size are answered with
an error. The bridge exits when the host closes stdin, once the requests
sent before are answered (at once on SIGTERM); nothing but MCP messages
is written to stdout.

--root DIR names the host's workspace root: a server configured with
"share": "root" runs one instance for each root its apps name, started
with that root as its working directory and answering roots/list with it.

--profile PROFILE serves the host a profile of the config: every server it
names (or the NAMEs given, which must be among them), and only the tools,
prompts and resources it shows; mcpd enforces it, so a hidden tool is
neither listed nor callable. A config reload that changes the profile
reaches the host: without NAMEs the bridge serves the servers the profile
has now. --prefix always|on-collision says how the
tools and prompts of several servers are named: "always" server__name,
"on-collision" as the servers name them, prefixed only where two servers
share a name. Without --prefix the profile's "prefix" setting applies
("always" without a profile).`,
	maxArgs:  -1,
	setup:    bridgeSetup,
	complete: completeServers,
}

// bridgeStdin is the host's side of the bridge; a variable for tests.
var bridgeStdin io.Reader = os.Stdin

// hostInput is what the bridge reads the host from: stdin through Go's
// poller when it is a pipe, since a blocking read of it can stall the
// whole bridge for a minute at a GC (internal/pollio). A pipe that pollio
// opened again, a file description of this process alone, is then read
// with raw system calls (internal/rawio); a socket's description is shared,
// and whoever shares it could make it blocking under them.
func hostInput() io.Reader {
	f, ok := bridgeStdin.(*os.File)
	if !ok || f != os.Stdin {
		return bridgeStdin
	}
	if f = pollio.Stdin(); f != os.Stdin && isPipe(f) {
		if rf, err := rawio.NewFile(f); err == nil {
			return rf
		}
	}
	return f
}

// hostOutput is what the relay writes the host's stdout with: when stdout
// is a pipe, a description of this process alone in Go's poller
// (pollio.StdoutFile), written with raw system calls; c.stdout otherwise.
func (c *cli) hostOutput() io.Writer {
	if c.stdout != io.Writer(os.Stdout) {
		return c.stdout
	}
	f := pollio.StdoutFile()
	if f == os.Stdout {
		return c.stdout
	}
	rf, err := rawio.NewFile(f)
	if err != nil {
		return f
	}
	return hostStdout{rf}
}

// hostStdout is stdout opened again. A host that closed its end (EPIPE)
// ends mcpdctl with SIGPIPE, as a write to stdout itself does: the rest is
// written to os.Stdout, whose EPIPE raises it.
type hostStdout struct{ w io.Writer }

func (h hostStdout) Write(p []byte) (int, error) {
	n, err := h.w.Write(p)
	if errors.Is(err, syscall.EPIPE) {
		m, err := os.Stdout.Write(p[n:])
		return n + m, err
	}
	return n, err
}

func isPipe(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeNamedPipe != 0
}

func bridgeSetup(fs *pflag.FlagSet) runFunc {
	all := fs.Bool("all", false, "serve every enabled server")
	// Per forwarded request; the bridge itself runs until stdin ends.
	timeout := timeoutFlag(fs, 0)
	maxLine := fs.Int("max-line-size", bridge.DefaultMaxLine, "largest message line accepted from the host, in bytes")
	prof := fs.String("profile", "", "serve this profile of the config (its servers, or the NAMEs among them)")
	prefix := fs.String("prefix", "", `naming of several servers' tools and prompts: "always" or "on-collision" (default: the profile's, else always)`)
	root := fs.String("root", "", `the workspace root DIR of this host: servers with share "root" run one instance for it, started in it`)
	wait := fs.Duration("wait", defaultBridgeWait, "how long after the bridge starts its requests wait for mcpd when it is not running (0: answer at once)")
	return func(ctx context.Context, c *cli, cmd *command, names []string) error {
		return c.runBridge(ctx, cmd, bridgeArgs{names: names, all: *all, timeout: *timeout, maxLine: *maxLine, profile: *prof, prefix: *prefix, root: *root, wait: *wait})
	}
}

// bridgeArgs is the command line of mcpdctl bridge.
type bridgeArgs struct {
	names           []string
	all             bool
	timeout         time.Duration
	maxLine         int
	profile, prefix string
	root            string        // --root: "" for none
	wait            time.Duration // --wait
}

// defaultBridgeWait is --wait's default: a host and mcpd started together
// at login, mcpd within seconds.
const defaultBridgeWait = 10 * time.Second

func (c *cli) runBridge(ctx context.Context, cmd *command, a bridgeArgs) error {
	names, maxLine := a.names, a.maxLine
	all, prefix, err := a.check(cmd)
	if err != nil {
		return err
	}
	path, err := resolveSocket(c.socketFlag)
	if err != nil {
		return err
	}
	c.socket = path
	var root string
	if a.root != "" {
		if root, err = workspaceRoot(a.root); err != nil {
			return &usageError{cmd: cmd, msg: err.Error()}
		}
	}
	if stop, err := startCPUProfile(); err != nil {
		return err
	} else if stop != nil {
		defer stop()
	}
	opts := bridge.Options{
		Names:       names,
		All:         all,
		Timeout:     a.timeout,
		MaxLine:     maxLine,
		Warnf:       c.warnf,
		RPCError:    c.rpcError,
		CallOptions: func() service.Options { return apiconv.OptionsOf(c.callOptions()) },
		Profile:     a.profile,
		Prefix:      prefix,
	}
	// A bridge that takes over a relayed session (mcpd stopped under it)
	// does not wait: it goes on as a bridge that was up does.
	host, in := peekHostName(hostInput(), hostNameWait) // hostname.go
	ctx = asHost(ctx, host)
	serveHere := func(in io.Reader, out io.Writer) error { return c.serveBridge(ctx, opts, root, in, out) }
	starting := opts
	starting.StartWait = a.wait
	if relayOff() {
		return c.serveBridge(ctx, starting, root, in, c.stdout)
	}
	header := bridge.RelayHeader{
		Names: names, All: all, Profile: a.profile, Prefix: a.prefix, Root: root,
		TimeoutMs: a.timeout.Milliseconds(), MaxLine: maxLine, Client: clientName, Version: version.Version, Host: host,
	}
	return c.relayBridge(ctx, path, header, in, serveHere, func() error { return c.serveBridge(ctx, starting, root, in, c.stdout) })
}

// check checks the flags of mcpdctl bridge: whether it serves every server
// (--all, or --profile without names) and its --prefix.
func (a bridgeArgs) check(cmd *command) (all bool, prefix profile.Prefix, err error) {
	all = a.all
	if a.profile != "" && len(a.names) == 0 {
		all = true // every server of the profile
	} else if all == (len(a.names) > 0) {
		return false, "", &usageError{cmd: cmd, msg: "name at least one server, or use --all or --profile"}
	}
	if a.prefix != "" {
		p, ok := profile.ParsePrefix(a.prefix)
		if !ok {
			return false, "", &usageError{cmd: cmd, msg: fmt.Sprintf("--prefix must be \"always\" or \"on-collision\", not %q", a.prefix)}
		}
		prefix = p
	}
	if a.maxLine <= 0 {
		return false, "", &usageError{cmd: cmd, msg: "--max-line-size must be a positive number of bytes"}
	}
	if a.wait < 0 {
		return false, "", &usageError{cmd: cmd, msg: "--wait must not be negative"}
	}
	return all, prefix, nil
}

// relayBridge relays the host's session in to mcpd's bridge socket (of the
// API socket path) with header; serveHere runs the bridge in this process
// when mcpd goes away mid-session, serveStarting when mcpd serves no
// bridge socket from the start.
func (c *cli) relayBridge(ctx context.Context, path string, header bridge.RelayHeader, in io.Reader,
	serveHere func(io.Reader, io.Writer) error, serveStarting func() error) error {
	conn, src, err := relay.Dial(ctx, path, header)
	switch {
	case errors.Is(err, relay.ErrNoSocket):
		return serveStarting() // mcpd is not running, or serves no bridge socket
	case err != nil:
		return err
	}
	// A session that fell back to the bridge run here goes back to mcpd's
	// bridge socket once it is there again.
	redial := func(ctx context.Context) (relay.Conn, io.Reader, error) {
		if _, err := os.Stat(bridge.RelaySocketPath(path)); err != nil {
			return nil, nil, err
		}
		c, br, err := relay.Dial(ctx, path, header)
		if err != nil {
			return nil, nil, err
		}
		return c, br, nil
	}
	return relay.Run(ctx, conn, src, in, relay.Options{Out: c.hostOutput(), Warnf: c.warnf, Down: c.notRunning,
		Fallback: serveHere, Redial: redial, MaxLine: header.MaxLine})
}

// relayEnv set to "0" makes mcpdctl bridge run its bridge itself, never
// through mcpd's bridge socket.
const relayEnv = "MCPD_BRIDGE_RELAY"

// relayOff reports whether the environment turns the relay off.
func relayOff() bool { return os.Getenv(relayEnv) == "0" }

// serveBridge runs the bridge in this process, over gRPC.
func (c *cli) serveBridge(ctx context.Context, opts bridge.Options, root string, in io.Reader, out io.Writer) error {
	be, err := bridgegrpc.Dial(c.socket, c.notRunning, apiclient.EveryCall(apiclient.Metadata{Root: root}))
	if err != nil {
		return err
	}
	defer be.Close()
	return bridge.ServeStdio(ctx, be, opts, in, out)
}

// cpuProfileEnv names a file to write the bridge's CPU profile to, for
// a user finding where its CPU goes (docs/operations.md) and the benchmark
// (bench -bridge-profile).
const cpuProfileEnv = "MCPDCTL_CPUPROFILE"

// startCPUProfile starts a CPU profile when cpuProfileEnv is set; stop
// writes it out. Both are nil when it is not set.
func startCPUProfile() (stop func(), err error) { return cpuprofile.FromEnv(cpuProfileEnv) }

// workspaceRoot is --root DIR made absolute and clean; it must be a
// directory.
func workspaceRoot(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("--root %q: %w", dir, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return "", fmt.Errorf("--root %q: %w", dir, err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("--root %q is not a directory", dir)
	}
	return abs, nil
}
