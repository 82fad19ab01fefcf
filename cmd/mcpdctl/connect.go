package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/aymanbagabas/go-udiff"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/mcpd-dev/mcpd/internal/hosts"
	"github.com/mcpd-dev/mcpd/internal/importer"
	"github.com/mcpd-dev/mcpd/internal/paths"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

var connectCmd = &command{
	name:     "connect",
	synopsis: "HOST... | --all [--dry-run] [--force] [--aggregate] [--move-secrets] [--project DIR]",
	short:    "point MCP hosts' servers at mcpd, in their own config files",
	long: `connect rewrites each MCP server entry of a host's config file to go
through mcpd, and adds the server to mcpd's config (one mcpd server for the
same command, arguments, environment and directory, or the same URL, of
every host). Each entry keeps its name, its enabled state and the host's
own options for it, so the tool names the host shows and its permission
rules stay as they were. A host that reaches servers by URL gets mcpd's
per-server HTTP door (http://127.0.0.1:6273/servers/NAME/mcp); the others
run "mcpdctl bridge NAME". A server tied to a project (its arguments name
the project's directory or ${workspaceFolder}) becomes a "share": "root"
server that runs once per project, and the entry passes its root.

Nothing else in the file changes: comments, key order and other settings
stay byte for byte. The file is backed up under mcpd's state directory
first and written atomically; "mcpdctl disconnect" puts it back. A second
connect changes nothing. Entries mcpd cannot serve stay as they are, with
a line saying why. A host that is running and rewrites its file on exit
is refused (--force to go on). HOST is an id of "mcpdctl hosts"; --all
takes every host found. --dry-run prints the diff of each file it would
change, mcpd's config included, and changes nothing.

--aggregate writes one entry instead: the entries connect would point at
mcpd are removed, and one entry named "mcpd" is added in their place,
pointing at mcpd's aggregate door (http://127.0.0.1:6273/mcp), or for a
host that only runs commands at "mcpdctl bridge NAME...", the servers it
replaces. The host then sees every tool as "server__tool": its permission
rules and allow-lists that name tools must follow. The servers still go
into mcpd's config. An entry named "mcpd" that is mcpd's aggregate is kept
(a second connect --aggregate changes nothing); one that is something
else is refused. A server tied to a project, and an entry the host has
disabled, keep an entry of their own, pointed at mcpd as without
--aggregate, with a line saying so. disconnect puts the entries back and
takes "mcpd" out.

An env or header value written in the clear under a key that names a
credential (ending in TOKEN, _KEY, APIKEY or _PAT, holding SECRET, PASSWORD
or PASSWD, or the Authorization header) is named in a warning, as it would
be copied into mcpd's config. --move-secrets stores it with "mcpdctl
secret" as SERVER_KEY (github_GITHUB_TOKEN; SERVER_KEY_2 when that name
holds another value) and writes ${secret:SERVER_KEY} in mcpd's config
("Bearer ${secret:NAME}" for an Authorization header). With --dry-run the
diff shows the references and nothing is stored. A value is never printed.`,
	maxArgs:  -1,
	setup:    connectSetup,
	complete: completeHosts,
}

// connectArgs are the flags of connect and disconnect.
type connectArgs struct {
	all, dryRun, force, removeServers, aggregate, moveSecrets bool
	project, cfgFlag                                          string
	timeout                                                   time.Duration
}

func (a *connectArgs) common(fs *pflag.FlagSet) {
	fs.BoolVar(&a.all, "all", false, "every host found")
	fs.BoolVar(&a.dryRun, "dry-run", false, "print the diff of each file it would change, and change nothing")
	fs.StringVar(&a.project, "project", "", "also the project files of the project in `DIR` (.mcp.json, .vscode/mcp.json, …)")
	fs.StringVar(&a.cfgFlag, "config", "", "mcpd's config `PATH` (default $MCPD_CONFIG, else $XDG_CONFIG_HOME/mcpd/config.json)")
	fs.DurationVar(&a.timeout, "timeout", 10*time.Second, "give up asking mcpd after this long; 0 means no limit")
}

func connectSetup(fs *pflag.FlagSet) runFunc {
	var a connectArgs
	a.common(fs)
	fs.BoolVar(&a.force, "force", false, "connect a host even while it runs")
	fs.BoolVar(&a.aggregate, "aggregate", false, `replace each file's entries by one entry "mcpd" for all of mcpd's servers (tools named server__tool)`)
	fs.BoolVar(&a.moveSecrets, "move-secrets", false, "store literal tokens, keys and passwords of env and headers with mcpdctl secret, and write ${secret:NAME} in mcpd's config")
	return a.run((*cli).connectHosts)
}

