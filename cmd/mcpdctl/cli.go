package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

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

// Metadata keys carrying the client identity, as proto/mcpd/v1 names them.
const (
	mdClientName    = "mcpd-client-name"
	mdClientVersion = "mcpd-client-version"
)

// resolveSocket turns the --socket flag into the socket path; a variable so
// that the resolution order lives in one place (internal/paths).
var resolveSocket = paths.SocketPath

// timeNow is the clock used for durations computed on the client side
// (how long an app has been connected); tests replace it.
var timeNow = time.Now

// command is one verb of mcpdctl.
type command struct {
	name     string
	synopsis string // what follows the verb in the usage line
	short    string // one-line description for the verb list
	long     string // optional extra help text
	run      func(ctx context.Context, c *cli, cmd *command, args []string) error
}

// commands lists the verbs in the order the help shows them. "help" is
// handled by run itself (it lists this table, so it cannot be in it).
var commands = []*command{
	statusCmd,
	serversCmd,
	startCmd,
	stopCmd,
	restartCmd,
	logsCmd,
	watchCmd,
	toolsCmd,
	callCmd,
	promptsCmd,
	promptCmd,
	resourcesCmd,
	readCmd,
	cacheCmd,
	bridgeCmd,
	reloadCmd,
	configCmd,
	versionCmd,
}

func findCommand(name string) *command {
	for _, cmd := range commands {
		if cmd.name == name {
			return cmd
		}
	}
	return nil
}

// cli is the state of one mcpdctl invocation.
type cli struct {
	stdout, stderr io.Writer
	socketFlag     string

	// Set by connect.
	socket string // absolute socket path
	conn   *grpc.ClientConn

	// timeout is the current verb's --timeout, for error messages.
	timeout time.Duration
	// cancels end the contexts dial made; close calls them.
	cancels []context.CancelFunc
}

// usageError is a wrong command line; report prints it with the usage line
// of its verb and exits 2.
type usageError struct {
	cmd *command // nil for the top level
	msg string
}

func (e *usageError) Error() string { return e.msg }

// errHelpShown reports that help was printed on request: exit 0.
var errHelpShown = errors.New("help shown")

// run executes mcpdctl with the command-line arguments args (without the
// program name), writing its output to stdout and stderr. The returned error
// decides the exit code, see report.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := &cli{stdout: stdout, stderr: stderr}
	defer c.close()

	top := flag.NewFlagSet("mcpdctl", flag.ContinueOnError)
	top.SetOutput(io.Discard)
	top.Usage = func() {}
	top.StringVar(&c.socketFlag, "socket", "", "mcpd's socket `PATH` (default $MCPD_SOCKET, else $XDG_RUNTIME_DIR/mcpd/mcpd.sock, else /tmp/mcpd-<uid>/mcpd.sock)")
	showVersion := top.Bool("version", false, "print mcpdctl's version and exit")
	if err := top.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printTopHelp(stdout, top)
			return errHelpShown
		}
		return &usageError{msg: err.Error()}
	}
	if *showVersion {
		fmt.Fprintf(stdout, "mcpdctl %s\n", version.Version)
		return nil
	}
	rest := top.Args()
	if len(rest) == 0 {
		printTopHelp(stderr, top)
		return &usageError{} // the help says it all
	}
	verb, rest := rest[0], rest[1:]
	if verb == "help" {
		return runHelp(c, top, rest)
	}
	cmd := findCommand(verb)
	if cmd == nil {
		return &usageError{msg: fmt.Sprintf("unknown verb %q", verb)}
	}
	ctx = metadata.AppendToOutgoingContext(ctx, mdClientName, clientName, mdClientVersion, version.Version)
	return cmd.run(ctx, c, cmd, rest)
}

// runHelp implements "mcpdctl help [VERB]".
func runHelp(c *cli, top *flag.FlagSet, args []string) error {
	switch {
	case len(args) == 0:
		printTopHelp(c.stdout, top)
		return errHelpShown
	case len(args) > 1:
		return &usageError{msg: "help takes at most one verb"}
	}
	cmd := findCommand(args[0])
	if cmd == nil {
		return &usageError{msg: fmt.Sprintf("unknown verb %q", args[0])}
	}
	// Each verb declares its flags when it runs; --help makes it print
	// its help and stop before doing anything.
	return cmd.run(context.Background(), c, cmd, []string{"--help"})
}

// report prints err the way mcpdctl reports errors and returns the exit code.
func report(err error, stderr io.Writer) int {
	var ue *usageError
	switch {
	case err == nil, errors.Is(err, errHelpShown):
		return exitOK
	case errors.As(err, &ue):
		switch {
		case ue.msg == "":
			// Already explained on stderr.
		case ue.cmd != nil:
			fmt.Fprintf(stderr, "mcpdctl %s: %s\n", ue.cmd.name, sanitizeText(ue.msg))
			fmt.Fprintf(stderr, "usage: %s\n", usageLine(ue.cmd))
			fmt.Fprintf(stderr, "Run 'mcpdctl %s --help' for more.\n", ue.cmd.name)
		default:
			fmt.Fprintf(stderr, "mcpdctl: %s\n", sanitizeText(ue.msg))
			fmt.Fprintln(stderr, "Run 'mcpdctl --help' for usage.")
		}
		return exitUsage
	default:
		// An error may quote a child (an MCP error, its exit).
		fmt.Fprintf(stderr, "mcpdctl: %s\n", sanitizeText(err.Error()))
		return exitFailure
	}
}

func usageLine(cmd *command) string {
	s := "mcpdctl [--socket PATH] " + cmd.name
	if cmd.synopsis != "" {
		s += " " + cmd.synopsis
	}
	return s
}

