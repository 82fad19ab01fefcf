package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/tailscale/hujson"

	"github.com/mcpd-dev/mcpd/internal/config"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// importMode is what config import does with the converted config.
type importMode struct {
	write, force, merge bool
	dest                string // the config file --write writes
	// moveSecrets stores the literal secrets found in the keyring and
	// writes ${secret:NAME} in their place (movesecrets.go).
	moveSecrets bool
}

// errImportIncomplete is returned when the imported config does not pass
// config check: what is left to fill in was printed.
var errImportIncomplete = errors.New("the imported config is not ready for mcpd yet (see above)")

// configImport converts another host's config, prints or writes it, and
// checks the result as mcpd would.
func (c *cli) configImport(ctx context.Context, file string, mode importMode) error {
	// Another host's config is bounded like mcpd's own (config.ReadFile).
	data, err := config.ReadFile(ctx, file)
	if err != nil {
		return err
	}
	res, err := importConfig(file, data)
	if err != nil {
		return fmt.Errorf("import %s: %w", file, err)
	}
	for _, n := range res.notes {
		c.warnf("%s", n)
	}
	mv := newSecretMover(mode.moveSecrets, false)
	defer mv.close()
	for _, name := range slices.Sorted(mapKeys(res.servers)) {
		s := res.servers[name]
		lines, err := mv.apply(ctx, fmt.Sprintf("server %q", name), name, &s)
		if err != nil {
			return fmt.Errorf("import %s: %w; nothing was written", file, err)
		}
		res.servers[name] = s
		c.secretLines(c.stderr, mode.moveSecrets, lines)
	}
	out, merged, err := c.importOutput(ctx, file, res, mode)
	if err != nil {
		return err
	}
	// The secrets are stored before the config that names them is
	// printed or written.
	if line, err := mv.commit(ctx); err != nil {
		return fmt.Errorf("import %s: %w; nothing was written", file, err)
	} else if line != "" {
		fmt.Fprintf(c.stderr, "mcpdctl: %s\n", sanitizeText(line))
	}
	dest, err := filepath.Abs(mode.dest)
	if err != nil {
		dest = mode.dest
	}
	resp, _ := checkLocally(ctx, &mcpdv1.CheckConfigRequest{Path: dest, Content: out}, dest)
	if !mode.write {
		if _, err := c.stdout.Write(out); err != nil {
			return err
		}
	} else {
		if err := writeFileAtomic(mode.dest, out); err != nil {
			return err
		}
		how := "wrote"
		if merged {
			how = fmt.Sprintf("added %d server(s) to", len(res.servers))
		}
		if resp.GetValid() {
			fmt.Fprintf(c.stdout, "%s %s; %s\n", how, dest, c.applyHint(dest))
			return nil
		}
		fmt.Fprintf(c.stdout, "%s %s\n", how, dest)
	}
	if resp.GetValid() {
		return nil
	}
	c.printLeftToFill(resp, dest, mode.write)
	return errImportIncomplete
}

// importOutput is the config to print or write: the imported servers alone,
// or with --merge added to the existing file at mode.dest. merged reports
// the latter.
func (c *cli) importOutput(ctx context.Context, file string, res *importResult, mode importMode) (out []byte, merged bool, err error) {
	if mode.write {
		_, err := os.Stat(mode.dest)
		switch {
		case err != nil && !errors.Is(err, fs.ErrNotExist):
			return nil, false, fmt.Errorf("config file: %w", err)
		case err == nil && mode.merge:
			existing, err := config.ReadFile(ctx, mode.dest)
			if err != nil {
				return nil, false, err
			}
			if len(bytes.TrimSpace(existing)) > 0 {
				out, err := mergeConfig(mode.dest, existing, file, res.servers)
				return out, true, err
			}
		case err == nil && !mode.force:
			return nil, false, fmt.Errorf("%s already exists; use --merge to add the imported servers to it, or --force to replace it", mode.dest)
		}
	}
	out, err = marshalNoEscapeIndent(map[string]any{"mcpServers": res.servers})
	return out, false, err
}

