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

func (c *cli) runAdd(ctx context.Context, ref string, a addArgs, vars map[string]string, timeout time.Duration) error {
	name, version := splitRef(ref)
	rc, err := newRegistry(registryURL(ctx, a.reg, a.cfgFlag))
	if err != nil {
		return err
	}
	defer rc.Close()
	e, ans, err := rc.Get(ctx, name, version)
	if err != nil {
		return err
	}
	if ans.Offline != nil {
		c.warnf("%s cannot be reached (%v); using its answer from the cache, %s old", rc.BaseURL, ans.Offline, age(timeNow().Sub(ans.FetchedAt)))
	}
	ver := e.Server.Name + "@" + e.Server.Version
	if st := e.Status(); st != registry.StatusActive {
		msg := fmt.Sprintf("%s is %s in the registry", ver, st)
		if m := e.StatusMessage(); m != "" {
			msg += ": " + sanitizeText(m)
		}
		return errors.New(msg + "; nothing was written")
	}
	local := a.as
	if local == "" {
		local = localName(e.Server.Name)
	}
	choice, err := registry.Choose(&e.Server, exec.LookPath)
	if err != nil {
		return err
	}
	built, err := choice.Build(local, func(v registry.Var) (string, bool, error) {
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
	})
	if err != nil {
		return err
	}
	if len(built.Missing) > 0 {
		var b strings.Builder
		for _, v := range built.Missing {
			fmt.Fprintf(&b, "\n  --var %s=...  (%s", v.Key, v.What)
			if v.Description != "" {
				fmt.Fprintf(&b, ": %s", sanitizeText(v.Description))
			}
			b.WriteString(")")
		}
		return fmt.Errorf("%s needs values; give them with --var (or set them in the environment):%s", ver, b.String())
	}
	entry := importer.Server{Command: built.Config.Command, Args: built.Config.Args, Env: built.Config.Env,
		URL: built.Config.URL, Type: built.Config.Type, Headers: built.Config.Headers}
	how := choice.Kind()
	if choice.Package != nil {
		how += " package " + choice.Package.Identifier + " with " + choice.Runtime
	} else {
		how += " remote " + importer.RemoteRef(choice.Remote.URL)
	}
	if a.dryRun {
		out, err := importer.MarshalIndent(map[string]any{"mcpServers": map[string]importer.Server{local: entry}})
		if err != nil {
			return err
		}
		fmt.Fprintf(c.stderr, "%s as %q: %s\n", ver, local, how)
		if len(built.Secrets) > 0 {
			fmt.Fprintf(c.stderr, "would store %s as secrets (see mcpdctl secret ls)\n", strings.Join(keys(built.Secrets), ", "))
		}
		_, err = c.stdout.Write(out)
		return err
	}

	dest := paths.ConfigPath(a.cfgFlag)
	recPath := registry.RecordsPath(paths.StateDir())
	recs, err := registry.LoadRecords(recPath)
	if err != nil {
		return err
	}
	out, err := addToConfig(ctx, dest, local, entry, recs[local].Name == e.Server.Name)
	if err != nil {
		return err
	}
	// Check as mcpd would (secrets are resolved when the server starts).
	abs, _ := filepath.Abs(dest)
	resp, _ := checkLocally(ctx, &mcpdv1.CheckConfigRequest{Path: abs, Content: out}, abs)
	if !resp.GetValid() {
		c.printLeftToFill(resp, abs, false)
		return fmt.Errorf("mcpd would reject %s with this entry; nothing was written", abs)
	}
	if len(built.Secrets) > 0 {
		st := openSecrets()
		defer st.Close()
		for _, name := range keys(built.Secrets) {
			if err := st.Set(ctx, name, built.Secrets[name]); err != nil {
				return fmt.Errorf("store secret %s: %w; nothing was written", name, err)
			}
		}
		fmt.Fprintf(c.stdout, "stored %s in %s (the config refers to them as ${secret:NAME})\n", strings.Join(keys(built.Secrets), ", "), st.Backend())
	}
	if err := os.MkdirAll(filepath.Dir(dest), 0o700); err != nil {
		return fmt.Errorf("config file: %w", err)
	}
	if err := writeFileAtomic(dest, out); err != nil {
		return err
	}
	recs[local] = registry.Record{Name: e.Server.Name, Version: e.Server.Version, Registry: rc.BaseURL, Config: abs, Added: timeNow().UTC()}
	if err := recs.Save(recPath); err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "added %s as %q to %s (%s)\n", ver, local, abs, how)
	c.reloadAfterAdd(ctx, timeout)
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
