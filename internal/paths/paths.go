// Package paths resolves the filesystem locations shared by mcpd and mcpdctl:
// the API socket, its directory, and the config file.
package paths

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// MaxSocketPathLen is the longest socket path, in bytes, that mcpd accepts.
// Linux allows 107 bytes in sun_path, macOS and the BSDs 103; 104 is the
// conventional portable bound (tailscale, containerd) and leaves no silent
// truncation anywhere.
const MaxSocketPathLen = 104

// Environment variables consulted by SocketPath and ConfigPath.
const (
	EnvSocket        = "MCPD_SOCKET"
	EnvConfig        = "MCPD_CONFIG"
	EnvXDGRuntimeDir = "XDG_RUNTIME_DIR"
	EnvXDGConfigHome = "XDG_CONFIG_HOME"
)

// SocketName is the file name of the API socket inside its directory.
const SocketName = "mcpd.sock"

// ErrSocketPathTooLong is returned (wrapped, with the path and its length)
// when a socket path exceeds MaxSocketPathLen.
var ErrSocketPathTooLong = errors.New("paths: socket path too long")

// SocketPath returns the absolute path of the API socket. The first of these
// that is set wins:
//
//  1. flag (the --socket flag; "" when not given);
//  2. $MCPD_SOCKET;
//  3. $XDG_RUNTIME_DIR/mcpd/mcpd.sock (only when XDG_RUNTIME_DIR is absolute,
//     as the XDG base directory spec requires);
//  4. /tmp/mcpd-<euid>/mcpd.sock, the way tmux does it.
//
// The fallback uses /tmp literally, not $TMPDIR, so that mcpd started by
// systemd and mcpdctl started from a shell agree on the path.
// Relative paths from the flag or the environment are made absolute against
// the working directory. The result is checked with CheckSocketPath.
func SocketPath(flag string) (string, error) {
	p := flag
	if p == "" {
		p = os.Getenv(EnvSocket)
	}
	if p == "" {
		p = filepath.Join(DefaultSocketDir(), SocketName)
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", fmt.Errorf("resolve socket path %q: %w", p, err)
	}
	if err := CheckSocketPath(abs); err != nil {
		return "", err
	}
	return abs, nil
}

// DefaultSocketDir returns the directory of the default socket when neither
// --socket nor $MCPD_SOCKET is given: $XDG_RUNTIME_DIR/mcpd if
// XDG_RUNTIME_DIR is set to an absolute path, else /tmp/mcpd-<euid>.
func DefaultSocketDir() string {
	if rt := os.Getenv(EnvXDGRuntimeDir); filepath.IsAbs(rt) {
		return filepath.Join(rt, "mcpd")
	}
	return filepath.Join("/tmp", "mcpd-"+strconv.Itoa(os.Geteuid()))
}

// CheckSocketPath reports an error wrapping ErrSocketPathTooLong if path is
// longer than MaxSocketPathLen bytes.
func CheckSocketPath(path string) error {
	if len(path) > MaxSocketPathLen {
		return fmt.Errorf("%w: %q is %d bytes, the limit is %d; choose a shorter path with --socket or $%s",
			ErrSocketPathTooLong, path, len(path), MaxSocketPathLen, EnvSocket)
	}
	return nil
}

// RecordDir returns the directory, next to the socket, where mcpd records
// the processes of its running children, so that the next mcpd on the same
// socket can kill what a killed one left behind: mcpd.sock → mcpd.sock.procs
// (the socket's whole name, so that two sockets never share records).
func RecordDir(socketPath string) string {
	return socketPath + ".procs"
}

// ConfigPath returns the path of the config file. The first of these that is
// set wins:
//
//  1. flag (the --config flag; "" when not given);
//  2. $MCPD_CONFIG;
//  3. $XDG_CONFIG_HOME/mcpd/config.json (only when XDG_CONFIG_HOME is absolute);
//  4. ~/.config/mcpd/config.json.
//
// A path from the flag or $MCPD_CONFIG is returned as given (relative paths
// stay relative to the working directory). If the home directory cannot be
// determined, step 4 yields the relative path .config/mcpd/config.json.
func ConfigPath(flag string) string {
	if flag != "" {
		return flag
	}
	if p := os.Getenv(EnvConfig); p != "" {
		return p
	}
	if ch := os.Getenv(EnvXDGConfigHome); filepath.IsAbs(ch) {
		return filepath.Join(ch, "mcpd", "config.json")
	}
	home, _ := os.UserHomeDir() // "" on error gives the relative fallback
	return filepath.Join(home, ".config", "mcpd", "config.json")
}

// EnsureSocketDir creates dir (and its parents) with mode 0700 if it does not
// exist. If it exists it must be a real directory (not a symlink), owned by
// the effective uid, with mode exactly 0700; otherwise the returned error
// names the path, what was found and what to do. Mode 0700 on the directory
// closes the window between listen(2) and chmod(2) of the socket.
func EnsureSocketDir(dir string) error {
	fi, err := os.Lstat(dir)
	if errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("create socket directory %q: %w", dir, err)
		}
		// MkdirAll applies the umask; force the exact mode we promise.
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("create socket directory %q: %w", dir, err)
		}
		fi, err = os.Lstat(dir)
	}
	if err != nil {
		return fmt.Errorf("check socket directory %q: %w", dir, err)
	}
	return checkSocketDir(dir, fi)
}

// FileOwner returns the uid owning fi, and whether it could be determined
// (not on every platform).
func FileOwner(fi os.FileInfo) (int, bool) { return fileOwner(fi) }

func checkSocketDir(dir string, fi os.FileInfo) error {
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		return fmt.Errorf("socket directory %q is a symlink; it must be a real directory: remove it, or choose another socket path with --socket or $%s", dir, EnvSocket)
	case !fi.IsDir():
		return fmt.Errorf("socket directory %q is not a directory (found a %s): remove it, or choose another socket path with --socket or $%s", dir, fileKind(fi.Mode()), EnvSocket)
	}
	euid := os.Geteuid()
	if uid, ok := fileOwner(fi); ok && uid != euid {
		return fmt.Errorf("socket directory %q is owned by uid %d, not by uid %d (us); it must be ours with mode 0700: remove it (it may belong to another user), or choose another socket path with --socket or $%s", dir, uid, euid, EnvSocket)
	}
	if m := fi.Mode() & (os.ModePerm | os.ModeSetuid | os.ModeSetgid | os.ModeSticky); m != 0o700 {
		return fmt.Errorf("socket directory %q has mode %s, want exactly 0700: run \"chmod 0700 %s\"", dir, modeString(m), dir)
	}
	return nil
}

// modeString formats permission bits the way chmod takes them (e.g. 0755,
// 1777 with the sticky bit).
func modeString(m os.FileMode) string {
	n := uint32(m.Perm())
	if m&os.ModeSetuid != 0 {
		n |= 0o4000
	}
	if m&os.ModeSetgid != 0 {
		n |= 0o2000
	}
	if m&os.ModeSticky != 0 {
		n |= 0o1000
	}
	return fmt.Sprintf("%04o", n)
}

// fileKind names the type of a non-directory file for error messages.
func fileKind(m os.FileMode) string {
	switch {
	case m.IsRegular():
		return "regular file"
	case m&os.ModeSocket != 0:
		return "socket"
	case m&os.ModeNamedPipe != 0:
		return "named pipe"
	case m&os.ModeDevice != 0:
		return "device"
	default:
		return "file of mode " + m.Type().String()
	}
}
