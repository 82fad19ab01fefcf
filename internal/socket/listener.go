package socket

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mcpd-dev/mcpd/internal/paths"
)

// probeTimeout bounds the dial that decides whether an existing socket file
// belongs to a live daemon.
const probeTimeout = 2 * time.Second

// ErrAlreadyListening is Listen's refusal of a socket another daemon
// answers on.
var ErrAlreadyListening = errors.New("another mcpd is already listening")

// Listen creates the API socket at path and listens on it:
//
//  1. the path must not exceed paths.MaxSocketPathLen bytes;
//  2. its directory is created with mode 0700, or must already be ours with
//     mode 0700 (paths.EnsureSocketDir);
//  3. an existing socket file is dialed: if a daemon answers, Listen refuses
//     ("another mcpd is already listening on PATH"); if nobody answers the
//     file is stale and is removed;
//  4. listen, then chmod 0600.
//
// Closing the returned listener removes the socket file.
func Listen(path string) (net.Listener, error) {
	if err := paths.CheckSocketPath(path); err != nil {
		return nil, err
	}
	if err := paths.EnsureSocketDir(filepath.Dir(path)); err != nil {
		return nil, err
	}
	if err := removeStale(path); err != nil {
		return nil, err
	}
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			// Another daemon bound the path between our probe and our bind.
			return nil, fmt.Errorf("%w on %s", ErrAlreadyListening, path)
		}
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	l.SetUnlinkOnClose(true)
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		return nil, fmt.Errorf("chmod socket %s: %w", path, err)
	}
	return l, nil
}

// removeStale removes the socket file at path if no daemon is listening on
// it. A live socket, or a file that is not a socket, is an error: a live
// socket is never replaced, and mcpd never deletes a file it did not make.
func removeStale(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("check socket %s: %w", path, err)
	}
	if fi.Mode()&os.ModeSocket == 0 {
		return fmt.Errorf("%s exists and is not a socket; remove it or choose another path with --socket", path)
	}
	conn, err := net.DialTimeout("unix", path, probeTimeout)
	if err == nil {
		conn.Close()
		return fmt.Errorf("%w on %s", ErrAlreadyListening, path)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("probe existing socket %s: %w", path, err)
	}
	// Nobody accepts on it: the file was left behind by a daemon that died.
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove stale socket %s: %w", path, err)
	}
	return nil
}

// Environment variables of the systemd socket-activation protocol
// (sd_listen_fds(3)).
const (
	envListenPID     = "LISTEN_PID"
	envListenFDs     = "LISTEN_FDS"
	envListenFDNames = "LISTEN_FDNAMES"
	// listenFDsStart is the first passed file descriptor, SD_LISTEN_FDS_START.
	listenFDsStart = 3
)

// Names a socket unit gives its sockets (FileDescriptorName=), which
// systemd passes in LISTEN_FDNAMES.
const (
	FDNameAPI  = "api"  // the API socket
	FDNameHTTP = "http" // the HTTP face's socket
)

// Activation is what systemd socket activation passed mcpd.
type Activation struct {
	// API is the API socket; nil when none was passed.
	API net.Listener
	// HTTP is the HTTP face's listening socket; nil when none was passed.
	// The caller makes listeners of it with net.FileListener (each one a
	// dup of it, so that a listener can be closed and made again on a
	// reload) and closes it.
	HTTP *os.File
}

// Close closes what a is holding.
func (a Activation) Close() {
	if a.API != nil {
		a.API.Close()
	}
	if a.HTTP != nil {
		a.HTTP.Close()
	}
}

// Activated returns the sockets passed by systemd socket activation
// (sd_listen_fds(3)) when LISTEN_PID is this process: the socket named
// "http" is the HTTP face's, and the one named "api", or anything else
// (unnamed, or the unit's name, which systemd gives by default), is the
// API socket. One socket of each at most; more is an error. Without
// activation it returns the zero Activation. The LISTEN_* variables are
// removed from the environment in every case, so that children never see
// them.
func Activated() (Activation, error) {
	pid, fds, names := os.Getenv(envListenPID), os.Getenv(envListenFDs), os.Getenv(envListenFDNames)
	// sd_listen_fds(3): "unset_environment ... LISTEN_PID, LISTEN_FDS and
	// LISTEN_FDNAMES will be unset", so they are not inherited by children.
	os.Unsetenv(envListenPID)
	os.Unsetenv(envListenFDs)
	os.Unsetenv(envListenFDNames)
	if pid == "" || fds == "" {
		return Activation{}, nil
	}
	// sd_listen_fds(3): "If the LISTEN_PID variable does not match the
	// process ID of the current process, the function will return 0", since
	// the variables were meant for another process.
	if p, err := strconv.Atoi(pid); err != nil || p != os.Getpid() {
		return Activation{}, nil
	}
	n, err := strconv.Atoi(fds)
	if err != nil || n < 1 || n > 2 {
		return Activation{}, fmt.Errorf("socket activation: LISTEN_FDS=%q, want 1 or 2 sockets (%q and %q)", fds, FDNameAPI, FDNameHTTP)
	}
	var a Activation
	for i := range n {
		if err := a.take(listenFDsStart+i, fdName(names, i)); err != nil {
			a.Close()
			return Activation{}, err
		}
	}
	return a, nil
}

// take adds the passed socket fd, named name, to a.
func (a *Activation) take(fd int, name string) error {
	syscall.CloseOnExec(fd)
	if name == FDNameHTTP {
		if a.HTTP != nil {
			return fmt.Errorf("socket activation: two sockets named %q", FDNameHTTP)
		}
		a.HTTP = os.NewFile(uintptr(fd), name)
		return nil
	}
	if a.API != nil {
		return fmt.Errorf("socket activation: two sockets for the API (fd %d is %q); name them FileDescriptorName=%s and FileDescriptorName=%s", fd, name, FDNameAPI, FDNameHTTP)
	}
	f := os.NewFile(uintptr(fd), "mcpd.sock")
	defer f.Close() // FileListener dups the descriptor
	l, err := net.FileListener(f)
	if err != nil {
		return fmt.Errorf("socket activation: use fd %d: %w", fd, err)
	}
	a.API = l
	return nil
}

// fdName is the name of the i-th passed socket in LISTEN_FDNAMES, "" if
// it has none.
func fdName(names string, i int) string {
	list := strings.Split(names, ":")
	if i < len(list) {
		return list[i]
	}
	return ""
}
