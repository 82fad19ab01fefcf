// Package keyring runs a real Secret Service for tests: a private D-Bus
// session bus (dbus-daemon) with gnome-keyring-daemon on it, its login
// keyring created and unlocked with a known password, in a temporary home.
package keyring

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
)

// EnvRequire, set to 1, makes Start fail rather than skip when the
// programs are missing (CI installs them).
const EnvRequire = "MCPD_REQUIRE_KEYRING"

// Password unlocks the test keyring.
const Password = "mcpd-test-keyring"

// Keyring is a running session bus with a Secret Service.
type Keyring struct {
	// Addr is the bus address, for DBUS_SESSION_BUS_ADDRESS.
	Addr string
	// Home is the HOME the keyring daemon keeps its files in.
	Home string
}

// Env returns the environment entries that point a process at the bus.
func (k *Keyring) Env() []string {
	return []string{"DBUS_SESSION_BUS_ADDRESS=" + k.Addr}
}

// busConfig is a session bus without service activation, so that nothing
// but what the test starts is ever on it.
const busConfig = `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path=%s</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
`

// Start starts the bus and the keyring daemon, stopped (by process group)
// at the end of the test. It skips the test when dbus-daemon or
// gnome-keyring-daemon is missing, unless MCPD_REQUIRE_KEYRING=1.
func Start(t testing.TB) *Keyring {
	t.Helper()
	need(t, "gnome-keyring-daemon")
	k, run := startBus(t)
	gk := exec.Command("gnome-keyring-daemon", "--foreground", "--unlock", "--components=secrets")
	gk.Env = append(os.Environ(), "HOME="+k.Home, "XDG_DATA_HOME="+filepath.Join(k.Home, ".local", "share"),
		"XDG_RUNTIME_DIR="+run, "DBUS_SESSION_BUS_ADDRESS="+k.Addr, "DISPLAY=", "WAYLAND_DISPLAY=")
	gk.Stdin = strings.NewReader(Password)
	gk.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := gk.Start(); err != nil {
		t.Fatalf("gnome-keyring-daemon: %v", err)
	}
	t.Cleanup(func() { stop(gk) })
	if err := k.waitReady(10 * time.Second); err != nil {
		t.Fatalf("gnome-keyring-daemon: %v", err)
	}
	return k
}

// StartBus starts a session bus with no Secret Service on it.
func StartBus(t testing.TB) *Keyring {
	t.Helper()
	k, _ := startBus(t)
	return k
}

// need skips (or fails, under MCPD_REQUIRE_KEYRING=1) the test when prog
// is missing.
func need(t testing.TB, prog string) {
	t.Helper()
	if _, err := exec.LookPath(prog); err != nil {
		if os.Getenv(EnvRequire) == "1" {
			t.Fatalf("%s not found and %s=1: %v", prog, EnvRequire, err)
		}
		t.Skipf("%s not found (apt-get install gnome-keyring dbus dbus-x11 libsecret-tools): %v", prog, err)
	}
}

// startBus starts dbus-daemon in a temporary directory; it returns the
// keyring with its address and home, and the runtime directory.
func startBus(t testing.TB) (*Keyring, string) {
	t.Helper()
	need(t, "dbus-daemon")
	dir, err := os.MkdirTemp("", "mcpd-keyring-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	home, run := filepath.Join(dir, "home"), filepath.Join(dir, "run")
	for _, d := range []string{home, run} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	conf := filepath.Join(dir, "bus.conf")
	if err := os.WriteFile(conf, fmt.Appendf(nil, busConfig, filepath.Join(run, "bus")), 0o600); err != nil {
		t.Fatal(err)
	}
	bus := exec.Command("dbus-daemon", "--config-file="+conf, "--nofork", "--nopidfile", "--print-address=1")
	bus.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := bus.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := bus.Start(); err != nil {
		t.Fatalf("dbus-daemon: %v", err)
	}
	t.Cleanup(func() { stop(bus) })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("dbus-daemon printed no address: %v", err)
	}
	return &Keyring{Addr: strings.TrimSpace(line), Home: home}, run
}

// waitReady waits until the Secret Service is on the bus with a default
// (login) collection, without activating anything.
func (k *Keyring) waitReady(limit time.Duration) error {
	conn, err := dbus.Connect(k.Addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	deadline := time.Now().Add(limit)
	for {
		var owned bool
		var coll dbus.ObjectPath
		err := conn.BusObject().Call("org.freedesktop.DBus.NameHasOwner", 0, "org.freedesktop.secrets").Store(&owned)
		if err == nil && owned {
			err = conn.Object("org.freedesktop.secrets", "/org/freedesktop/secrets").
				Call("org.freedesktop.Secret.Service.ReadAlias", 0, "default").Store(&coll)
			if err == nil && coll != "/" {
				return nil
			}
		}
		if err == nil {
			err = errors.New("no default collection yet")
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the Secret Service did not come up within %s: %w", limit, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stop ends cmd's process group: SIGTERM, then SIGKILL after a second.
func stop(cmd *exec.Cmd) {
	pgid := cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Second):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-done
	}
}

// Lookup runs secret-tool lookup service mcpd name NAME (an outside
// reader) and returns what it printed.
func (k *Keyring) Lookup(ctx context.Context, name string) (string, error) {
	cmd := exec.CommandContext(ctx, "secret-tool", "lookup", "service", "mcpd", "name", name)
	cmd.Env = append(os.Environ(), "DBUS_SESSION_BUS_ADDRESS="+k.Addr)
	out, err := cmd.Output()
	return string(out), err
}

// Store runs secret-tool store with the attributes service=mcpd name=NAME.
func (k *Keyring) Store(ctx context.Context, name, value string) error {
	cmd := exec.CommandContext(ctx, "secret-tool", "store", "--label=test "+name, "service", "mcpd", "name", name)
	cmd.Env = append(os.Environ(), "DBUS_SESSION_BUS_ADDRESS="+k.Addr)
	cmd.Stdin = strings.NewReader(value)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("secret-tool store: %v: %s", err, out)
	}
	return nil
}

// Unlock unlocks the default keyring with Password, without a prompt,
// through gnome-keyring's own (unsupported) interface: the Secret Service
// API can only unlock with a prompt, which needs a display.
func (k *Keyring) Unlock(ctx context.Context) error {
	conn, err := dbus.Connect(k.Addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	ss := conn.Object("org.freedesktop.secrets", "/org/freedesktop/secrets")
	var out dbus.Variant
	var session, coll dbus.ObjectPath
	if err := ss.CallWithContext(ctx, "org.freedesktop.Secret.Service.OpenSession", 0, "plain", dbus.MakeVariant("")).Store(&out, &session); err != nil {
		return fmt.Errorf("open session: %w", err)
	}
	if err := ss.CallWithContext(ctx, "org.freedesktop.Secret.Service.ReadAlias", 0, "default").Store(&coll); err != nil {
		return fmt.Errorf("default collection: %w", err)
	}
	master := struct {
		Session     dbus.ObjectPath
		Parameters  []byte
		Value       []byte
		ContentType string
	}{session, nil, []byte(Password), "text/plain"}
	call := ss.CallWithContext(ctx, "org.gnome.keyring.InternalUnsupportedGuiltRiddenInterface.UnlockWithMasterPassword", 0, coll, master)
	if call.Err != nil {
		return fmt.Errorf("unlock: %w", call.Err)
	}
	return nil
}
