package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mcpd-dev/mcpd/internal/config"
	"github.com/mcpd-dev/mcpd/internal/hosts"
	"github.com/mcpd-dev/mcpd/internal/paths"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

var configCmd = &command{
	name:     "config",
	synopsis: "check [FILE] [--json] | import FILE [--write [--merge|--force]] [--move-secrets] [--config PATH]",
	short:    "validate a config file, or import another MCP host's config",
	long: `config check [FILE]
  Validates FILE (default: mcpd's config file) and, when mcpd is running, prints
  what "mcpdctl reload" would change against the running config: the servers
  it would add, remove, restart or update, and the profiles it would add,
  remove or change. mcpd checks the file in its own environment (the ${VAR}
  values and PATH it would use);
  when mcpd is not running, mcpdctl checks it in its own environment. Every
  problem is listed (each server's: unset variables, commands not found, bad
  keys or values), then the servers without problems. Exit status 1 when there
  is any problem.

config import FILE
  Reads the MCP servers of another host's config - Claude Desktop, Cursor and
  Windsurf ("mcpServers"), Claude Code (.mcp.json, ~/.claude.json and its
  projects), VS Code (.vscode/mcp.json "servers", or "mcp.servers" in
  settings.json), Zed (settings.json "context_servers") - and prints an mcpd
  config with them. Comments and trailing commas are read. Host variables
  become mcpd's: ${userHome} is ${HOME}, ${env:NAME} is ${NAME}, VS Code's
  ${input:ID} is ${MCP_INPUT_ID} (to set in mcpd's environment), and
  ${workspaceFolder} is the project directory when FILE is in one
  (.vscode/mcp.json, .cursor/mcp.json, .mcp.json), else ${HOME}, with a
  warning. Remote servers, Zed extensions and entries that already run
  "mcpdctl bridge" are skipped, each with a warning. --write writes the
  config file (--config, else $MCPD_CONFIG, else
  $XDG_CONFIG_HOME/mcpd/config.json): --merge adds the servers to an existing
  file (keeping its comments; it is reformatted; a name in both is an error
  and nothing is written), --force replaces it. An env or header value
  written in the clear under a key that names a credential (ending in
  TOKEN, _KEY, APIKEY or _PAT, holding SECRET, PASSWORD or PASSWD, or the
  Authorization header) is named in a warning; --move-secrets stores it
  with "mcpdctl secret" as SERVER_KEY (github_GITHUB_TOKEN) and writes
  ${secret:SERVER_KEY} instead ("Bearer ${secret:NAME}" for an
  Authorization header). A value is never printed. The result is checked as
  mcpd would: if it is not ready (a variable unset), import lists what is
  left to fill in and exits 1, having printed or written it all the same.`,
	minArgs:  1,
	maxArgs:  2,
	setup:    configSetup,
	complete: completeConfigArg,
}

// configArgs are the flags of config.
type configArgs struct {
	asJSON, write, force, merge, moveSecrets bool
	cfgFlag                                  string
	timeout                                  time.Duration
}

func configSetup(fs *pflag.FlagSet) runFunc {
	var a configArgs
	fs.BoolVar(&a.asJSON, "json", false, "check: print the outcome as JSON")
	fs.BoolVar(&a.write, "write", false, "import: write the config file instead of printing it")
	fs.BoolVar(&a.force, "force", false, "import: with --write, replace an existing config file")
	fs.BoolVar(&a.merge, "merge", false, "import: with --write, add the imported servers to an existing config file")
	fs.BoolVar(&a.moveSecrets, "move-secrets", false, "import: store literal tokens, keys and passwords of env and headers with mcpdctl secret, and write ${secret:NAME} instead")
	fs.StringVar(&a.cfgFlag, "config", "", "import: the config `PATH` --write writes (default $MCPD_CONFIG, else $XDG_CONFIG_HOME/mcpd/config.json)")
	fs.DurationVar(&a.timeout, "timeout", 10*time.Second, "give up after this long; 0 means no limit")
	return func(ctx context.Context, c *cli, cmd *command, args []string) error {
		return c.runConfig(ctx, cmd, args, a)
	}
}

