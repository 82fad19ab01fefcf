package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
)

// systemReads are what every sandboxed server may read: programs and
// libraries, the few files of /etc that name resolution, TLS and the
// dynamic loader read (not all of /etc: shadow, keys and tokens stay out),
// /proc (other processes' private entries are still guarded by Landlock's
// ptrace rules) and the parts of /sys runtimes read for CPUs and limits.
var systemReads = []string{
	"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
	"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
	"/etc/ssl", "/etc/ca-certificates", "/etc/ca-certificates.conf", "/etc/pki", "/etc/crypto-policies",
	"/etc/resolv.conf", "/etc/hosts", "/etc/host.conf", "/etc/nsswitch.conf", "/etc/gai.conf",
	"/etc/services", "/etc/protocols", "/etc/passwd", "/etc/group",
	"/etc/localtime", "/etc/timezone", "/etc/alternatives", "/etc/mime.types", "/etc/os-release",
	"/proc", "/sys/devices/system/cpu", "/sys/fs/cgroup",
}

// systemWrites are the device files every program may write.
var systemWrites = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"}

func systemReadPaths() []string  { return withTargets(systemReads) }
func systemWritePaths() []string { return withTargets(systemWrites) }

// launchers are the runtimes a server's command may be started through
// (npx runs node, uvx runs python): their installation is readable too.
var launchers = []string{"node", "npm", "npx", "python3", "uv", "uvx", "bun", "deno"}

// runtimePaths are what the server's own runtime reads: its working dir,
// the node_modules dirs node resolves modules from (the cwd's and its
// parents', wherever their symlinks lead), the installation of its command
// and of the launchers in its PATH, and the package caches of npm and uv.
func runtimePaths(t Target, env map[string]string) []string {
	var out []string
	dir := t.Dir
	if dir == "" {
		dir, _ = os.Getwd()
	}
	if dir != "" {
		out = append(out, dir)
		for d := dir; ; d = filepath.Dir(d) {
			if nm := filepath.Join(d, "node_modules"); exists(nm) {
				out = append(out, nm)
			}
			if d == filepath.Dir(d) {
				break
			}
		}
	}
	out = append(out, installDirs(t.Path)...)
	for _, l := range launchers {
		if p, err := lookPath(l, env["PATH"]); err == nil {
			out = append(out, installDirs(p)...)
		}
	}
	if home := env["HOME"]; filepath.IsAbs(home) {
		out = append(out, filepath.Join(home, ".npm"), filepath.Join(home, ".cache", "uv"),
			filepath.Join(home, ".local", "share", "uv"))
	}
	if c := env["npm_config_cache"]; filepath.IsAbs(c) {
		out = append(out, c)
	}
	return withTargets(out)
}

// installDirs are the installation of the program at path (and of what
// its symlinks lead to): the prefix above a bin dir ("/opt/node" for
// "/opt/node/bin/node"), else the program's own dir; never "/".
func installDirs(path string) []string {
	var out []string
	for _, p := range withTargets([]string{path}) {
		d := filepath.Dir(p)
		if filepath.Base(d) == "bin" && filepath.Dir(d) != "/" {
			d = filepath.Dir(d)
		}
		if d != "/" {
			out = append(out, d)
		}
	}
	return out
}

// withTargets returns paths followed by where those that are or pass
// through symlinks really lead (Landlock rules apply to the real files).
func withTargets(paths []string) []string {
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		out = append(out, p)
		if real, err := filepath.EvalSymlinks(p); err == nil && real != p {
			out = append(out, real)
		}
	}
	return out
}

// lookPath finds file in the PATH list path (mcpd's PATH when empty).
func lookPath(file, path string) (string, error) {
	if path == "" {
		return exec.LookPath(file)
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, file)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", os.ErrNotExist
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
