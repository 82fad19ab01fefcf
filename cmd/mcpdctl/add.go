package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/mcpd-dev/mcpd/internal/config"
	"github.com/mcpd-dev/mcpd/internal/importer"
	"github.com/mcpd-dev/mcpd/internal/paths"
	"github.com/mcpd-dev/mcpd/internal/registry"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

var addCmd = &command{
	name:     "add",
	synopsis: "NAME[@VERSION] [--as LOCAL] [--var KEY=VALUE ...] [--dry-run] [--registry URL] [--config PATH]",
	short:    "add a server from the MCP Registry to mcpd's config",
	long: `Reads the server NAME (its latest version, or VERSION) from the MCP Registry
and writes an entry for it into mcpd's config file: the first of its packages
whose runtime is installed (npm with npx, pypi with uvx, oci with docker or
podman, nuget with dnx), else its remote (Streamable HTTP, else SSE). The
entry is named LOCAL (--as; default the last part of NAME). A deprecated or
deleted server is refused with the registry's message.

The values the server needs come from --var KEY=VALUE (KEY is the variable's,
header's or argument's name), else, for a required one, the environment
(KEY), else a prompt on the terminal (without echo for a secret); defaults
fill the rest. Secret values are not written into the config: the entry
refers to them as ${NAME}, and they are stored in ~/.config/mcpd/env (mode
0600), which mcpd's systemd unit reads when mcpd starts.

The config is checked as mcpd would check it, then written, and a running
mcpd reloads it; nothing is started. --dry-run prints the entry and writes
nothing. Adding a server that add wrote before (NAME@latest) updates it;
"mcpdctl outdated" lists those with a newer version.`,
	minArgs: 1,
	maxArgs: 1,
	setup:   addSetup,
}

type addArgs struct {
	as, reg, cfgFlag string
	vars             []string
	dryRun           bool
}

func addSetup(fs *pflag.FlagSet) runFunc {
	var a addArgs
	fs.StringVar(&a.as, "as", "", "the server's `LOCAL` name in mcpd's config (default the last part of NAME)")
	fs.StringArrayVar(&a.vars, "var", nil, "a value the server needs, `KEY=VALUE` (repeatable)")
	fs.BoolVar(&a.dryRun, "dry-run", false, "print the entry; write nothing")
	registryFlag(fs, &a.reg)
	fs.StringVar(&a.cfgFlag, "config", "", "the config `PATH` to write (default $MCPD_CONFIG, else $XDG_CONFIG_HOME/mcpd/config.json)")
	timeout := timeoutFlag(fs, 60*time.Second)
	return func(ctx context.Context, c *cli, cmd *command, args []string) error {
		vars := map[string]string{}
		for _, kv := range a.vars {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				return &usageError{cmd: cmd, msg: fmt.Sprintf("--var %q: want KEY=VALUE", kv)}
			}
			vars[k] = v
		}
		ctx, cancel := c.withTimeout(ctx, *timeout)
		defer cancel()
		return c.runAdd(ctx, args[0], a, vars, *timeout)
	}
}

// splitRef splits NAME[@VERSION].
func splitRef(ref string) (name, version string) {
	slash := strings.LastIndex(ref, "/")
	if at := strings.LastIndex(ref, "@"); at > slash {
		return ref[:at], ref[at+1:]
	}
	return ref, ""
}

var notLocal = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// localName is the default config name of the registry server name.
func localName(name string) string {
	n := name[strings.LastIndex(name, "/")+1:]
	return strings.Trim(notLocal.ReplaceAllString(n, "-"), "-")
}

