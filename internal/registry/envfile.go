package registry

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// EnvFilePath is the file mcpd's systemd unit reads its environment from
// (EnvironmentFile=-%h/.config/mcpd/env; config.EnvFileHint): the servers'
// ${NAME} values. It is $HOME's, not $XDG_CONFIG_HOME's, as the unit's %h.
func EnvFilePath() (string, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("mcpd's env file: %w", err)
	}
	return filepath.Join(home, ".config", "mcpd", "env"), nil
}

// SetEnv sets the variables vars in the env file at path, one NAME=value a
// line as systemd's EnvironmentFile reads it: a line setting one of them is
// replaced, the others are kept as they are, new ones are appended. The
// file (and its directory) are created private: 0600 (0700). changed lists
// the names whose value is new or different.
func SetEnv(path string, vars map[string]string) (changed []string, err error) {
	for name, v := range vars {
		if name == "" || strings.ContainsAny(name, "= \t\n#") {
			return nil, fmt.Errorf("env file %s: %q is not a variable name", path, name)
		}
		if strings.ContainsAny(v, "\n\r\x00") {
			return nil, fmt.Errorf("env file %s: the value of %s spans lines, which the file cannot hold", path, name)
		}
	}
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("env file: %w", err)
	}
	var out bytes.Buffer
	done := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(old))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		name, cur, ok := strings.Cut(strings.TrimSpace(line), "=")
		name = strings.TrimSpace(strings.TrimPrefix(name, "export "))
		if v, want := vars[name]; ok && want && !done[name] {
			done[name] = true
			if unquote(cur) != v {
				changed = append(changed, name)
			}
			fmt.Fprintf(&out, "%s=%s\n", name, quote(v))
			continue
		}
		out.WriteString(line + "\n")
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("env file %s: %w", path, err)
	}
	for _, name := range sortedKeys(vars) {
		if !done[name] {
			changed = append(changed, name)
			fmt.Fprintf(&out, "%s=%s\n", name, quote(vars[name]))
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("env file: %w", err)
	}
	if err := writeFileAtomic(path, out.Bytes(), 0o600); err != nil {
		return nil, fmt.Errorf("env file: %w", err)
	}
	return changed, nil
}

// quote writes v so that systemd reads it back unchanged: as it is when
// that is safe, else in double quotes with \ and " escaped.
func quote(v string) string {
	if v == strings.TrimSpace(v) && !strings.ContainsAny(v, `"'\$`) {
		return v
	}
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(v) + `"`
}

// unquote undoes quote.
func unquote(v string) string {
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		return strings.NewReplacer(`\\`, `\`, `\"`, `"`).Replace(v[1 : len(v)-1])
	}
	return v
}
