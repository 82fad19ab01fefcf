package socket

import (
	"bufio"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mcpd-dev/mcpd/internal/paths"
	"github.com/mcpd-dev/mcpd/internal/testing/tempdir"
)

func TestListenPermissions(t *testing.T) {
	dir := filepath.Join(tempdir.Short(t), "run", "mcpd")
	path := filepath.Join(dir, "mcpd.sock")
	l, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for _, c := range []struct {
		path string
		want os.FileMode
	}{{dir, 0o700}, {path, 0o600}} {
		fi, err := os.Stat(c.path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != c.want {
			t.Errorf("%s mode = %04o, want %04o", c.path, got, c.want)
		}
	}
	fi, _ := os.Lstat(path)
	if fi.Mode()&os.ModeSocket == 0 {
		t.Errorf("%s is not a socket: %v", path, fi.Mode())
	}
	l.Close()
	if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket file still there after Close: %v", err)
	}
}

func TestListenRefusesLiveSocket(t *testing.T) {
	path := filepath.Join(tempdir.Short(t), "s", "mcpd.sock")
	first, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()

	second, err := Listen(path)
	if err == nil {
		second.Close()
		t.Fatal("second Listen on a live socket succeeded")
	}
	if want := "another mcpd is already listening on " + path; err.Error() != want {
		t.Errorf("error = %q, want %q", err, want)
	}
	if !errors.Is(err, ErrAlreadyListening) {
		t.Errorf("error %v is not ErrAlreadyListening", err)
	}
	// The first listener still works.
	accepted := make(chan error, 1)
	go func() {
		c, err := first.Accept()
		if err == nil {
			c.Close()
		}
		accepted <- err
	}()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatalf("dial first listener: %v", err)
	}
	c.Close()
	if err := <-accepted; err != nil {
		t.Fatalf("accept: %v", err)
	}
}

func TestListenReplacesStaleSocket(t *testing.T) {
	path := filepath.Join(tempdir.Short(t), "s", "mcpd.sock")
	if err := paths.EnsureSocketDir(filepath.Dir(path)); err != nil {
		t.Fatal(err)
	}
	// A socket file nobody listens on, as a killed daemon leaves behind.
	stale, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	stale.SetUnlinkOnClose(false)
	stale.Close()
	if _, err := os.Lstat(path); err != nil {
		t.Fatalf("stale socket file missing: %v", err)
	}

	l, err := Listen(path)
	if err != nil {
		t.Fatalf("Listen over a stale socket: %v", err)
	}
	defer l.Close()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	c.Close()
}

func TestListenRefuses(t *testing.T) {
	t.Run("not a socket", func(t *testing.T) {
		dir := filepath.Join(tempdir.Short(t), "s")
		if err := paths.EnsureSocketDir(dir); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "mcpd.sock")
		if err := os.WriteFile(path, []byte("keep me"), 0o600); err != nil {
			t.Fatal(err)
		}
		if l, err := Listen(path); err == nil {
			l.Close()
			t.Fatal("Listen over a regular file succeeded")
		} else if !strings.Contains(err.Error(), "not a socket") {
			t.Errorf("error = %v, want it to say the file is not a socket", err)
		}
		if b, _ := os.ReadFile(path); string(b) != "keep me" {
			t.Errorf("regular file was modified: %q", b)
		}
	})
	t.Run("path too long", func(t *testing.T) {
		path := filepath.Join(tempdir.Short(t), strings.Repeat("x", paths.MaxSocketPathLen), "mcpd.sock")
		if l, err := Listen(path); err == nil {
			l.Close()
			t.Fatal("Listen on an overlong path succeeded")
		} else if !errors.Is(err, paths.ErrSocketPathTooLong) {
			t.Errorf("error = %v, want ErrSocketPathTooLong", err)
		}
	})
	t.Run("directory too open", func(t *testing.T) {
		dir := filepath.Join(tempdir.Short(t), "s")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if l, err := Listen(filepath.Join(dir, "mcpd.sock")); err == nil {
			l.Close()
			t.Fatal("Listen in a 0755 directory succeeded")
		}
	})
}

