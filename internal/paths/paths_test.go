package paths

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestSocketPath(t *testing.T) {
	cwd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	tmpDefault := "/tmp/mcpd-" + strconv.Itoa(os.Geteuid()) + "/mcpd.sock"
	long := "/" + strings.Repeat("x", MaxSocketPathLen) // 105 bytes
	exact := "/" + strings.Repeat("x", MaxSocketPathLen-1)

	tests := []struct {
		name    string
		flag    string
		env     map[string]string
		want    string
		wantErr string
	}{
		{
			name: "flag wins over everything",
			flag: "/flag/s.sock",
			env:  map[string]string{EnvSocket: "/env/s.sock", EnvXDGRuntimeDir: "/run/user/1"},
			want: "/flag/s.sock",
		},
		{
			name: "MCPD_SOCKET wins over XDG_RUNTIME_DIR",
			env:  map[string]string{EnvSocket: "/env/s.sock", EnvXDGRuntimeDir: "/run/user/1"},
			want: "/env/s.sock",
		},
		{
			name: "XDG_RUNTIME_DIR",
			env:  map[string]string{EnvXDGRuntimeDir: "/run/user/1"},
			want: "/run/user/1/mcpd/mcpd.sock",
		},
		{
			name: "relative XDG_RUNTIME_DIR is ignored",
			env:  map[string]string{EnvXDGRuntimeDir: "run/user/1"},
			want: tmpDefault,
		},
		{
			name: "nothing set falls back to /tmp/mcpd-uid",
			want: tmpDefault,
		},
		{
			name: "relative flag is made absolute",
			flag: "rel/s.sock",
			want: filepath.Join(cwd, "rel/s.sock"),
		},
		{
			name: "relative MCPD_SOCKET is made absolute and cleaned",
			env:  map[string]string{EnvSocket: "./a/../s.sock"},
			want: filepath.Join(cwd, "s.sock"),
		},
		{
			name: "exactly the limit is accepted",
			flag: exact,
			want: exact,
		},
		{
			name:    "flag too long",
			flag:    long,
			wantErr: fmt.Sprintf("paths: socket path too long: %q is 105 bytes, the limit is 104; choose a shorter path with --socket or $MCPD_SOCKET", long),
		},
		{
			name:    "XDG_RUNTIME_DIR too long",
			env:     map[string]string{EnvXDGRuntimeDir: "/" + strings.Repeat("r", 90)},
			wantErr: "is 106 bytes, the limit is 104",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, k := range []string{EnvSocket, EnvXDGRuntimeDir} {
				t.Setenv(k, tt.env[k])
			}
			got, err := SocketPath(tt.flag)
			if tt.wantErr != "" {
				if err == nil {
					t.Fatalf("SocketPath(%q) = %q, want error containing %q", tt.flag, got, tt.wantErr)
				}
				if !errors.Is(err, ErrSocketPathTooLong) {
					t.Errorf("error %v does not wrap ErrSocketPathTooLong", err)
				}
				if !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("error = %q, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("SocketPath(%q): %v", tt.flag, err)
			}
			if got != tt.want {
				t.Errorf("SocketPath(%q) = %q, want %q", tt.flag, got, tt.want)
			}
		})
	}
}

func TestConfigPath(t *testing.T) {
	tests := []struct {
		name string
		flag string
		env  map[string]string
		want string
	}{
		{
			name: "flag wins",
			flag: "my.json",
			env:  map[string]string{EnvConfig: "/env.json", EnvXDGConfigHome: "/xdg", "HOME": "/home/u"},
			want: "my.json",
		},
		{
			name: "MCPD_CONFIG",
			env:  map[string]string{EnvConfig: "/env.json", EnvXDGConfigHome: "/xdg", "HOME": "/home/u"},
			want: "/env.json",
		},
		{
			name: "XDG_CONFIG_HOME",
			env:  map[string]string{EnvXDGConfigHome: "/xdg", "HOME": "/home/u"},
			want: "/xdg/mcpd/config.json",
		},
		{
			name: "relative XDG_CONFIG_HOME is ignored",
			env:  map[string]string{EnvXDGConfigHome: "xdg", "HOME": "/home/u"},
			want: "/home/u/.config/mcpd/config.json",
		},
		{
			name: "home fallback",
			env:  map[string]string{"HOME": "/home/u"},
			want: "/home/u/.config/mcpd/config.json",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, k := range []string{EnvConfig, EnvXDGConfigHome, "HOME"} {
				t.Setenv(k, tt.env[k])
			}
			if got := ConfigPath(tt.flag); got != tt.want {
				t.Errorf("ConfigPath(%q) = %q, want %q", tt.flag, got, tt.want)
			}
		})
	}
}

