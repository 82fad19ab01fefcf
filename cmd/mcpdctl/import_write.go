package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mcpd-dev/mcpd/internal/config"
	"github.com/mcpd-dev/mcpd/internal/importer"
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
	res, err := importer.Convert(file, data)
	if err != nil {
		return fmt.Errorf("import %s: %w", file, err)
	}
	for _, n := range res.Notes {
		c.warnf("%s", n)
	}
	mv := importer.NewSecretMover(mode.moveSecrets, false, openSecrets)
	defer mv.Close()
	for _, name := range slices.Sorted(maps.Keys(res.Servers)) {
		s := res.Servers[name]
		lines, err := mv.Apply(ctx, fmt.Sprintf("server %q", name), name, &s)
		if err != nil {
			return fmt.Errorf("import %s: %w; nothing was written", file, err)
		}
		res.Servers[name] = s
		c.secretLines(c.stderr, mode.moveSecrets, lines)
	}
	out, merged, err := c.importOutput(ctx, file, res, mode)
	if err != nil {
		return err
	}
	// The secrets are stored before the config that names them is
	// printed or written.
	if line, err := mv.Commit(ctx); err != nil {
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
			how = fmt.Sprintf("added %d server(s) to", len(res.Servers))
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
func (c *cli) importOutput(ctx context.Context, file string, res *importer.Result, mode importMode) (out []byte, merged bool, err error) {
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
				out, err := importer.MergeConfig(mode.dest, existing, file, res.Servers)
				return out, true, err
			}
		case err == nil && !mode.force:
			return nil, false, fmt.Errorf("%s already exists; use --merge to add the imported servers to it, or --force to replace it", mode.dest)
		}
	}
	out, err = importer.MarshalIndent(map[string]any{"mcpServers": res.Servers})
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

// secretLines prints apply's lines: suggestions (without --move-secrets)
// as warnings, moves to w.
func (c *cli) secretLines(w io.Writer, moved bool, lines []string) {
	for _, l := range lines {
		if moved {
			fmt.Fprintf(w, "mcpdctl: %s\n", sanitizeText(l))
		} else {
			c.warnf("%s", l)
		}
	}
}