func (c *cli) runConfig(ctx context.Context, cmd *command, pos []string, a configArgs) error {
	switch pos[0] {
	case "check":
		if a.write || a.force || a.merge || a.moveSecrets || a.cfgFlag != "" {
			return &usageError{cmd: cmd, msg: "--write, --force, --merge, --move-secrets and --config are for import"}
		}
		file := ""
		if len(pos) == 2 {
			file = pos[1]
		}
		ctx, cancel := c.withTimeout(ctx, a.timeout)
		defer cancel()
		return c.configCheck(ctx, file, a.asJSON)
	case "import":
		if len(pos) != 2 {
			return &usageError{cmd: cmd, msg: "import needs the FILE to import"}
		}
		if a.asJSON {
			return &usageError{cmd: cmd, msg: "--json is for check (import always prints JSON)"}
		}
		switch {
		case a.force && !a.write:
			return &usageError{cmd: cmd, msg: "--force needs --write"}
		case a.merge && !a.write:
			return &usageError{cmd: cmd, msg: "--merge needs --write"}
		case a.merge && a.force:
			return &usageError{cmd: cmd, msg: "--merge adds to the config file and --force replaces it: give one"}
		}
		ctx, cancel := c.withTimeout(ctx, a.timeout)
		defer cancel()
		return c.configImport(ctx, pos[1], importMode{write: a.write, force: a.force, merge: a.merge, moveSecrets: a.moveSecrets, dest: paths.ConfigPath(a.cfgFlag)})
	}
	return &usageError{cmd: cmd, msg: fmt.Sprintf("unknown config action %q, want check or import", pos[0])}
}

// configCheck validates file (empty: mcpd's config file) through mcpd when
// it runs, else locally.
func (c *cli) configCheck(ctx context.Context, file string, asJSON bool) error {
	req := &mcpdv1.CheckConfigRequest{}
	if file != "" {
		abs, err := filepath.Abs(file)
		if err != nil {
			return fmt.Errorf("config file: %w", err)
		}
		// The bounded reader mcpd uses: no FIFO, device or huge file.
		data, err := config.ReadFile(ctx, abs)
		if err != nil {
			return err
		}
		if len(data) == 0 {
			data = []byte{} // an empty file is a problem mcpd reports
		}
		req.Path, req.Content = abs, data
	}
	var resp *mcpdv1.CheckConfigResponse
	client, err := c.connect()
	if err == nil {
		resp, err = client.CheckConfig(ctx, req)
		if err != nil && status.Code(err) != codes.Unavailable {
			return c.rpcError(ctx, err, "")
		}
	}
	running := resp != nil
	var fine []string // the servers without problems
	if running {
		fine = fineServers(resp)
	} else {
		// mcpd is not running (or not reachable): check here.
		resp, fine = checkLocally(ctx, req, file)
	}
	warnings := secretWarnings(ctx, resp.GetConfigPath(), req)
	if asJSON {
		out := configResultJSON{ConfigPath: resp.GetConfigPath(), OK: resp.GetValid(), Error: resp.GetError(),
			Problems: toProblemsJSON(resp.GetProblems()), Valid: fine, Warnings: warnings}
		if running && resp.GetDiff() != nil {
			out.Diff = toDiffJSON(resp.GetDiff())
		}
		if out.Valid == nil {
			out.Valid = []string{}
		}
		if err := writeJSON(c.stdout, out); err != nil {
			return err
		}
		if !resp.GetValid() {
			return errInvalidConfig
		}
		return nil
	}
	for _, w := range warnings {
		fmt.Fprintf(c.stderr, "warning: %s\n", sanitize(w))
	}
	if !resp.GetValid() {
		printProblems(c.stderr, resp.GetError(), resp.GetProblems())
		if len(fine) > 0 {
			fmt.Fprintf(c.stdout, "%s: servers without problems: %s\n", sanitize(resp.GetConfigPath()), sanitize(strings.Join(fine, ", ")))
		}
		return errInvalidConfig
	}
	if len(fine) > 0 {
		fmt.Fprintf(c.stdout, "%s: valid; servers: %s\n", sanitize(resp.GetConfigPath()), sanitize(strings.Join(fine, ", ")))
	} else {
		fmt.Fprintf(c.stdout, "%s: valid\n", sanitize(resp.GetConfigPath()))
	}
	if running {
		printDiff(c.stdout, resp.GetDiff(), true)
	} else {
		fmt.Fprintln(c.stdout, "  (mcpd is not running: nothing to compare with)")
	}
	return nil
}

var errInvalidConfig = errors.New("config is invalid")