func TestEnsureSocketDir(t *testing.T) {
	euid := os.Geteuid()
	tests := []struct {
		name string
		// setup prepares the tree under root and returns the dir to check.
		setup   func(t *testing.T, root string) string
		wantErr string // "%s" is replaced by the dir
	}{
		{
			name:  "missing nested directory is created",
			setup: func(t *testing.T, root string) string { return filepath.Join(root, "a", "b", "mcpd") },
		},
		{
			name: "existing 0700 directory is accepted",
			setup: func(t *testing.T, root string) string {
				d := filepath.Join(root, "d")
				mustMkdir(t, d, 0o700)
				return d
			},
		},
		{
			name: "group-readable directory is refused",
			setup: func(t *testing.T, root string) string {
				d := filepath.Join(root, "d")
				mustMkdir(t, d, 0o750)
				return d
			},
			wantErr: `socket directory "%[1]s" has mode 0750, want exactly 0700: run "chmod 0700 %[1]s"`,
		},
		{
			name: "world-writable sticky directory is refused",
			setup: func(t *testing.T, root string) string {
				d := filepath.Join(root, "d")
				mustMkdir(t, d, 0o777|os.ModeSticky)
				return d
			},
			wantErr: `socket directory "%[1]s" has mode 1777, want exactly 0700: run "chmod 0700 %[1]s"`,
		},
		{
			name: "owner-only but not writable is refused",
			setup: func(t *testing.T, root string) string {
				d := filepath.Join(root, "d")
				mustMkdir(t, d, 0o500)
				return d
			},
			wantErr: `socket directory "%[1]s" has mode 0500, want exactly 0700`,
		},
		{
			name: "a regular file is refused",
			setup: func(t *testing.T, root string) string {
				f := filepath.Join(root, "f")
				if err := os.WriteFile(f, nil, 0o600); err != nil {
					t.Fatal(err)
				}
				return f
			},
			wantErr: `socket directory "%s" is not a directory (found a regular file): remove it, or choose another socket path with --socket or $MCPD_SOCKET`,
		},
		{
			name: "a symlink to a good directory is refused",
			setup: func(t *testing.T, root string) string {
				d := filepath.Join(root, "real")
				mustMkdir(t, d, 0o700)
				l := filepath.Join(root, "link")
				if err := os.Symlink(d, l); err != nil {
					t.Fatal(err)
				}
				return l
			},
			wantErr: `socket directory "%s" is a symlink; it must be a real directory: remove it, or choose another socket path with --socket or $MCPD_SOCKET`,
		},
		{
			name: "a directory owned by another user is refused",
			setup: func(t *testing.T, root string) string {
				if euid != 0 {
					t.Skip("needs root to chown a directory to another uid")
				}
				d := filepath.Join(root, "d")
				mustMkdir(t, d, 0o700)
				if err := os.Chown(d, 12345, -1); err != nil {
					t.Fatal(err)
				}
				return d
			},
			wantErr: fmt.Sprintf(`socket directory "%%s" is owned by uid 12345, not by uid %d (us); it must be ours with mode 0700: remove it (it may belong to another user), or choose another socket path with --socket or $MCPD_SOCKET`, euid),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := tt.setup(t, t.TempDir())
			err := EnsureSocketDir(dir)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("EnsureSocketDir(%q): %v", dir, err)
				}
				fi, err := os.Lstat(dir)
				if err != nil {
					t.Fatal(err)
				}
				if !fi.IsDir() || fi.Mode().Perm() != 0o700 {
					t.Errorf("after EnsureSocketDir: mode %v, want a 0700 directory", fi.Mode())
				}
				return
			}
			want := fmt.Sprintf(tt.wantErr, dir)
			if err == nil {
				t.Fatalf("EnsureSocketDir(%q) succeeded, want error %q", dir, want)
			}
			if !strings.HasPrefix(err.Error(), want) {
				t.Errorf("error = %q\nwant prefix %q", err, want)
			}
		})
	}
}

// TestEnsureSocketDirIdempotent checks that a directory EnsureSocketDir
// created passes its own checks on the next start.
func TestEnsureSocketDirIdempotent(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "x", "mcpd")
	for i := range 2 {
		if err := EnsureSocketDir(dir); err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
	}
}

func mustMkdir(t *testing.T, dir string, mode os.FileMode) {
	t.Helper()
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	// Chmod sets the exact bits, independent of the umask.
	if err := os.Chmod(dir, mode); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o700) }) // let TempDir cleanup remove it
}
