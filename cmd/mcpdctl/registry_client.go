package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mcpd-dev/mcpd/internal/config"
	"github.com/mcpd-dev/mcpd/internal/paths"
	"github.com/mcpd-dev/mcpd/internal/registry"
)

// envRegistry names the MCP Registry when --registry does not.
const envRegistry = "MCPD_REGISTRY"

// registryURL is the registry of search, add and outdated: --registry,
// else $MCPD_REGISTRY, else the config file's top-level "registry", else
// the official registry.
func registryURL(ctx context.Context, flag, cfgPath string) string {
	if flag != "" {
		return flag
	}
	if v := os.Getenv(envRegistry); v != "" {
		return v
	}
	if data, err := config.ReadFile(ctx, paths.ConfigPath(cfgPath)); err == nil {
		if cfg, err := config.Parse(paths.ConfigPath(cfgPath), data); err == nil && cfg.Registry != "" {
			return cfg.Registry
		}
	}
	return registry.DefaultURL
}

// newRegistry is the client of the registry at url, caching under mcpd's
// state directory.
func newRegistry(url string) (*registry.Client, error) {
	rc, err := registry.New(url, registry.CacheDir(paths.StateDir()))
	if err != nil {
		return nil, err
	}
	rc.Now = timeNow
	return rc, nil
}

// age says how long ago t was, roughly.
func age(d time.Duration) string {
	switch {
	case d < time.Minute:
		return "less than a minute"
	case d < time.Hour:
		return fmt.Sprintf("%d minute(s)", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d hour(s)", int(d.Hours()))
	}
	return fmt.Sprintf("%d day(s)", int(d.Hours()/24))
}

// registryFlags declares --registry.
func registryFlag(fs interface {
	StringVar(*string, string, string, string)
}, p *string) {
	fs.StringVar(p, "registry", "", "the MCP Registry's `URL` (default $"+envRegistry+", else the config's \"registry\", else "+registry.DefaultURL+")")
}

// promptTTY asks for v on the terminal, without echo for a secret; ok is
// false when stdin is not a terminal.
func promptTTY(w io.Writer, v registry.Var) (string, bool, error) {
	fd := int(os.Stdin.Fd())
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return "", false, nil // not a terminal
	}
	label := v.Key
	if v.Description != "" {
		label += " (" + v.Description + ")"
	}
	if v.Default != "" && !v.IsSecret {
		label += " [" + v.Default + "]"
	}
	fmt.Fprintf(w, "%s %s: ", v.What, label)
	if v.IsSecret {
		noEcho := *old
		noEcho.Lflag &^= unix.ECHO
		if err := unix.IoctlSetTermios(fd, unix.TCSETS, &noEcho); err != nil {
			return "", false, err
		}
		defer func() {
			_ = unix.IoctlSetTermios(fd, unix.TCSETS, old)
			fmt.Fprintln(w)
		}()
	}
	line, err := bufio.NewReader(os.Stdin).ReadString('\n')
	if err != nil && line == "" {
		return "", false, err
	}
	line = strings.TrimRight(line, "\r\n")
	if line == "" {
		return "", false, nil
	}
	return line, true, nil
}
