package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/pflag"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

var reloadCmd = &command{
	name:     "reload",
	synopsis: "[--json]",
	short:    "re-read the config file and apply what changed",
	long: `Asks mcpd to re-read its config file, as SIGHUP ("systemctl --user reload mcpd")
and saving the file do. Only what changed is applied: added servers are
registered, removed ones stop once their calls in flight finish, servers whose
command, args, env, cwd or protocol changed restart, and servers whose
settings alone changed keep their process. An invalid file changes nothing:
the problems are printed, mcpd keeps the running config, and the exit status
is 1.`,
	setup: reloadSetup,
}

// diffJSON is the stable JSON shape of a config diff.
type diffJSON struct {
	Added     []string `json:"added"`
	Removed   []string `json:"removed"`
	Restarted []string `json:"restarted"`
	Updated   []string `json:"updated"`
	Unchanged []string `json:"unchanged"`
}

// problemJSON is one config problem in --json output.
type problemJSON struct {
	Path    string `json:"path"`
	Line    int32  `json:"line,omitempty"`
	Column  int32  `json:"column,omitempty"`
	Server  string `json:"server,omitempty"`
	Key     string `json:"key,omitempty"`
	Message string `json:"message"`
}

// configResultJSON is "reload --json" and "config check --json".
type configResultJSON struct {
	ConfigPath string        `json:"config_path"`
	OK         bool          `json:"ok"`
	Error      string        `json:"error,omitempty"`
	Problems   []problemJSON `json:"problems"`
	Diff       *diffJSON     `json:"diff"`
	// Valid lists the servers without problems ("config check" only).
	Valid []string `json:"valid_servers,omitempty"`
	// Warnings are "config check"'s warnings (secrets on a command line).
	Warnings []string `json:"warnings,omitempty"`
}

func toDiffJSON(d *mcpdv1.ConfigDiff) *diffJSON {
	if d == nil {
		return nil
	}
	nz := func(s []string) []string {
		if s == nil {
			return []string{}
		}
		return s
	}
	return &diffJSON{nz(d.GetAdded()), nz(d.GetRemoved()), nz(d.GetRestarted()), nz(d.GetUpdated()), nz(d.GetUnchanged())}
}

func toProblemsJSON(ps []*mcpdv1.ConfigProblem) []problemJSON {
	out := []problemJSON{}
	for _, p := range ps {
		out = append(out, problemJSON{p.GetPath(), p.GetLine(), p.GetColumn(), p.GetServer(), p.GetKey(), p.GetMessage()})
	}
	return out
}

// errConfigRejected makes the exit status 1 after the problems were printed.
var errConfigRejected = errors.New("config not applied: fix the problems above; mcpd keeps running the previous config")

func reloadSetup(fs *pflag.FlagSet) runFunc {
	asJSON := fs.Bool("json", false, "print the outcome as JSON")
	timeout := timeoutFlag(fs, 30*time.Second)
	return func(ctx context.Context, c *cli, _ *command, _ []string) error {
		return c.runReload(ctx, *asJSON, *timeout)
	}
}

func (c *cli) runReload(ctx context.Context, asJSON bool, timeout time.Duration) error {
	ctx, client, err := c.dial(ctx, timeout)
	if err != nil {
		return err
	}
	resp, err := client.ReloadConfig(ctx, &mcpdv1.ReloadConfigRequest{})
	if err != nil {
		return c.rpcError(ctx, err, "")
	}
	if asJSON {
		out := configResultJSON{ConfigPath: resp.GetConfigPath(), OK: resp.GetApplied(), Error: resp.GetError(),
			Problems: toProblemsJSON(resp.GetProblems())}
		if resp.GetApplied() {
			out.Diff = toDiffJSON(resp.GetDiff())
		}
		if err := writeJSON(c.stdout, out); err != nil {
			return err
		}
		if !resp.GetApplied() {
			return errConfigRejected
		}
		return nil
	}
	if !resp.GetApplied() {
		printProblems(c.stderr, resp.GetError(), resp.GetProblems())
		return errConfigRejected
	}
	fmt.Fprintf(c.stdout, "reloaded %s\n", sanitize(resp.GetConfigPath()))
	printDiff(c.stdout, resp.GetDiff(), false)
	if ps := resp.GetProblems(); len(ps) > 0 {
		// Applied: these servers are failed until fixed, the others run.
		fmt.Fprintln(c.stderr, "servers with config problems (failed until fixed; the others run):")
		printProblems(c.stderr, "", ps)
	}
	return nil
}

// printProblems prints a config's problems, one a line, or err when there
// are none, sanitized (a message may quote the file).
func printProblems(w io.Writer, errText string, ps []*mcpdv1.ConfigProblem) {
	if len(ps) == 0 {
		fmt.Fprintf(w, "%s\n", sanitizeText(errText))
		return
	}
	for _, p := range ps {
		var b strings.Builder
		b.WriteString(p.GetPath())
		if p.GetLine() > 0 {
			fmt.Fprintf(&b, ":%d:%d", p.GetLine(), p.GetColumn())
		}
		b.WriteString(": ")
		if p.GetServer() != "" {
			fmt.Fprintf(&b, "server %q: ", p.GetServer())
		}
		if p.GetKey() != "" {
			fmt.Fprintf(&b, "key %q: ", p.GetKey())
		}
		b.WriteString(p.GetMessage())
		fmt.Fprintln(w, sanitize(b.String()))
	}
}

// printDiff prints a config diff; would says it was not applied.
func printDiff(w io.Writer, d *mcpdv1.ConfigDiff, would bool) {
	verb := func(done, future string) string {
		if would {
			return future
		}
		return done
	}
	lines := []struct {
		what  string
		names []string
	}{
		{verb("added", "would add"), d.GetAdded()},
		{verb("removed", "would remove"), d.GetRemoved()},
		{verb("restarted", "would restart"), d.GetRestarted()},
		{verb("updated in place", "would update in place"), d.GetUpdated()},
		{verb("profiles added", "would add profiles"), d.GetProfilesAdded()},
		{verb("profiles removed", "would remove profiles"), d.GetProfilesRemoved()},
		{verb("profiles changed", "would change profiles"), d.GetProfilesChanged()},
	}
	any := false
	for _, l := range lines {
		if len(l.names) > 0 {
			any = true
			fmt.Fprintf(w, "  %s: %s\n", l.what, sanitize(strings.Join(l.names, ", ")))
		}
	}
	if !any {
		// mcpd also applies a saved file by itself: a reload right after
		// an edit finds it applied already.
		fmt.Fprintf(w, "  %s\n", verb("no changes: the running config is the file's (mcpd applies a saved file by itself)",
			"no changes against the running config"))
	}
}