// run is the verb that resolves the HOSTs (or --all) and does do to them
// within --timeout.
func (a *connectArgs) run(do func(*cli, context.Context, []*hosts.Host, connectArgs) error) runFunc {
	return func(ctx context.Context, c *cli, cmd *command, args []string) error {
		hs, err := pickHosts(cmd, args, a.all)
		if err != nil {
			return err
		}
		ctx, cancel := c.withTimeout(ctx, a.timeout)
		defer cancel()
		return do(c, ctx, hs, *a)
	}
}

// completeHosts offers the host ids not given yet.
func completeHosts(_ context.Context, _ *cli, args []string) ([]string, cobra.ShellCompDirective) {
	return slices.DeleteFunc(hostIDs(), func(id string) bool { return slices.Contains(args, id) }), cobra.ShellCompDirectiveNoFileComp
}

func hostIDs() []string {
	var ids []string
	for _, h := range hosts.All() {
		ids = append(ids, h.ID)
	}
	return ids
}

// pickHosts resolves the HOST arguments, or --all.
func pickHosts(cmd *command, args []string, all bool) ([]*hosts.Host, error) {
	switch {
	case all && len(args) > 0:
		return nil, &usageError{cmd: cmd, msg: "give HOSTs or --all, not both"}
	case all:
		return hosts.All(), nil
	case len(args) == 0:
		return nil, &usageError{cmd: cmd, msg: "name the HOSTs (see mcpdctl hosts), or --all"}
	}
	var out []*hosts.Host
	for _, id := range args {
		h := hosts.Find(id)
		if h == nil {
			return nil, &usageError{cmd: cmd, msg: fmt.Sprintf("unknown host %q; known: %s", id, strings.Join(hostIDs(), ", "))}
		}
		if !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	return out, nil
}

// connectState is what one connect run has read and decided.
type connectState struct {
	env   hosts.Env
	reach hosts.Mcpd
	store hosts.Store
	mc    *importer.McpdConfig
	// secrets moves (or names) the literal secrets of the servers added.
	secrets *importer.SecretMover
	// failed counts files that could not be written.
	failed int
}

func (c *cli) connectHosts(ctx context.Context, hs []*hosts.Host, a connectArgs) error {
	st, err := c.connectStart(ctx, a)
	if err != nil {
		return err
	}
	defer st.secrets.Close()
	var plans []*importer.HostPlan
	var problems []string
	found := 0
	for _, h := range hs {
		opened, errs := hosts.Present(h, st.env, st.reach)
		for _, err := range errs {
			problems = append(problems, fmt.Sprintf("%s: %v", h.Name, err))
		}
		if len(opened) == 0 && len(errs) == 0 {
			if !a.all {
				problems = append(problems, fmt.Sprintf("%s: no config file found (looked at %s)", h.Name, strings.Join(filePaths(h, st.env), ", ")))
			}
			continue
		}
		found++
		p, err := c.planHost(ctx, st, h, opened, a)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", h.Name, err))
			continue
		}
		plans = append(plans, p...)
	}
	if len(problems) > 0 {
		for _, p := range problems {
			c.warnf("%s", p)
		}
		return fmt.Errorf("nothing changed: %d problem(s) above; mend them (or leave that host out) and run connect again", len(problems))
	}
	if a.all && found == 0 {
		fmt.Fprintln(c.stdout, "no MCP host config found")
		return nil
	}
	return c.applyConnect(ctx, st, plans, a.dryRun)
}

// connectStart reads what every host's plan needs.
func (c *cli) connectStart(ctx context.Context, a connectArgs) (*connectState, error) {
	env, err := hosts.UserEnv(a.project)
	if err != nil {
		return nil, err
	}
	cfgPath, err := filepath.Abs(paths.ConfigPath(a.cfgFlag))
	if err != nil {
		return nil, err
	}
	mc, err := importer.ReadMcpdConfig(ctx, cfgPath)
	if err != nil {
		return nil, err
	}
	reach, err := c.reach(ctx, mc)
	if err != nil {
		return nil, err
	}
	return &connectState{env: env, reach: reach, mc: mc, store: connectStore(), secrets: importer.NewSecretMover(a.moveSecrets, a.dryRun, openSecrets)}, nil
}

