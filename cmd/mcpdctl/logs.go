package main

import (
	"context"
	"fmt"
	"time"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

var logsCmd = &command{
	name:     "logs",
	synopsis: "NAME [-n N] [--json]",
	short:    "print a server's most recent stderr lines",
	run:      runLogs,
}

// logLineJSON is one line in "logs --json".
type logLineJSON struct {
	TimeUnixMs int64  `json:"time_unix_ms"`
	Pid        int64  `json:"pid"`
	Text       string `json:"text"`
	Truncated  bool   `json:"truncated"`
}

func runLogs(ctx context.Context, c *cli, cmd *command, args []string) error {
	fs := c.flags(cmd)
	n := fs.Int("n", 100, "print the last `N` lines")
	asJSON := fs.Bool("json", false, "print a JSON array of lines")
	timeout := timeoutFlag(fs, 10*time.Second)
	pos, err := c.parseArgs(cmd, fs, args, 1, 1)
	if err != nil {
		return err
	}
	if *n <= 0 {
		return &usageError{cmd: cmd, msg: fmt.Sprintf("-n must be positive, not %d", *n)}
	}
	name := pos[0]
	ctx, cancel := c.withTimeout(ctx, *timeout)
	defer cancel()
	client, err := c.connect()
	if err != nil {
		return err
	}
	resp, err := client.GetLogs(ctx, &mcpdv1.GetLogsRequest{Name: name, Lines: int32(min(*n, 1<<30))})
	if err != nil {
		return c.rpcError(ctx, err, name)
	}
	if *asJSON {
		out := []logLineJSON{}
		for _, l := range resp.GetLines() {
			out = append(out, logLineJSON{l.GetTimeUnixMs(), l.GetPid(), l.GetText(), l.GetTruncated()})
		}
		return writeJSON(c.stdout, out)
	}
	for _, l := range resp.GetLines() {
		text := l.GetText()
		if l.GetTruncated() {
			text += " [truncated]"
		}
		fmt.Fprintln(c.stdout, text)
	}
	return nil
}
