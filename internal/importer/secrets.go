package importer

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/mcpd-dev/mcpd/internal/secrets"
)

// Literal secrets in the host configs that config import and connect read:
// an env value or a header value, written in the clear, under a key that
// names a credential. With --move-secrets they go to the secret store
// (internal/secrets) and mcpd's config gets ${secret:NAME} in their place;
// without it, each is named in a line suggesting the flag. A value is never
// printed.
//
// A key names a credential when, upper-cased with "-" read as "_", it
//
//   - ends in TOKEN, _KEY, APIKEY or _PAT, or
//   - contains SECRET, PASSWORD or PASSWD,
//
// or is the Authorization or Proxy-Authorization header. A value is
// literal when it is not empty, holds no ${...} reference and is not a
// bare $NAME (which some hosts expand; so is "Bearer $NAME").
//
// The secret's name is SERVER_KEY: the mcpd server's name, "_", the key
// with every character a name may not hold made "_" (github_GITHUB_TOKEN,
// notion_Authorization). A name already stored with the same value is
// used again; one stored with another value is skipped for SERVER_KEY_2,
// _3, and so on.

// isSecretKey reports whether an env or header key names a credential.
func isSecretKey(key string) bool {
	k := strings.ToUpper(strings.ReplaceAll(key, "-", "_"))
	switch k {
	case "AUTHORIZATION", "PROXY_AUTHORIZATION":
		return true
	}
	for _, suffix := range []string{"TOKEN", "_KEY", "APIKEY", "_PAT"} {
		if strings.HasSuffix(k, suffix) {
			return true
		}
	}
	for _, part := range []string{"SECRET", "PASSWORD", "PASSWD"} {
		if strings.Contains(k, part) {
			return true
		}
	}
	return false
}

// bareVar is a value that names an environment variable the way some
// hosts expand it: $NAME.
var bareVar = regexp.MustCompile(`^\$[A-Za-z_][A-Za-z0-9_]*$`)

// isLiteral reports whether v, the value of key, is written in the clear.
func isLiteral(key, v string) bool {
	_, cred := authScheme(key, v)
	return strings.TrimSpace(v) != "" && !strings.Contains(v, "${") && !bareVar.MatchString(cred)
}

// authScheme splits an Authorization value "Bearer abc" into its scheme
// ("Bearer ") and credentials ("abc"); a value without a scheme is all
// credentials.
func authScheme(key, v string) (scheme, cred string) {
	k := strings.ToUpper(key)
	if k != "AUTHORIZATION" && k != "PROXY-AUTHORIZATION" {
		return "", v
	}
	s, rest, ok := strings.Cut(v, " ")
	if !ok || s == "" || strings.TrimSpace(rest) == "" {
		return "", v
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return "", v
		}
	}
	return s + " ", strings.TrimSpace(rest)
}

// secretBaseName is the name a server's key's secret is stored under,
// before any _2 suffix.
func secretBaseName(server, key string) string {
	b := []byte(server + "_" + key)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			b[i] = '_'
		}
	}
	if len(b) > 120 { // room for a _NN suffix within 128
		b = b[:120]
	}
	return string(b)
}

// SecretMover moves the literal secrets of the servers one run imports.
type SecretMover struct {
	// move is --move-secrets; dryRun plans the names and stores nothing.
	move, dryRun bool
	st           *secrets.Store // opened at the first secret; nil before
	// taken are the names this run uses, with their values: stored
	// already, or to store.
	taken map[string]string
	// pending are the names to store, in order.
	pending []string
	// seen are the literal values found, for Redact.
	seen []string
	open func() *secrets.Store
}

// NewSecretMover returns the mover of one run: move is --move-secrets,
// dryRun plans the names and stores nothing, open opens the secret store
// at the first secret.
func NewSecretMover(move, dryRun bool, open func() *secrets.Store) *SecretMover {
	return &SecretMover{move: move, dryRun: dryRun, taken: map[string]string{}, open: open}
}

