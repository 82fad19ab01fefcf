package config

import (
	"fmt"
	"strings"
)

// expand replaces ${NAME}, ${NAME:-default} and ${env:NAME} in s with values
// from lookup, and "$${" with a literal "${". Any other "$" is kept. The
// default is literal text (it is not expanded again) and ends at the first
// "}". See the package documentation for the rules users see.
func expand(s string, lookup func(string) (string, bool)) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], "$${"):
			b.WriteString("${")
			i += 3
		case strings.HasPrefix(s[i:], "${"):
			end := strings.IndexByte(s[i+2:], '}')
			if end < 0 {
				return "", fmt.Errorf(`unterminated "${" in %q`, s)
			}
			ref := s[i : i+2+end+1]
			v, err := resolveRef(ref, s[i+2:i+2+end], lookup)
			if err != nil {
				return "", err
			}
			b.WriteString(v)
			i += len(ref)
		default:
			b.WriteByte(s[i])
			i++
		}
	}
	return b.String(), nil
}

// resolveRef resolves the body of one ${...} reference; ref is the whole
// reference for error messages.
func resolveRef(ref, body string, lookup func(string) (string, bool)) (string, error) {
	name, def, hasDef := strings.Cut(body, ":-")
	if strings.HasPrefix(name, "input:") {
		return "", fmt.Errorf("%q: VS Code input variables are not supported; use an environment variable", ref)
	}
	name = strings.TrimPrefix(name, "env:")
	if !validVarName(name) {
		return "", fmt.Errorf("invalid variable reference %q", ref)
	}
	v, ok := lookup(name)
	switch {
	case hasDef && v == "":
		// ${NAME:-default}: the default applies when NAME is unset or empty,
		// as in the shell.
		return def, nil
	case !ok:
		return "", fmt.Errorf("${%s} is not set (set it in mcpd's environment, e.g. in %s under systemd, or give a default: ${%s:-default})", name, EnvFileHint, name)
	}
	return v, nil
}

// EnvFileHint is where the systemd unit reads mcpd's environment from
// (deploy/systemd/mcpd.service: EnvironmentFile=-%h/.config/mcpd/env).
const EnvFileHint = "~/.config/mcpd/env"

// validVarName reports whether name is a portable environment variable name:
// a letter or "_" followed by letters, digits and "_".
func validVarName(name string) bool {
	if name == "" {
		return false
	}
	for i, r := range name {
		switch {
		case r == '_', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case i > 0 && r >= '0' && r <= '9':
		default:
			return false
		}
	}
	return true
}
