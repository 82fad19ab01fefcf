// Package sdnotify sends service state notifications (READY, RELOADING,
// STOPPING, STATUS) to systemd's $NOTIFY_SOCKET; off systemd it does nothing.
package sdnotify

import (
	"fmt"
	"net"
	"os"
	"strings"
)

// EnvSocket is the environment variable systemd sets for Type=notify services.
const EnvSocket = "NOTIFY_SOCKET"

// States understood by systemd (sd_notify(3)).
const (
	// Ready tells systemd that startup is finished: mcpd sends it once the
	// socket is bound and the config accepted, and again after each reload.
	Ready = "READY=1"
	// Stopping tells systemd that shutdown has begun.
	Stopping = "STOPPING=1"
	// Reloading tells systemd that a config reload has begun; it must be
	// followed by Ready when the reload is done.
	Reloading = "RELOADING=1"
)

// Status returns a STATUS= line carrying msg, shown by "systemctl status".
// Newlines in msg would start new assignments, so they are replaced by spaces.
func Status(msg string) string {
	return "STATUS=" + strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(msg)
}

// Notify sends state to the socket named by $NOTIFY_SOCKET. Several
// assignments may be sent at once, separated by newlines
// (Ready + "\n" + Status("ok")). When NOTIFY_SOCKET is unset or empty, Notify
// does nothing and returns nil. A name starting with "@" is a Linux abstract
// socket; the net package maps the leading "@" to the NUL byte.
func Notify(state string) error {
	name := os.Getenv(EnvSocket)
	if name == "" {
		return nil
	}
	addr := &net.UnixAddr{Name: name, Net: "unixgram"}
	conn, err := net.DialUnix("unixgram", nil, addr)
	if err != nil {
		return fmt.Errorf("sd_notify %q: %w", name, err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte(state)); err != nil {
		return fmt.Errorf("sd_notify %q: %w", name, err)
	}
	return nil
}