// runAdd reads ref from the registry, builds its config entry with the
// values it needs, and prints it (--dry-run) or writes it and has a running
// mcpd reload.
func (c *cli) runAdd(ctx context.Context, ref string, a addArgs, vars map[string]string, timeout time.Duration) error {
	name, version := splitRef(ref)
	rc, err := newRegistry(registryURL(ctx, a.reg, a.cfgFlag))
	if err != nil {
		return err
	}
	defer rc.Close()
	e, err := c.getActive(ctx, rc, name, version)
	if err != nil {
		return err
	}
	ver := e.Server.Name + "@" + e.Server.Version
	local := a.as
	if local == "" {
		local = localName(e.Server.Name)
	}
	choice, err := registry.Choose(&e.Server, exec.LookPath)
	if err != nil {
		return err
	}
	built, err := choice.Build(local, c.addAsker(ctx, vars))
	if err != nil {
		return err
	}
	if len(built.Missing) > 0 {
		return missingVarsError(ver, built.Missing)
	}
	entry := importer.Server{Command: built.Config.Command, Args: built.Config.Args, Env: built.Config.Env,
		URL: built.Config.URL, Type: built.Config.Type, Headers: built.Config.Headers}
	how := describeChoice(choice)
	if a.dryRun {
		return c.printDryRun(ver, local, how, entry, built.Secrets)
	}
	rec := registry.Record{Name: e.Server.Name, Version: e.Server.Version, Registry: rc.BaseURL}
	abs, err := c.writeAdded(ctx, a.cfgFlag, local, entry, built.Secrets, rec)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "added %s as %q to %s (%s)\n", ver, local, abs, how)
	c.reloadAfterAdd(ctx, timeout)
	return nil
}

// getActive reads the server name (at version, or its latest) from the
// registry, warning when the answer comes from the cache; a server that is
// not active is an error carrying the registry's message.
func (c *cli) getActive(ctx context.Context, rc *registry.Client, name, version string) (*registry.Entry, error) {
	e, ans, err := rc.Get(ctx, name, version)
	if err != nil {
		return nil, err
	}
	if ans.Offline != nil {
		c.warnf("%s cannot be reached (%v); using its answer from the cache, %s old", rc.BaseURL, ans.Offline, age(timeNow().Sub(ans.FetchedAt)))
	}
	if st := e.Status(); st != registry.StatusActive {
		msg := fmt.Sprintf("%s@%s is %s in the registry", e.Server.Name, e.Server.Version, st)
		if m := e.StatusMessage(); m != "" {
			msg += ": " + sanitizeText(m)
		}
		return nil, errors.New(msg + "; nothing was written")
	}
	return e, nil
}

// addAsker answers for the values a server needs: --var, else (for a
// required one) the environment, else a secret stored by an earlier add,
// else a prompt on the terminal.
func (c *cli) addAsker(ctx context.Context, vars map[string]string) registry.Asker {
	return func(v registry.Var) (string, bool, error) {
		if s, ok := vars[v.Key]; ok {
			return s, true, nil
		}
		if !v.IsRequired {
			return "", false, nil
		}
		if s, ok := os.LookupEnv(v.Key); ok && s != "" {
			return s, true, nil
		}
		if v.Secret != "" { // stored by an earlier add: an update keeps it
			if s, err := stored(ctx, v.Secret); err == nil {
				return s, true, nil
			}
		}
		return promptTTY(c.stderr, v)
	}
}

// missingVarsError names the required values of ver nobody gave, each as
// the --var that would give it.
func missingVarsError(ver string, missing []registry.Var) error {
	var b strings.Builder
	for _, v := range missing {
		fmt.Fprintf(&b, "\n  --var %s=...  (%s", v.Key, v.What)
		if v.Description != "" {
			fmt.Fprintf(&b, ": %s", sanitizeText(v.Description))
		}
		b.WriteString(")")
	}
	return fmt.Errorf("%s needs values; give them with --var (or set them in the environment):%s", ver, b.String())
}

// describeChoice says how the server runs: its package and runtime, or its
// remote.
func describeChoice(choice *registry.Choice) string {
	how := choice.Kind()
	if choice.Package != nil {
		how += " package " + choice.Package.Identifier + " with " + choice.Runtime
	} else {
		how += " remote " + importer.RemoteRef(choice.Remote.URL)
	}
	return how
}

// printDryRun prints what add would write: the entry on stdout, what it is
// and the secrets it would store on stderr.
func (c *cli) printDryRun(ver, local, how string, entry importer.Server, secrets map[string]string) error {
	out, err := importer.MarshalIndent(map[string]any{"mcpServers": map[string]importer.Server{local: entry}})
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stderr, "%s as %q: %s\n", ver, local, how)
	if len(secrets) > 0 {
		fmt.Fprintf(c.stderr, "would store %s as secrets (see mcpdctl secret ls)\n", strings.Join(keys(secrets), ", "))
	}
	_, err = c.stdout.Write(out)
	return err
}