// printLeftToFill lists each problem of the imported config on stderr,
// with where to set the variables mcpd lacks.
func (c *cli) printLeftToFill(resp *mcpdv1.CheckConfigResponse, dest string, written bool) {
	fmt.Fprintln(c.stderr, "mcpd would reject this config; left to fill in:")
	if len(resp.GetProblems()) == 0 {
		fmt.Fprintf(c.stderr, "  %s\n", sanitizeText(resp.GetError()))
	}
	for _, p := range resp.GetProblems() {
		var b strings.Builder
		if p.GetServer() != "" {
			fmt.Fprintf(&b, "server %q: ", p.GetServer())
		}
		if p.GetKey() != "" {
			fmt.Fprintf(&b, "key %q: ", p.GetKey())
		}
		b.WriteString(p.GetMessage())
		fmt.Fprintf(c.stderr, "  %s\n", sanitizeText(b.String()))
	}
	fmt.Fprintln(c.stderr, "Set each variable where mcpd runs: export it in the shell that starts mcpd, or for the")
	fmt.Fprintln(c.stderr, "systemd unit run \"systemctl --user edit mcpd\" and add Environment=NAME=value under [Service].")
	if written {
		fmt.Fprintf(c.stderr, "Edit what else is listed in %s, then run: mcpdctl config check %s\n", dest, dest)
	}
}

// configServerMaps reads the maps of servers of mcpd's config existing
// (at dest): "mcpServers" and VS Code's "servers", in that order, each with
// its members.
func configServerMaps(dest string, existing []byte) ([]configServerMap, error) {
	std := config.StripJSONComments(bytes.TrimPrefix(existing, []byte("\xef\xbb\xbf")))
	if err := json.Unmarshal(std, new(any)); err != nil {
		return nil, syntaxError(std, err)
	}
	top, err := objectMembers(std, "the file")
	if err != nil {
		return nil, err
	}
	var out []configServerMap
	for _, key := range []string{"mcpServers", "servers"} {
		raw, ok := top[key]
		if !ok {
			continue
		}
		have, err := objectMembers(raw, fmt.Sprintf("%q", key))
		if err != nil {
			return nil, err
		}
		out = append(out, configServerMap{key: key, servers: have})
	}
	return out, nil
}

// configServerMap is one map of servers of mcpd's config.
type configServerMap struct {
	key     string
	servers map[string]json.RawMessage
}

// mergeConfig adds servers (imported from file) to the existing config at
// dest, keeping its comments and every other key; the file is laid out
// anew by hujson's formatter. A server name already
// in dest is an error naming both entries, and nothing is merged.
func mergeConfig(dest string, existing []byte, file string, servers map[string]importedServer) ([]byte, error) {
	existing = bytes.TrimPrefix(existing, []byte("\xef\xbb\xbf"))
	maps, err := configServerMaps(dest, existing)
	if err != nil {
		return nil, fmt.Errorf("merge into %s: %w", dest, err)
	}
	into := ""
	var clashes []string
	for _, m := range maps {
		if into == "" {
			into = m.key
		}
		for name, v := range m.servers {
			s, ok := servers[name]
			if !ok {
				continue
			}
			var old struct{ Command any }
			_ = json.Unmarshal(v, &old)
			what := fmt.Sprintf("command %q", s.Command)
			if s.URL != "" {
				what = fmt.Sprintf("url %q", remoteRef(s.URL))
			}
			clashes = append(clashes, fmt.Sprintf("server %q is both in %s (%q, command %q) and imported from %s (%s)",
				name, dest, m.key, fmt.Sprint(old.Command), file, what))
		}
	}
	if len(clashes) > 0 {
		sort.Strings(clashes)
		return nil, fmt.Errorf("%s; rename one of the two (in either file) and import again; nothing was written", strings.Join(clashes, "; "))
	}
	return patchServers(dest, existing, into, servers)
}

// patchServers adds servers under the key into ("" : a new "mcpServers")
// of the HuJSON document existing, then formats it.
func patchServers(dest string, existing []byte, into string, servers map[string]importedServer) ([]byte, error) {
	v, err := hujson.Parse(existing)
	if err != nil {
		return nil, fmt.Errorf("merge into %s: %w", dest, err)
	}
	type op struct {
		Op    string `json:"op"`
		Path  string `json:"path"`
		Value any    `json:"value"`
	}
	var ops []op
	if into == "" {
		into = "mcpServers"
		ops = append(ops, op{"add", "/mcpServers", map[string]any{}})
	}
	names := make([]string, 0, len(servers))
	for name := range servers {
		names = append(names, name)
	}
	sort.Strings(names)
	ptr := strings.NewReplacer("~", "~0", "/", "~1")
	for _, name := range names {
		ops = append(ops, op{"add", "/" + into + "/" + ptr.Replace(name), servers[name]})
	}
	patch, err := marshalNoEscapeIndent(ops)
	if err != nil {
		return nil, err
	}
	if err := v.Patch(patch); err != nil {
		return nil, fmt.Errorf("merge into %s: %w", dest, err)
	}
	v.Format()
	out := v.Pack()
	if !bytes.HasSuffix(out, []byte("\n")) {
		out = append(out, '\n')
	}
	return out, nil
}