// connectStore is where connect keeps its records and backups.
func connectStore() hosts.Store {
	return hosts.Store{Dir: filepath.Join(paths.StateDir(), "connect")}
}

func filePaths(h *hosts.Host, env hosts.Env) []string {
	var out []string
	for _, f := range h.Files(env) {
		out = append(out, f.Path)
	}
	return out
}

// planHost plans h's files, printing the plan's notes and the secrets it
// moved.
func (c *cli) planHost(ctx context.Context, st *connectState, h *hosts.Host, opened []*hosts.Opened, a connectArgs) ([]*importer.HostPlan, error) {
	ic := &importer.Connect{Env: st.env, Reach: st.reach, Config: st.mc, Secrets: st.secrets}
	plans, notes, moved, err := ic.PlanHost(ctx, h, opened, importer.ConnectOptions{
		Aggregate: a.aggregate, MoveSecrets: a.moveSecrets, Force: a.force, DryRun: a.dryRun})
	for _, n := range notes {
		c.warnf("%s", n)
	}
	c.secretLines(c.stdout, true, moved)
	return plans, err
}

// applyConnect writes mcpd's config, then each host file, or with dryRun
// prints their diffs.
func (c *cli) applyConnect(ctx context.Context, st *connectState, plans []*importer.HostPlan, dryRun bool) error {
	cfg, err := st.mc.Updated()
	if err != nil {
		return err
	}
	if dryRun {
		if cfg != nil {
			c.printDiff(st, st.mc.Path, st.mc.Data, cfg)
		}
		for _, p := range plans {
			if len(p.Changes) > 0 {
				c.printDiff(st, p.Opened.File.Path, p.Opened.Data, p.After)
			}
		}
		return nil
	}
	// The secrets are stored before the config that names them.
	if line, err := st.secrets.Commit(ctx); err != nil {
		return fmt.Errorf("nothing changed: %w", err)
	} else if line != "" {
		fmt.Fprintln(c.stdout, sanitizeText(line))
	}
	if cfg != nil {
		if err := writeMcpdConfig(st.store, st.mc, cfg); err != nil {
			return fmt.Errorf("write mcpd's config: %w", err)
		}
		fmt.Fprintf(c.stdout, "%s: added %s\n", st.mc.Path, strings.Join(st.mc.Added(), ", "))
		c.reloadAfterConnect(ctx, st.mc.Path)
	}
	for _, p := range plans {
		c.reportPlan(st, p)
	}
	if st.failed > 0 {
		return fmt.Errorf("%d file(s) not connected (see above)", st.failed)
	}
	return nil
}

// reportPlan commits one file's plan and says what it did.
func (c *cli) reportPlan(st *connectState, p *importer.HostPlan) {
	o := p.Opened
	already := 0
	for _, e := range o.Entries {
		if e.State == hosts.Connected {
			already++
		}
	}
	if len(p.Changes) == 0 {
		fmt.Fprintf(c.stdout, "%s (%s): nothing to change; %d of %d entries go through mcpd\n", o.Host.Name, o.File.Path, already, len(o.Entries))
		return
	}
	if _, err := st.store.Commit(o, p.After, p.Changes, time.Now()); err != nil {
		c.warnf("%s: %v; left as it is", o.File.Path, err)
		st.failed++
		return
	}
	var names, removed []string
	added := false
	for _, ch := range p.Changes {
		switch {
		case ch.Written == "":
			removed = append(removed, ch.Name)
		case ch.Name == hosts.AggregateName && (ch.Original == "" || ch.Server == ""):
			added = true
		default:
			names = append(names, ch.Name)
		}
	}
	var did []string
	if len(names) > 0 {
		did = append(did, "connected "+strings.Join(names, ", "))
	}
	if len(removed) > 0 || added {
		what := fmt.Sprintf("entry %q", hosts.AggregateName)
		if len(removed) > 0 {
			what = fmt.Sprintf("%s in one entry %q (tools named server__tool)", strings.Join(removed, ", "), hosts.AggregateName)
		}
		did = append(did, "aggregated "+what)
	}
	fmt.Fprintf(c.stdout, "%s (%s): %s; undo with: mcpdctl disconnect %s\n",
		o.Host.Name, o.File.Path, strings.Join(did, "; "), o.Host.ID)
}