// writeAdded sets the server local to entry in the config (replacing it
// when add wrote it before from the same registry server), checks the
// result as mcpd would, stores the secrets, writes the config and records
// rec (its Config and Added filled in here). It returns the config's
// absolute path. Nothing is written when the check or storing a secret
// fails.
func (c *cli) writeAdded(ctx context.Context, cfgFlag, local string, entry importer.Server, secrets map[string]string, rec registry.Record) (string, error) {
	dest := paths.ConfigPath(cfgFlag)
	recPath := registry.RecordsPath(paths.StateDir())
	recs, err := registry.LoadRecords(recPath)
	if err != nil {
		return "", err
	}
	out, err := addToConfig(ctx, dest, local, entry, recs[local].Name == rec.Name)
	if err != nil {
		return "", err
	}
	// Check as mcpd would (secrets are resolved when the server starts).
	abs, _ := filepath.Abs(dest)
	resp, _ := checkLocally(ctx, &mcpdv1.CheckConfigRequest{Path: abs, Content: out}, abs)
	if !resp.GetValid() {
		c.printLeftToFill(resp, abs, false)
		return "", fmt.Errorf("mcpd would reject %s with this entry; nothing was written", abs)
	}
	if err := c.storeSecrets(ctx, secrets); err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(dest), 0o700); err != nil {
		return "", fmt.Errorf("config file: %w", err)
	}
	if err := writeFileAtomic(dest, out); err != nil {
		return "", err
	}
	rec.Config, rec.Added = abs, timeNow().UTC()
	recs[local] = rec
	if err := recs.Save(recPath); err != nil {
		return "", err
	}
	return abs, nil
}

// storeSecrets stores the secrets in mcpdctl's secret store, if any.
func (c *cli) storeSecrets(ctx context.Context, secrets map[string]string) error {
	if len(secrets) == 0 {
		return nil
	}
	st := openSecrets()
	defer st.Close()
	for _, name := range keys(secrets) {
		if err := st.Set(ctx, name, secrets[name]); err != nil {
			return fmt.Errorf("store secret %s: %w; nothing was written", name, err)
		}
	}
	fmt.Fprintf(c.stdout, "stored %s in %s (the config refers to them as ${secret:NAME})\n", strings.Join(keys(secrets), ", "), st.Backend())
	return nil
}

// reloadAfterAdd has a running mcpd reload its config.
func (c *cli) reloadAfterAdd(ctx context.Context, timeout time.Duration) {
	ctx, client, err := c.dial(ctx, timeout)
	if err == nil {
		var resp *mcpdv1.ReloadConfigResponse
		if resp, err = client.ReloadConfig(ctx, &mcpdv1.ReloadConfigRequest{}); err == nil {
			if resp.GetApplied() {
				fmt.Fprintln(c.stdout, "mcpd reloaded its config")
			} else {
				c.warnf("mcpd did not apply the config: %s", sanitizeText(resp.GetError()))
			}
			return
		}
	}
	fmt.Fprintln(c.stdout, "mcpd is not running: it reads the entry when it starts")
}

// addToConfig is the config at dest with the server local set to entry:
// added, or replaced when replace (a server add wrote before); a server of
// that name that add did not write is an error.
func addToConfig(ctx context.Context, dest, local string, entry importer.Server, replace bool) ([]byte, error) {
	existing, err := config.ReadFile(ctx, dest)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && len(strings.TrimSpace(string(existing))) == 0) {
		return importer.MarshalIndent(map[string]any{"mcpServers": map[string]importer.Server{local: entry}})
	}
	if err != nil {
		return nil, err
	}
	maps, err := importer.ServerMaps(dest, existing)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dest, err)
	}
	into := ""
	for _, m := range maps {
		if into == "" {
			into = m.Key
		}
		if _, ok := m.Servers[local]; ok {
			if !replace {
				return nil, fmt.Errorf("%s already has a server %q; choose another name with --as", dest, local)
			}
			into = m.Key
		}
	}
	return importer.PatchServers(dest, existing, into, map[string]importer.Server{local: entry})
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// stored is the value of the secret name in mcpdctl's secret store.
func stored(ctx context.Context, name string) (string, error) {
	st := openSecrets()
	defer st.Close()
	return st.Get(ctx, name)
}
