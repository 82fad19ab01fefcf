package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/mcpd-dev/mcpd/internal/audit"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

var auditCmd = &command{
	name:     "audit",
	synopsis: "[-f] [--server NAME] [--app NAME] [--since DURATION] [--json]",
	short:    "print the audit log of apps' tool calls, prompt gets and resource reads",
	long: `Prints mcpd's audit log, oldest first: one record per tool call, prompt get
and resource read of every app, with the app (client name, pid, uid), the front
it came through (grpc, bridge, http), the server, method and name, a digest of
the arguments, the outcome and the duration. The file is the one "mcpdctl
status" names (default $XDG_STATE_HOME/mcpd/audit.jsonl) and the rotated ones
before it; --file reads another. -f keeps printing new records as they are
written, across rotations. --json prints the records as they are stored, one
JSON object a line.`,
	maxArgs: 0,
	setup:   auditSetup,
}

// auditArgs is the command line of audit.
type auditArgs struct {
	follow       bool
	server, app  string
	since        time.Duration
	asJSON       bool
	file         string
	timeout      time.Duration
	pollInterval time.Duration
}

func auditSetup(fs *pflag.FlagSet) runFunc {
	var a auditArgs
	fs.BoolVarP(&a.follow, "follow", "f", false, "keep printing new records until interrupted")
	fs.StringVar(&a.server, "server", "", "only the records of server `NAME`")
	fs.StringVar(&a.app, "app", "", "only the records of apps whose client name contains `NAME`")
	fs.DurationVar(&a.since, "since", 0, "only the records of the last `DURATION` (1h, 30m)")
	fs.BoolVar(&a.asJSON, "json", false, "print the records as stored, one JSON object a line")
	fs.StringVar(&a.file, "file", "", "read the audit log at `PATH` instead of mcpd's")
	fs.DurationVar(&a.timeout, "timeout", 5*time.Second, "give up asking mcpd for its audit log's path after this long")
	a.pollInterval = 200 * time.Millisecond
	return func(ctx context.Context, c *cli, cmd *command, _ []string) error {
		if a.since < 0 {
			return &usageError{cmd: cmd, msg: fmt.Sprintf("--since %s: want a positive duration, how far back to print (1h, 30m)", a.since)}
		}
		return c.runAudit(ctx, a)
	}
}

func (c *cli) runAudit(ctx context.Context, a auditArgs) error {
	path, err := c.auditPath(ctx, a.file, a.timeout)
	if err != nil {
		return err
	}
	var cutoff time.Time
	if a.since > 0 {
		cutoff = timeNow().Add(-a.since)
	}
	keep := func(r *audit.Record) bool {
		return (a.server == "" || r.Server == a.server) &&
			(a.app == "" || strings.Contains(r.App, a.app)) &&
			(cutoff.IsZero() || !r.Time.Before(cutoff))
	}
	p := &auditPrinter{w: c.stdout, asJSON: a.asJSON}
	defer p.flush()
	emit := func(r *audit.Record, line []byte) error {
		if keep(r) {
			p.print(r, line)
		}
		return nil
	}
	if a.file != "" {
		if _, err := os.Stat(path); err != nil {
			return fmt.Errorf("audit log: %w", err) // a mistyped --file is not an empty log
		}
	}
	return followAudit(ctx, path, a.follow, a.pollInterval, emit, c.stderr, p.flush)
}