// reloadAfterConnect makes a running mcpd that reads path take the new
// servers; it only says so when mcpd runs on another config.
func (c *cli) reloadAfterConnect(ctx context.Context, path string) {
	ctx, client, err := c.dial(ctx, 5*time.Second)
	var stat *mcpdv1.GetStatusResponse
	if err == nil {
		stat, err = client.GetStatus(ctx, &mcpdv1.GetStatusRequest{})
	}
	if err != nil {
		fmt.Fprintln(c.stdout, "mcpd is not running; the hosts reach it once it runs")
		return
	}
	if !c.localDaemon(stat.GetPid()) {
		// Even a config of the same path is the other machine's file.
		c.warnf("the mcpd at %s runs at the other end of a forward and reads its own %s there, not this machine's %s: add the servers there (mcpdctl config import, on that machine), then run: mcpdctl reload",
			c.socket, stat.GetConfigPath(), path)
		return
	}
	if stat.GetConfigPath() != path {
		c.warnf("the running mcpd reads %s, not %s; restart it with --config %s", stat.GetConfigPath(), path, path)
		return
	}
	if _, err := client.ReloadConfig(ctx, &mcpdv1.ReloadConfigRequest{}); err != nil {
		c.warnf("mcpd did not reload %s: %v; run: mcpdctl reload", path, err)
	}
}

// printDiff prints a unified diff of a file's change, with the literal
// secrets found shown as "<secret>".
func (c *cli) printDiff(st *connectState, path string, before, after []byte) {
	fmt.Fprint(c.stdout, st.secrets.Redact(udiff.Unified(path, path+" (connected)", string(before), string(after))))
}

// reach says how hosts reach mcpd: this mcpdctl as the bridge, and the
// HTTP face's address from the running mcpd, else from its config.
func (c *cli) reach(ctx context.Context, mc *importer.McpdConfig) (hosts.Mcpd, error) {
	exe, err := os.Executable()
	if err != nil {
		return hosts.Mcpd{}, fmt.Errorf("find mcpdctl's own path: %w", err)
	}
	m := hosts.Mcpd{Ctl: exe}
	if c.socketFlag != "" || os.Getenv(paths.EnvSocket) != "" {
		sock, err := resolveSocket(c.socketFlag)
		if err != nil {
			return m, err
		}
		if sock, err = filepath.Abs(sock); err != nil {
			return m, err
		}
		m.GlobalArgs = []string{"--socket", sock}
	}
	if base, ok := c.runningHTTP(ctx); ok {
		m.HTTP = base
		return m, nil
	}
	m.HTTP = configHTTP(mc.Data)
	return m, nil
}

// runningHTTP is the base URL of a running mcpd's HTTP face.
func (c *cli) runningHTTP(ctx context.Context) (string, bool) {
	ctx, client, err := c.dial(ctx, 2*time.Second)
	if err != nil {
		return "", false
	}
	st, err := client.GetStatus(ctx, &mcpdv1.GetStatusRequest{})
	if err != nil {
		return "", false
	}
	if !c.localDaemon(st.GetPid()) {
		// mcpd is at the far end of a forward (ssh, a mounted socket):
		// its loopback URL is another machine's, the bridge reaches it.
		return "", true
	}
	for _, u := range st.GetHttp().GetUrls() {
		if base, ok := strings.CutSuffix(u, "/mcp"); ok && strings.HasPrefix(u, "http://") && !strings.Contains(strings.TrimPrefix(base, "http://"), "/") {
			return base, true
		}
	}
	return "", true // mcpd runs without a TCP HTTP face: the bridge
}

// configHTTP is the HTTP face's base URL as mcpd's config sets it, or
// mcpd's default; "" when it is off or on a Unix socket.
func configHTTP(data []byte) string {
	def := "http://127.0.0.1:" + hosts.DefaultHTTPPort
	if data == nil {
		return def
	}
	v, err := importer.StandardJSON(data)
	if err != nil {
		return def
	}
	var top struct {
		HTTPListen *string `json:"httpListen"`
	}
	if json.Unmarshal(v, &top) != nil || top.HTTPListen == nil {
		return def
	}
	switch l := *top.HTTPListen; {
	case l == "" || l == "off" || strings.HasPrefix(l, "unix:"):
		return ""
	default:
		return "http://" + l
	}
}

// writeMcpdConfig writes mcpd's config with the added servers, after a
// backup of the file as it was.
func writeMcpdConfig(store hosts.Store, mc *importer.McpdConfig, out []byte) error {
	if mc.Data != nil {
		if _, err := store.Backup("mcpd", mc.Path, mc.Data); err != nil {
			return err
		}
	}
	return writeFileAtomic(mc.Path, out)
}
