package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// EnvPlan carries the helper's Plan (JSON) from mcpd to RunIfHelper; the
// helper removes it before it execs the server.
const EnvPlan = "MCPD_SANDBOX_PLAN"

// Environment variables set for a sandboxed server.
const (
	// EnvStateDir names the server's own writable state dir.
	EnvStateDir = "MCPD_STATE_DIR"
)

// Target is the server one Plan is made for.
type Target struct {
	// Name is the server's name; its state dir is named after it.
	Name string
	// Path is the resolved executable, Args its arguments (without argv[0]).
	Path string
	Args []string
	// Dir is the working directory; "" means mcpd's.
	Dir string
	// Env is the server's environment (PATH and HOME are read from it).
	Env []string
}

// Plan is one start of a sandboxed server: what the helper applies before
// it execs the server, and what mcpd itself does (cgroup limits) and
// reports. Only the exported fields without `json:"-"` reach the helper.
type Plan struct {
	Path string   `json:"path"`
	Argv []string `json:"argv"`
	// The Landlock rules: paths by kind (a directory rule covers what is
	// beneath it), and the TCP ports connect(2) may reach.
	ReadDirs   []string `json:"readDirs,omitempty"`
	ReadFiles  []string `json:"readFiles,omitempty"`
	WriteDirs  []string `json:"writeDirs,omitempty"`
	WriteFiles []string `json:"writeFiles,omitempty"`
	// ABI is the kernel's Landlock ABI; 0 applies no Landlock (best effort
	// on a kernel without it).
	ABI int `json:"abi"`
	// RestrictNet handles TCP bind and connect, allowing connect to Ports.
	RestrictNet bool     `json:"restrictNet,omitempty"`
	Ports       []uint16 `json:"ports,omitempty"`
	// OpenFiles is RLIMIT_NOFILE (soft and hard); 0 leaves it.
	OpenFiles int `json:"openFiles,omitempty"`

	// Limits are the cgroup limits mcpd applies (internal/procs).
	Limits Limits `json:"-"`
	// BestEffort is the policy's.
	BestEffort bool `json:"-"`
	// StateDir and TempDir are the server's own writable dirs.
	StateDir string `json:"-"`
	TempDir  string `json:"-"`
	// Missing are configured paths that do not exist (left out).
	Missing []string `json:"-"`
	// Unmet says what of the policy the kernel cannot honour; with
	// BestEffort the server starts without it.
	Unmet []string `json:"-"`
}

// Prepare makes the plan of one start of t under p: it creates the state
// and temp dirs, gathers the paths and checks what the kernel offers.
// Without BestEffort, a policy the kernel cannot honour is an error that
// says why.
func Prepare(p Policy, t Target) (*Plan, error) {
	state, err := StateDir(t.Name)
	if err != nil {
		return nil, err
	}
	tmp := filepath.Join(state, "tmp")
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return nil, fmt.Errorf("sandbox: create the state dir: %w", err)
	}
	pl := &Plan{
		Path: t.Path, Argv: append([]string{t.Path}, t.Args...),
		OpenFiles: p.Limits.OpenFiles, Limits: p.Limits, BestEffort: p.BestEffort,
		StateDir: state, TempDir: tmp,
	}
	env := envMap(t.Env)
	read := append(systemReadPaths(), runtimePaths(t, env)...)
	pl.classify(read, false, false)
	pl.classify(p.Read, false, true)
	pl.classify([]string{state}, true, false)
	pl.classify(systemWritePaths(), true, false)
	pl.classify(p.Write, true, true)
	if !p.Network.All {
		pl.RestrictNet, pl.Ports = true, p.Network.Ports
	}
	pl.ABI, pl.Unmet = checkKernel(pl.RestrictNet)
	if len(pl.Unmet) > 0 {
		if !p.BestEffort {
			return nil, fmt.Errorf("sandbox cannot be honoured: %s (set \"bestEffort\": true to run without it)", strings.Join(pl.Unmet, "; "))
		}
		if pl.ABI < minNetABI {
			pl.RestrictNet, pl.Ports = false, nil
		}
	}
	return pl, nil
}

// classify adds paths to the plan as directories or files; a path that
// does not exist is left out (and listed in Missing when configured).
func (pl *Plan) classify(paths []string, write, configured bool) {
	for _, path := range paths {
		fi, err := os.Stat(path)
		if err != nil {
			if configured {
				pl.Missing = append(pl.Missing, path)
			}
			continue
		}
		switch {
		case fi.IsDir() && write:
			pl.WriteDirs = appendNew(pl.WriteDirs, path)
		case fi.IsDir():
			pl.ReadDirs = appendNew(pl.ReadDirs, path)
		case write:
			pl.WriteFiles = appendNew(pl.WriteFiles, path)
		default:
			pl.ReadFiles = appendNew(pl.ReadFiles, path)
		}
	}
}

func appendNew(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// Wrap returns the command that starts the helper for this plan (mcpd
// itself) and the variables to add to the server's environment: its temp
// and state dirs and the plan for the helper.
func (pl *Plan) Wrap() (path string, env []string, err error) {
	data, err := json.Marshal(pl)
	if err != nil {
		return "", nil, fmt.Errorf("sandbox: encode plan: %w", err)
	}
	env = []string{
		"TMPDIR=" + pl.TempDir,
		EnvStateDir + "=" + pl.StateDir,
		EnvPlan + "=" + string(data),
	}
	return "/proc/self/exe", env, nil
}

// Summary says in one line how the server is confined, and what best
// effort left out: "landlock ABI 7, network none, memory 256 MiB".
func (pl *Plan) Summary(cgroupNote string) string {
	var parts []string
	if pl.ABI > 0 {
		parts = append(parts, fmt.Sprintf("landlock ABI %d", pl.ABI))
		if pl.RestrictNet {
			parts = append(parts, "network "+Network{Ports: pl.Ports}.String())
		} else {
			parts = append(parts, "network all")
		}
	}
	l := pl.Limits
	if l.Memory > 0 {
		parts = append(parts, "memory "+FormatBytes(l.Memory))
	}
	if l.Pids > 0 {
		parts = append(parts, fmt.Sprintf("pids %d", l.Pids))
	}
	if l.CPU > 0 {
		parts = append(parts, fmt.Sprintf("cpu %g", l.CPU))
	}
	if l.OpenFiles > 0 {
		parts = append(parts, fmt.Sprintf("openFiles %d", l.OpenFiles))
	}
	s := strings.Join(parts, ", ")
	unmet := pl.Unmet
	if cgroupNote != "" {
		unmet = append(unmet[:len(unmet):len(unmet)], cgroupNote)
	}
	if len(unmet) > 0 {
		s += "; best effort, not applied: " + strings.Join(unmet, "; ")
	}
	return strings.TrimPrefix(s, "; ")
}

// StateDir is the server's own state dir: $XDG_STATE_HOME/mcpd/servers/NAME
// (~/.local/state when XDG_STATE_HOME is not set).
func StateDir(name string) (string, error) {
	base := os.Getenv("XDG_STATE_HOME")
	if base == "" || !filepath.IsAbs(base) {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("sandbox: no state dir: %w", err)
		}
		base = filepath.Join(home, ".local", "state")
	}
	if name == "" || strings.ContainsAny(name, "/\x00") || name == "." || name == ".." {
		return "", errors.New("sandbox: invalid server name for a state dir")
	}
	return filepath.Join(base, "mcpd", "servers", name), nil
}

func envMap(env []string) map[string]string {
	m := make(map[string]string, len(env))
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}