func (mv *SecretMover) store() *secrets.Store {
	if mv.st == nil {
		mv.st = mv.open()
	}
	return mv.st
}

// Close releases the store, if opened.
func (mv *SecretMover) Close() {
	if mv.st != nil {
		mv.st.Close()
	}
}

// Apply finds the literal secrets of s, the mcpd server named server, and
// with move replaces each by its ${secret:NAME}. It returns one line per
// secret for the user (ref names the server), none holding a value.
func (mv *SecretMover) Apply(ctx context.Context, ref, server string, s *Server) ([]string, error) {
	var lines []string
	do := func(what string, m map[string]string) error {
		for _, k := range slices.Sorted(mapKeys(m)) {
			v := m[k]
			if !isSecretKey(k) || !isLiteral(k, v) {
				continue
			}
			mv.seen = append(mv.seen, v)
			if !mv.move {
				lines = append(lines, fmt.Sprintf("%s: %s %q is a literal secret, copied as it is into mcpd's config; --move-secrets stores it with mcpdctl secret and writes ${secret:%s} instead",
					ref, what, k, secretBaseName(server, k)))
				continue
			}
			scheme, cred := authScheme(k, v)
			name, err := mv.nameFor(ctx, secretBaseName(server, k), cred)
			if err != nil {
				return fmt.Errorf("%s: %s %q: %w", ref, what, k, err)
			}
			m[k] = scheme + "${secret:" + name + "}"
			verb := "moved to"
			if mv.dryRun {
				verb = "would move to"
			}
			lines = append(lines, fmt.Sprintf("%s: %s %q: literal secret %s ${secret:%s}", ref, what, k, verb, name))
		}
		return nil
	}
	if err := do("env", s.Env); err != nil {
		return nil, err
	}
	if err := do("header", s.Headers); err != nil {
		return nil, err
	}
	return lines, nil
}

// nameFor picks the name to store value under: base, else base_2, … the
// first one free or already holding value.
func (mv *SecretMover) nameFor(ctx context.Context, base, value string) (string, error) {
	for i := 1; ; i++ {
		name := base
		if i > 1 {
			name = fmt.Sprintf("%s_%d", base, i)
		}
		if v, ok := mv.taken[name]; ok {
			if v == value {
				return name, nil
			}
			continue
		}
		stored, err := mv.store().Get(ctx, name)
		switch {
		case errors.Is(err, secrets.ErrNotFound):
			mv.taken[name] = value
			mv.pending = append(mv.pending, name)
			return name, nil
		case err != nil:
			return "", err
		}
		mv.taken[name] = stored
		if stored == value {
			return name, nil
		}
	}
}

// Redact replaces in text (a diff of a host file, which holds them) each
// literal secret Apply found by "<secret>".
func (mv *SecretMover) Redact(text string) string {
	seen := slices.Clone(mv.seen)
	// The longer first: a value may hold another.
	slices.SortFunc(seen, func(a, b string) int { return len(b) - len(a) })
	for _, v := range seen {
		text = strings.ReplaceAll(text, v, "<secret>")
		if _, cred := authScheme("Authorization", v); cred != v && len(cred) >= 4 {
			text = strings.ReplaceAll(text, cred, "<secret>")
		}
	}
	return text
}

// Commit stores the secrets Apply moved (none in a dry run) and returns a
// line saying where, "" when there were none.
func (mv *SecretMover) Commit(ctx context.Context) (string, error) {
	if mv.dryRun || len(mv.pending) == 0 {
		return "", nil
	}
	for _, name := range mv.pending {
		if err := mv.store().Set(ctx, name, mv.taken[name]); err != nil {
			return "", err
		}
	}
	line := fmt.Sprintf("stored %s in %s", strings.Join(mv.pending, ", "), mv.store().Backend())
	mv.pending = nil
	return line, nil
}