func printTopHelp(w io.Writer, top *flag.FlagSet) {
	fmt.Fprint(w, `mcpdctl controls mcpd, the daemon that supervises local MCP servers.

Usage:
  mcpdctl [--socket PATH] VERB [flags] [arguments]

Verbs:
`)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, cmd := range commands {
		fmt.Fprintf(tw, "  %s\t%s\n", cmd.name, cmd.short)
	}
	fmt.Fprintf(tw, "  %s\t%s\n", "help", "show this help, or a verb's help")
	tw.Flush()
	fmt.Fprint(w, "\nGlobal flags (before the verb):\n")
	printFlags(w, top)
	fmt.Fprint(w, "\nRun 'mcpdctl VERB --help' for a verb's flags and arguments.\n")
}

// printFlags prints the flags of fs, GNU style.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fs.VisitAll(func(f *flag.Flag) {
		dash := "--"
		if len(f.Name) == 1 {
			dash = "-"
		}
		arg, usage := flag.UnquoteUsage(f)
		name := dash + f.Name
		if arg != "" {
			name += " " + arg
		}
		if !isZeroDefault(f) {
			usage += fmt.Sprintf(" (default %s)", f.DefValue)
		}
		fmt.Fprintf(tw, "  %s\t%s\n", name, usage)
	})
	tw.Flush()
}

func isZeroDefault(f *flag.Flag) bool {
	switch f.DefValue {
	case "", "0", "false", "0s":
		return true
	}
	return false
}

// flags returns the FlagSet of cmd; it never prints by itself.
func (c *cli) flags(cmd *command) *flag.FlagSet {
	fs := flag.NewFlagSet(cmd.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// timeoutFlag declares the --timeout flag every verb has.
func timeoutFlag(fs *flag.FlagSet, def time.Duration) *time.Duration {
	return fs.Duration("timeout", def, "give up after this long; 0 means no limit")
}

// parse parses args against fs, allowing flags after positional arguments
// ("logs NAME -n 5"); "--" ends the flags. It returns the positional
// arguments. On -h/--help it prints the verb's help to stdout.
func (c *cli) parse(cmd *command, fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		err := fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			c.printVerbHelp(cmd, fs)
			return nil, errHelpShown
		}
		if err != nil {
			return nil, &usageError{cmd: cmd, msg: err.Error()}
		}
		rest := fs.Args()
		consumed := len(args) - len(rest)
		if consumed > 0 && args[consumed-1] == "--" {
			pos = append(pos, rest...)
			return pos, nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// parseArgs is parse plus a check that there are between min and max
// positional arguments (max < 0: no upper bound).
func (c *cli) parseArgs(cmd *command, fs *flag.FlagSet, args []string, min, max int) ([]string, error) {
	pos, err := c.parse(cmd, fs, args)
	if err != nil {
		return nil, err
	}
	switch {
	case len(pos) < min:
		return nil, &usageError{cmd: cmd, msg: "missing arguments"}
	case max >= 0 && len(pos) > max:
		return nil, &usageError{cmd: cmd, msg: fmt.Sprintf("unexpected argument %q", pos[max])}
	}
	return pos, nil
}

func (c *cli) printVerbHelp(cmd *command, fs *flag.FlagSet) {
	w := c.stdout
	fmt.Fprintf(w, "usage: %s\n\n%s.\n", usageLine(cmd), capitalize(cmd.short))
	if cmd.long != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimSpace(cmd.long))
	}
	fmt.Fprint(w, "\nFlags:\n")
	printFlags(w, fs)
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
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

// connect resolves the socket and creates the gRPC client. It does not
// wait for the connection: the first RPC does.
func (c *cli) connect() (mcpdv1.McpdClient, error) {
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
	conn, err := grpc.NewClient("unix://"+abs, dialOptions()...)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", abs, err)
	}
	c.conn = conn
	return mcpdv1.NewMcpdClient(conn), nil
}

// maxResponseSize is the largest message mcpdctl takes from mcpd. mcpd
// passes a child's result on whole, up to the server's maxLineSize (32 MiB
// by default, and configurable), where gRPC's default would refuse
// anything over 4 MiB.
const maxResponseSize = math.MaxInt32

// dialOptions are the gRPC options of every connection to mcpd, then extra.
func dialOptions(extra ...grpc.DialOption) []grpc.DialOption {
	return append([]grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxResponseSize)),
	}, extra...)
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

// lostConnection reports whether gRPC's message of an UNAVAILABLE says an
// established connection to mcpd broke (rather than that none could be
// made, or mcpd's own verdict on a server).
func lostConnection(msg string) bool {
	return strings.Contains(msg, "error reading from server") || strings.Contains(msg, "transport is closing")
}

// notRunning is the one-line error for a daemon that cannot be reached.
func (c *cli) notRunning() error {
	where := "no socket at " + c.socket
	if fi, err := os.Stat(c.socket); err == nil {
		if err := c.otherUsersSocket(fi); err != nil {
			return err
		}
		// A socket file nobody answers on: mcpd died without removing it.
		where = "nothing answers on " + c.socket
	}
	if c.socketFlag != "" {
		// A plain "mcpd" (or the systemd unit) would listen elsewhere.
		return fmt.Errorf("mcpd is not running (%s); start it with: mcpd --socket %s", where, c.socket)
	}
	return fmt.Errorf("mcpd is not running (%s); start it with: mcpd  (or: systemctl --user start mcpd)", where)
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
		if lostConnection(st.Message()) {
			return fmt.Errorf("lost the connection to mcpd during the call (it stopped or restarted): %s", st.Message())
		}
		if c.conn == nil || c.conn.GetState() != connectivity.Ready {
			return c.notRunning()
		}
	case codes.NotFound:
		if server != "" {
			return fmt.Errorf("no such server %q", server)
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
