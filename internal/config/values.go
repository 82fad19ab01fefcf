package config

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
)

func (p *parser) cwd(server, v string) string {
	x, ok := p.expand(server, "cwd", v)
	if !ok || x == "" || p.noExpand {
		return x
	}
	if !filepath.IsAbs(x) {
		return p.resolve(server, "cwd", x)
	}
	return filepath.Clean(x)
}

// resolve joins rel to the directory of the config file.
func (p *parser) resolve(server, key, rel string) string {
	if p.base == "" {
		abs, err := filepath.Abs(p.path)
		if err != nil {
			p.fail(server, key, "resolve %q against the config directory: %v", rel, err)
			return ""
		}
		p.base = filepath.Dir(abs)
	}
	return filepath.Join(p.base, rel)
}

func (p *parser) args(server string, raw json.RawMessage) []string {
	if k := Kind(raw); k != "array" {
		p.fail(server, "args", "want an array of strings, got %s", k)
		return nil
	}
	elems, err := arrayElements(raw) // jsonscan.go
	if err != nil {
		p.fail(server, "args", "%v", err)
		return nil
	}
	out := make([]string, 0, len(elems))
	for i, e := range elems {
		key := "args[" + strconv.Itoa(i) + "]"
		v, ok := p.str(server, key, e)
		if !ok {
			continue
		}
		if x, ok := p.expandSecrets(server, key, v); ok {
			out = append(out, x)
		}
	}
	return out
}

func (p *parser) env(server string, raw json.RawMessage) map[string]string {
	members, ok := p.object(raw, server, "env", "")
	if !ok {
		return nil
	}
	out := make(map[string]string, len(members))
	for _, m := range members {
		if m.key == "" || strings.ContainsAny(m.key, "=\x00") {
			p.fail(server, "env", "invalid variable name %q", m.key)
			continue
		}
		key := "env." + m.key
		v, ok := p.str(server, key, m.val)
		if !ok {
			continue
		}
		if x, ok := p.expandSecrets(server, key, v); ok {
			out[m.key] = x
		}
	}
	return out
}

// expand expands the variables of v, the value of key; a secret
// reference is a problem.
func (p *parser) expand(server, key, v string) (string, bool) {
	return p.expandValue(server, key, v, false)
}

// expandSecrets is expand for the keys whose values may reference
// secrets (args, env, headers): the references are kept, to be resolved
// at start (ResolveSecrets).
func (p *parser) expandSecrets(server, key, v string) (string, bool) {
	return p.expandValue(server, key, v, true)
}

func (p *parser) expandValue(server, key, v string, secrets bool) (string, bool) {
	lookup := p.lookup
	if p.noExpand {
		lookup = func(string) (string, bool) { return "x", true }
	}
	x, err := expand(v, lookup, secrets)
	if p.noExpand && err == nil {
		return v, true
	}
	if err != nil {
		p.fail(server, key, "%v", err)
		return "", false
	}
	return x, true
}

func (p *parser) str(server, key string, raw json.RawMessage) (string, bool) {
	if k := Kind(raw); k != "string" {
		p.fail(server, key, "want a string, got %s", k)
		return "", false
	}
	v, err := decodeString(bytes.TrimSpace(raw)) // jsonscan.go
	if err != nil {
		p.fail(server, key, "%v", err)
		return "", false
	}
	return v, true
}
