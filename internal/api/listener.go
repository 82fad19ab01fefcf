package api

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/mcpd-dev/mcpd/internal/paths"
)

// probeTimeout bounds the dial that decides whether an existing socket file
// belongs to a live daemon.
const probeTimeout = 2 * time.Second

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
			return nil, fmt.Errorf("another mcpd is already listening on %s", path)
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
		return fmt.Errorf("another mcpd is already listening on %s", path)
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

// ActivationListener returns the listening socket passed by systemd socket
// activation, and true, when LISTEN_PID is this process and LISTEN_FDS is 1
// (the socket is then fd 3). It returns (nil, false, nil) when mcpd was not
// socket-activated. The LISTEN_* variables are removed from the environment
// in every case, so that children never see them.
func ActivationListener() (net.Listener, bool, error) {
	pid, fds := os.Getenv(envListenPID), os.Getenv(envListenFDs)
	// sd_listen_fds(3): "unset_environment ... LISTEN_PID, LISTEN_FDS and
	// LISTEN_FDNAMES will be unset", so they are not inherited by children.
	os.Unsetenv(envListenPID)
	os.Unsetenv(envListenFDs)
	os.Unsetenv(envListenFDNames)
	if pid == "" || fds == "" {
		return nil, false, nil
	}
	// sd_listen_fds(3): "If the LISTEN_PID variable does not match the
	// process ID of the current process, the function will return 0", since
	// the variables were meant for another process.
	if p, err := strconv.Atoi(pid); err != nil || p != os.Getpid() {
		return nil, false, nil
	}
	n, err := strconv.Atoi(fds)
	if err != nil || n != 1 {
		return nil, false, fmt.Errorf("socket activation: LISTEN_FDS=%q, want exactly 1 socket", fds)
	}
	syscall.CloseOnExec(listenFDsStart)
	f := os.NewFile(listenFDsStart, "mcpd.sock")
	defer f.Close() // FileListener dups the descriptor
	l, err := net.FileListener(f)
	if err != nil {
		return nil, false, fmt.Errorf("socket activation: use fd %d: %w", listenFDsStart, err)
	}
	return l, true, nil
}