// activationChild runs in a re-executed test binary: it plays a
// socket-activated daemon, reports the sockets it was passed, accepts one
// connection on each (API first), greets it with the socket's role, and
// exits.
func activationChild() int {
	if os.Getenv(envListenPID) == "self" {
		// systemd sets LISTEN_PID after fork; a test can only do it here.
		os.Setenv(envListenPID, strconv.Itoa(os.Getpid()))
	}
	a, err := Activated()
	leftover := os.Getenv(envListenPID) + os.Getenv(envListenFDs) + os.Getenv(envListenFDNames)
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	switch {
	case err != nil:
		w.WriteString("error " + err.Error() + "\n")
		return 0
	case leftover != "":
		w.WriteString("env not unset: " + leftover + "\n")
		return 0
	case a.API == nil && a.HTTP == nil:
		w.WriteString("not activated\n")
		return 0
	}
	defer a.Close()
	report := "activated"
	var lns []net.Listener
	var roles []string
	if a.API != nil {
		lns, roles = append(lns, a.API), append(roles, "api")
	}
	if a.HTTP != nil {
		l, err := net.FileListener(a.HTTP)
		if err != nil {
			w.WriteString("http fd: " + err.Error() + "\n")
			return 0
		}
		defer l.Close()
		lns, roles = append(lns, l), append(roles, "http")
	}
	for i, l := range lns {
		c, err := l.Accept()
		if err != nil {
			w.WriteString("accept " + err.Error() + "\n")
			return 0
		}
		c.Write([]byte("hello " + roles[i] + "\n"))
		c.Close()
		report += " " + roles[i]
	}
	w.WriteString(report + "\n")
	return 0
}

// passedSocket is a listening socket for a child: network "unix" (in a
// fresh directory) or "tcp" (on loopback), its address, and the file the
// child inherits.
func passedSocket(t *testing.T, network string) (addr string, f *os.File) {
	t.Helper()
	var l interface {
		net.Listener
		File() (*os.File, error)
	}
	var err error
	if network == "unix" {
		l, err = net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(tempdir.Short(t), "a.sock"), Net: "unix"})
	} else {
		l, err = net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	if f, err = l.File(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return l.Addr().String(), f
}

func TestActivated(t *testing.T) {
	tests := []struct {
		name      string
		listenPID string
		listenFDs string
		fdNames   string
		sockets   []string // networks of the passed sockets, from fd 3
		want      string
	}{
		{"activated", "self", "1", "mcpd.sock", []string{"unix"}, "activated api"},
		{"unnamed", "self", "1", "", []string{"unix"}, "activated api"},
		{"api and http", "self", "2", "api:http", []string{"unix", "tcp"}, "activated api http"},
		{"http first", "self", "2", "http:api", []string{"tcp", "unix"}, "activated api http"},
		{"http only", "self", "1", "http", []string{"tcp"}, "activated http"},
		{"other pid", "1", "1", "", []string{"unix"}, "not activated"},
		{"two unnamed", "self", "2", "mcpd.socket:mcpd.socket", []string{"unix", "tcp"},
			"error socket activation: two sockets for the API (fd 4 is \"mcpd.socket\"); name them FileDescriptorName=api and FileDescriptorName=http"},
		{"two http", "self", "2", "http:http", []string{"tcp", "tcp"}, "error socket activation: two sockets named \"http\""},
		{"three fds", "self", "3", "", []string{"unix"}, "error socket activation: LISTEN_FDS=\"3\", want 1 or 2 sockets (\"api\" and \"http\")"},
		{"unset", "", "", "", []string{"unix"}, "not activated"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var addrs []string
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			for _, network := range tt.sockets {
				addr, f := passedSocket(t, network)
				addrs = append(addrs, network+" "+addr)
				cmd.ExtraFiles = append(cmd.ExtraFiles, f) // fd 3, 4, ...
			}
			cmd.Env = append(os.Environ(), envChild+"=activation", envListenFDNames+"="+tt.fdNames)
			if tt.listenPID != "" {
				cmd.Env = append(cmd.Env, envListenPID+"="+tt.listenPID, envListenFDs+"="+tt.listenFDs)
			}
			var out strings.Builder
			cmd.Stdout = &out
			cmd.Stderr = os.Stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			roles, activated := strings.CutPrefix(tt.want, "activated")
			var greetings []string
			if activated {
				greetings = greet(t, cmd, addrs)
			} else {
				roles = ""
			}
			if err := cmd.Wait(); err != nil {
				t.Fatalf("child: %v", err)
			}
			if got := strings.TrimSpace(out.String()); got != tt.want {
				t.Errorf("child reported %q, want %q", got, tt.want)
			}
			for _, role := range strings.Fields(roles) {
				if !slices.Contains(greetings, "hello "+role+"\n") {
					t.Errorf("greetings through the activated sockets = %q, want one from %s", greetings, role)
				}
			}
		})
	}
}

// greet dials the child's sockets, "NETWORK ADDRESS" each, in the order
// it accepts them (the API socket, the unix one here, first) and returns
// their greetings.
func greet(t *testing.T, cmd *exec.Cmd, addrs []string) []string {
	t.Helper()
	slices.SortFunc(addrs, func(a, b string) int { return strings.Compare(b, a) }) // "unix …" before "tcp …"
	var greetings []string
	for _, a := range addrs {
		network, addr, _ := strings.Cut(a, " ")
		c, err := net.Dial(network, addr)
		if err != nil {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatal(err)
		}
		g, _ := bufio.NewReader(c).ReadString('\n')
		c.Close()
		greetings = append(greetings, g)
	}
	return greetings
}