// auditPath is --file, else the path mcpd reports, else the default.
func (c *cli) auditPath(ctx context.Context, file string, timeout time.Duration) (string, error) {
	if file != "" {
		return file, nil
	}
	sctx, client, err := c.dial(ctx, timeout)
	if err == nil {
		st, err := client.GetStatus(sctx, &mcpdv1.GetStatusRequest{})
		if err == nil {
			if st.GetAuditPath() == "" {
				return "", errors.New("mcpd's audit log is off (config \"audit\": {\"enabled\": false}); --file reads a log")
			}
			return st.GetAuditPath(), nil
		}
	}
	dir := os.Getenv("XDG_STATE_HOME")
	if !filepath.IsAbs(dir) {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(dir, "mcpd", audit.FileName), nil
}

// followAudit prints the records of the log's files, oldest first, and,
// with follow, the ones written after. The newest file stays open from one
// look to the next: when the log is rotated, what that file got before the
// rotation is read to its end through the open descriptor, then every
// file newer than it (rotated again meanwhile, and the new one), so that
// none is missed while the files are kept. When the file read last was
// removed meanwhile (rotated past the files kept), warn says so. A file
// cut back in place is read again from its start.
func followAudit(ctx context.Context, path string, follow bool, every time.Duration, emit func(*audit.Record, []byte) error, warn io.Writer, flush func()) error {
	var t auditTail
	defer t.close()
	for {
		if err := t.poll(path, emit, warn); err != nil {
			return fmt.Errorf("audit log: %w", err)
		}
		flush()
		if !follow {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(every):
		}
	}
}

// auditTail is the newest audit file read and how far.
type auditTail struct {
	f   *os.File // nil: none open yet (first look, or the log did not exist)
	off int64
}

// poll prints what was added to the open file, then, when path names
// another file now, the files newer than the open one, oldest first,
// keeping the newest open.
func (t *auditTail) poll(path string, emit func(*audit.Record, []byte) error, warn io.Writer) error {
	if err := t.readOn(emit); err != nil {
		return err
	}
	if t.f != nil {
		st, err := os.Stat(path)
		if cur, cerr := t.f.Stat(); err != nil || cerr == nil && os.SameFile(st, cur) {
			return nil // the same file; or none under the name, between a rotation's renames
		}
		// Rotated: what the open file got after the read above.
		if err := t.readOn(emit); err != nil {
			return err
		}
	}
	newer, found, err := openNewer(path, t.f)
	for try := 0; err == nil && t.f != nil && !found && try < 3; try++ {
		// Not among the files: removed, or caught between two renames
		// of a rotation in progress (the next look finds it then).
		closeAll(newer)
		time.Sleep(5 * time.Millisecond)
		newer, found, err = openNewer(path, t.f)
	}
	if err != nil {
		return err
	}
	if t.f != nil && !found && len(newer) > 0 {
		fmt.Fprintln(warn, "mcpdctl: the audit log was rotated past the files it keeps since the last look; records in files removed meanwhile, if any, are not shown")
	}
	defer closeAll(newer) // not the newest, which is kept (nil here)
	for i, f := range newer {
		if i == len(newer)-1 { // the newest: followed from here
			t.close()
			t.f, t.off, newer[i] = f, 0, nil
			return t.readOn(emit)
		}
		if _, err := audit.ReadFrom(f, emit); err != nil {
			return err
		}
	}
	return nil
}

// openNewer opens the log's files newer than stop (all of them when stop
// is nil), oldest first: path and then <path>.1, <path>.2, … up to stop,
// or two names missing in a row. Each file is opened once, even when a
// rotation renames the files while they are opened. found reports whether
// stop was among them.
func openNewer(path string, stop *os.File) (files []*os.File, found bool, err error) {
	var stopInfo os.FileInfo
	if stop != nil {
		stopInfo, _ = stop.Stat()
	}
	var infos []os.FileInfo
	missed := 0
	for i := 0; missed < 2; i++ {
		name := path
		if i > 0 {
			name += "." + strconv.Itoa(i)
		}
		f, err := os.Open(name)
		if errors.Is(err, os.ErrNotExist) {
			// A rotation renames the files one at a time, oldest first:
			// one name at a time may be missing meanwhile.
			missed++
			continue
		}
		missed = 0
		if err != nil {
			closeAll(files)
			return nil, false, err
		}
		st, err := f.Stat()
		if err != nil {
			f.Close()
			closeAll(files)
			return nil, false, err
		}
		if stopInfo != nil && os.SameFile(st, stopInfo) {
			f.Close()
			found = true
			break
		}
		if slices.ContainsFunc(infos, func(o os.FileInfo) bool { return os.SameFile(o, st) }) {
			f.Close() // renamed up while the files were opened: seen already
		} else {
			files, infos = append(files, f), append(infos, st)
		}
	}
	slices.Reverse(files)
	return files, found, nil
}

// closeAll closes files, skipping nil ones.
func closeAll(files []*os.File) {
	for _, f := range files {
		if f != nil {
			f.Close()
		}
	}
}

// readOn prints the whole records of the open file past t.off.
func (t *auditTail) readOn(emit func(*audit.Record, []byte) error) error {
	if t.f == nil {
		return nil
	}
	if st, err := t.f.Stat(); err == nil && st.Size() < t.off {
		t.off = 0 // cut back in place
	}
	if _, err := t.f.Seek(t.off, io.SeekStart); err != nil {
		return err
	}
	n, err := audit.ReadFrom(t.f, emit)
	t.off += n
	return err
}

func (t *auditTail) close() {
	if t.f != nil {
		t.f.Close()
		t.f = nil
	}
}

// auditPrinter prints records as a table or as JSON lines.
type auditPrinter struct {
	w      io.Writer
	asJSON bool
	tw     *tabwriter.Writer
}

func (p *auditPrinter) print(r *audit.Record, line []byte) {
	if p.asJSON {
		p.w.Write(line)
		return
	}
	if p.tw == nil {
		p.tw = tabwriter.NewWriter(p.w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(p.tw, "TIME\tAPP\tPID\tFRONT\tSERVER\tMETHOD\tNAME\tOUTCOME\tDURATION\tCACHE")
	}
	outcome := r.Outcome
	switch {
	case r.Outcome == audit.OutcomeRPCError:
		outcome = fmt.Sprintf("%s %d", r.Outcome, r.RPCCode)
	case r.Outcome == audit.OutcomeError:
		outcome = r.Outcome + " " + r.GRPCCode
	}
	fmt.Fprintf(p.tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Time.Local().Format("2006-01-02 15:04:05.000"),
		sanitize(dash(r.App)), pidCell(int64(r.Pid)), r.Front, sanitize(r.Server), sanitize(r.Method), sanitize(dash(r.Name)),
		outcome, (time.Duration(r.DurationUs) * time.Microsecond).String(), r.Cache)
}

func (p *auditPrinter) flush() {
	if p.tw != nil {
		p.tw.Flush()
	}
}
