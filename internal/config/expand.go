package config

import (
	"errors"
	"fmt"
	"strings"
)

// expand replaces ${NAME}, ${NAME:-default} and ${env:NAME} in s with values
// from lookup, and "$${" with a literal "${". Any other "$" is kept. The
// default is literal text (it is not expanded again) and ends at the first
// "}". See the package documentation for the rules users see.
//
// With secrets (the keys that may name secrets: args, env, headers), a
// ${secret:NAME} reference is kept as it is, to be resolved when the
// server starts (ResolveSecrets); the result then holds the references
// verbatim in the expanded text. So that a result holds "${secret:" only
// in a reference, a literal "${secret:" in such a value (written "$${secret:",
// or from a variable's value) is an error. Without secrets, a reference
// is an error.
func expand(s string, lookup func(string) (string, bool), secrets bool) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var b strings.Builder
	run := 0 // where the literal text since the last secret reference starts in b
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
			body := s[i+2 : i+2+end]
			if name, ok := strings.CutPrefix(body, secretPrefix); ok {
				if !secrets {
					return "", fmt.Errorf("%s: secrets are allowed only in args, env and headers", ref)
				}
				if !validSecretName(name) {
					return "", fmt.Errorf("invalid secret reference %q: a name is 1 to 128 of A-Z a-z 0-9 _ . -", ref)
				}
				if err := checkLiteral(b.String()[run:], secrets); err != nil {
					return "", err
				}
				b.WriteString(ref)
				run = b.Len()
				i += len(ref)
				continue
			}
			v, err := resolveRef(ref, body, lookup)
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
	if err := checkLiteral(b.String()[run:], secrets); err != nil {
		return "", err
	}
	return b.String(), nil
}

// secretPrefix starts the body of a secret reference.
const secretPrefix = "secret:"

// checkLiteral rejects a literal "${secret:" in the expanded text of a
// value that may hold secret references, where it would be read as one.
func checkLiteral(text string, secrets bool) error {
	if secrets && strings.Contains(text, "${"+secretPrefix) {
		return errors.New(`the value would hold a literal "${secret:", which mcpd would read as a secret reference`)
	}
	return nil
}

// validSecretName is internal/secrets.CheckName (config imports no
// runtime package): 1 to 128 of A-Z a-z 0-9 _ . -.
func validSecretName(name string) bool {
	if name == "" || len(name) > 128 {
		return false
	}
	for _, r := range name {
		switch {
		case r == '_', r == '.', r == '-', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		default:
			return false
		}
	}
	return true
}

// HasSecrets reports whether v, a value of args, env or headers of a
// parsed Server, holds ${secret:NAME} references.
func HasSecrets(v string) bool { return strings.Contains(v, "${"+secretPrefix) }

// SecretNames returns the names of the secrets v references, in order.
func SecretNames(v string) []string {
	var out []string
	_, _ = ResolveSecrets(v, func(name string) (string, error) {
		out = append(out, name)
		return "", nil
	})
	return out
}

// ResolveSecrets replaces the ${secret:NAME} references in v, a value of
// args, env or headers of a parsed Server, with get(NAME); the first error
// of get is returned as it is. A value without references is returned
// unchanged.
func ResolveSecrets(v string, get func(name string) (string, error)) (string, error) {
	if !HasSecrets(v) {
		return v, nil
	}
	var b strings.Builder
	for {
		i := strings.Index(v, "${"+secretPrefix)
		if i < 0 {
			break
		}
		end := strings.IndexByte(v[i:], '}') // Parse saw it terminated
		if end < 0 {
			break
		}
		b.WriteString(v[:i])
		x, err := get(v[i+2+len(secretPrefix) : i+end])
		if err != nil {
			return "", err
		}
		b.WriteString(x)
		v = v[i+end+1:]
	}
	b.WriteString(v)
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