// fineServers returns the servers of a checked config that have no problem,
// from mcpd's diff (which lists every server of the file but removed ones).
func fineServers(resp *mcpdv1.CheckConfigResponse) []string {
	d := resp.GetDiff()
	if d == nil {
		return nil
	}
	bad := map[string]bool{}
	for _, p := range resp.GetProblems() {
		bad[p.GetServer()] = true
	}
	var out []string
	for _, l := range [][]string{d.GetAdded(), d.GetRestarted(), d.GetUpdated(), d.GetUnchanged()} {
		for _, n := range l {
			if !bad[n] {
				out = append(out, n)
			}
		}
	}
	slices.Sort(out)
	return out
}

// checkLocally validates like mcpd would, in mcpdctl's environment; it also
// returns the servers without problems.
func checkLocally(ctx context.Context, req *mcpdv1.CheckConfigRequest, file string) (*mcpdv1.CheckConfigResponse, []string) {
	path := req.GetPath()
	var (
		cfg *config.Config
		err error
	)
	if file == "" {
		path = paths.ConfigPath("")
		cfg, err = config.Load(ctx, path)
	} else {
		cfg, err = config.Parse(path, req.GetContent())
	}
	var fine []string
	if err == nil {
		cfg.CheckCommands()
		fine = cfg.Valid()
		if n := len(cfg.Problems); n > 0 {
			err = fmt.Errorf("%s: %d problem(s) in %d of %d servers", path, n, len(cfg.Servers)-len(fine), len(cfg.Servers))
		}
	}
	resp := &mcpdv1.CheckConfigResponse{ConfigPath: path, Valid: err == nil}
	if err == nil {
		return resp, fine
	}
	resp.Error = err.Error()
	var parts []*config.Error
	if cfg != nil {
		parts = cfg.Problems
	} else {
		for _, e := range unjoin(err) {
			var ce *config.Error
			if errors.As(e, &ce) {
				parts = append(parts, ce)
			}
		}
	}
	for _, ce := range parts {
		resp.Problems = append(resp.Problems, &mcpdv1.ConfigProblem{
			Path: ce.Path, Line: int32(ce.Line), Column: int32(ce.Column), Server: ce.Server, Key: ce.Key, Message: ce.Msg,
		})
	}
	return resp, fine
}

// secretWarnings warns of the ${secret:NAME} references in servers' args:
// the value ends up on the child's command line, which ps shows to every
// user of the machine. It reads the file itself (req's content, else
// path), in mcpdctl's environment; a file it cannot read has none.
func secretWarnings(ctx context.Context, path string, req *mcpdv1.CheckConfigRequest) []string {
	var (
		cfg *config.Config
		err error
	)
	if req.GetContent() != nil {
		cfg, err = config.Parse(req.GetPath(), req.GetContent())
	} else if path != "" {
		cfg, err = config.Load(ctx, path)
	}
	if err != nil || cfg == nil {
		return nil
	}
	var out []string
	for _, s := range cfg.Servers {
		for i, a := range s.Args {
			for _, n := range config.SecretNames(a) {
				out = append(out, fmt.Sprintf("server %q: args[%d]: ${secret:%s} puts the secret on the command line, where ps shows it to every user; pass it in \"env\" instead", s.Name, i, n))
			}
		}
	}
	return out
}

// unjoin splits an errors.Join error into its parts.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// applyHint says how to make mcpd use the config file just written to
// dest: reload a running mcpd that reads dest, else start one on it.
func (c *cli) applyHint(dest string) string {
	abs, err := filepath.Abs(dest)
	if err != nil {
		abs = dest
	}
	ctx, client, err := c.dial(context.Background(), 2*time.Second)
	if err != nil {
		return "start mcpd to use it (mcpd --config " + abs + ")"
	}
	st, err := client.GetStatus(ctx, &mcpdv1.GetStatusRequest{})
	switch {
	case err != nil:
		return "start mcpd to use it (mcpd --config " + abs + ")"
	case st.GetConfigPath() == abs:
		return "apply it with: mcpdctl reload"
	default:
		return fmt.Sprintf("the running mcpd reads %s, not this file; restart it with --config %s to use it", st.GetConfigPath(), abs)
	}
}

// writeFileAtomic writes mcpd's config file at path whole (see
// hosts.WriteAtomic), so that a running mcpd never reads half a file; a new
// file is private to the user, an existing one keeps its mode and owner.
func writeFileAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("create config directory: %w", err)
	}
	mode := fs.FileMode(0o600)
	fi, err := os.Stat(path)
	if err == nil {
		mode = fi.Mode().Perm()
	}
	if err := hosts.WriteAtomic(path, data, mode, fi); err != nil {
		return fmt.Errorf("write config: %w", err)
	}
	return nil
}
