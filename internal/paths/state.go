package paths

import (
	"os"
	"path/filepath"
)

// EnvXDGStateHome is consulted by StateDir.
const EnvXDGStateHome = "XDG_STATE_HOME"

// StateDir returns the directory of mcpd's persistent state (OAuth
// credentials): $XDG_STATE_HOME/mcpd when XDG_STATE_HOME is absolute, else
// ~/.local/state/mcpd, as the XDG base directory spec says. It does not
// create the directory.
func StateDir() string {
	if sh := os.Getenv(EnvXDGStateHome); filepath.IsAbs(sh) {
		return filepath.Join(sh, "mcpd")
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		home = os.TempDir()
	}
	return filepath.Join(home, ".local", "state", "mcpd")
}
