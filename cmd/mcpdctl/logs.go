package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/pflag"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

var logsCmd = &command{
	name:     "logs",
	synopsis: "[NAME] [-n N] [-f] [--json]",
	short:    "print a server's most recent stderr lines, or mcpd's own log",
	long: `With NAME, prints the server's stderr lines (kept across restarts); without,
mcpd's own recent log. -f keeps printing new lines as they come, until
Ctrl-C.`,
	maxArgs:  1,
	setup:    logsSetup,
	complete: completeServerArg,
}

// logLineJSON is one line in "logs --json".
type logLineJSON struct {
	TimeUnixMs int64  `json:"time_unix_ms"`
	Pid        int64  `json:"pid"`
	Text       string `json:"text"`
	Truncated  bool   `json:"truncated"`
}

// logsArgs is the command line of logs.
type logsArgs struct {
	name    string
	n       int
	follow  bool
	asJSON  bool
	timeout time.Duration
}

func logsSetup(fs *pflag.FlagSet) runFunc {
	var a logsArgs
	fs.IntVarP(&a.n, "lines", "n", 100, "print the last `N` lines")
	fs.BoolVarP(&a.follow, "follow", "f", false, "follow: print new lines as they come, until interrupted")
	fs.BoolVar(&a.asJSON, "json", false, "print a JSON array of lines (with -f: one JSON object a line)")
	fs.DurationVar(&a.timeout, "timeout", 10*time.Second, "give up after this long; 0 means no limit")
	return func(ctx context.Context, c *cli, cmd *command, args []string) error {
		if a.n <= 0 {
			return &usageError{cmd: cmd, msg: fmt.Sprintf("-n must be positive, not %d", a.n)}
		}
		if len(args) == 1 {
			a.name = args[0]
		}
		return c.runLogs(ctx, a)
	}
}

func (c *cli) runLogs(ctx context.Context, a logsArgs) error {
	if a.follow {
		// -f runs until interrupted; --timeout bounds only a plain print.
		return c.followLogs(ctx, a.name, a.n, a.asJSON)
	}
	ctx, client, err := c.dial(ctx, a.timeout)
	if err != nil {
		return err
	}
	name := a.name
	resp, err := client.GetLogs(ctx, &mcpdv1.GetLogsRequest{Name: name, Lines: int32(min(a.n, 1<<30))})
	if err != nil {
		return c.rpcError(ctx, err, name)
	}
	if a.asJSON {
		out := []logLineJSON{}
		for _, l := range resp.GetLines() {
			out = append(out, toLogLineJSON(l))
		}
		return writeJSON(c.stdout, out)
	}
	for _, l := range resp.GetLines() {
		printLogLine(c.stdout, l)
	}
	return nil
}

func toLogLineJSON(l *mcpdv1.LogLine) logLineJSON {
	return logLineJSON{l.GetTimeUnixMs(), l.GetPid(), l.GetText(), l.GetTruncated()}
}

// printLogLine prints one log line, sanitized: the child wrote it.
func printLogLine(w io.Writer, l *mcpdv1.LogLine) {
	text := sanitizeText(l.GetText())
	if l.GetTruncated() {
		text += " [truncated]"
	}
	fmt.Fprintln(w, text)
}

// followLogs streams lines until the user interrupts (exit 0) or mcpd goes
// away (exit 1).
func (c *cli) followLogs(ctx context.Context, name string, n int, asJSON bool) error {
	ctx, client, err := c.dial(ctx, 0)
	if err != nil {
		return err
	}
	stream, err := client.FollowLogs(ctx, &mcpdv1.FollowLogsRequest{Name: name, Lines: int32(min(n, 1<<30))})
	if err != nil {
		return c.rpcError(ctx, err, name)
	}
	for {
		resp, err := stream.Recv()
		if err != nil {
			if errors.Is(ctx.Err(), context.Canceled) || status.Code(err) == codes.Canceled && ctx.Err() != nil {
				return nil // Ctrl-C
			}
			if err == io.EOF {
				return errors.New("mcpd ended the log stream")
			}
			return c.rpcError(ctx, err, name)
		}
		l := resp.GetLine()
		if asJSON {
			b, err := marshalNoEscape(toLogLineJSON(l))
			if err != nil {
				return err
			}
			fmt.Fprintf(c.stdout, "%s\n", b)
			continue
		}
		printLogLine(c.stdout, l)
	}
}
