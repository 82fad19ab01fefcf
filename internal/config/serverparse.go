package config

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
)

// server parses one server. Its problems are recorded and summed up in
// Invalid; it reports false only for a name that cannot be used at all.
func (p *parser) server(mapKey, name string, raw json.RawMessage) (Server, bool) {
	if !p.checkName(mapKey, name) {
		return Server{}, false
	}
	nerr := len(p.errs)
	s := Server{
		Name:            name,
		Protocol:        DefaultProtocol,
		Restart:         DefaultRestart,
		ShutdownGrace:   DefaultShutdownGrace,
		DiscoverTimeout: DefaultDiscoverTimeout,
		StdinTimeout:    DefaultStdinTimeout,
	}
	if members, ok := p.object(raw, name, "", ""); ok {
		p.members(&s, members)
	}
	s.Invalid = summary(p.errs[nerr:])
	return s, true
}

// members reads the keys of server s. Variables of a disabled server are
// checked, not expanded: an unset one is no problem until it is enabled.
func (p *parser) members(s *Server, members []member) {
	name := s.Name
	p.noExpand = false
	for _, m := range members {
		if m.key == "disabled" && Kind(m.val) == "boolean" {
			p.noExpand = bytes.Equal(bytes.TrimSpace(m.val), []byte("true"))
		}
	}
	defer func() { p.noExpand = false }()
	present := map[string]bool{}
	for _, m := range members {
		present[m.key] = true
		if !slices.Contains(serverKeys, m.key) {
			p.fail(name, "", "unknown key %q%s", m.key, suggest(m.key, serverKeys))
			continue
		}
		if p.remoteKey(s, m.key, m.val) || p.shareKey(s, m.key, m.val) { // remote.go, share.go
			continue
		}
		switch k := m.key; k {
		case "command":
			if v, ok := p.str(name, k, m.val); ok {
				s.Command = p.command(name, v)
			}
		case "args":
			s.Args = p.args(name, m.val)
		case "env":
			s.Env = p.env(name, m.val)
		case "cwd":
			if v, ok := p.str(name, k, m.val); ok {
				s.Cwd = p.cwd(name, v)
			}
		case "protocol":
			s.Protocol = p.enum(name, k, m.val, protocols, s.Protocol)
		case "restart":
			s.Restart = p.enum(name, k, m.val, restarts, s.Restart)
		case "autostart":
			s.Autostart = p.boolean(name, k, m.val)
		case "disabled":
			s.Disabled = p.boolean(name, k, m.val)
		case "requestTimeout":
			s.RequestTimeout = p.duration(name, k, m.val, s.RequestTimeout)
		case "shutdownGrace":
			s.ShutdownGrace = p.duration(name, k, m.val, s.ShutdownGrace)
		case "discoverTimeout":
			s.DiscoverTimeout = p.duration(name, k, m.val, s.DiscoverTimeout)
		case "stdinTimeout":
			s.StdinTimeout = p.duration(name, k, m.val, s.StdinTimeout)
		case "maxLineSize":
			s.MaxLineSize = p.positiveInt(name, k, m.val)
		case "cache":
			s.Cache = p.cachePolicy(name, k, m.val)
		case "roots":
			p.roots(s, name, m.val)
		case "sampling", "elicitation":
			p.forward(s, name, k, m.val)
		case keyClientCaps:
			p.clientCaps(s, name, m.val) // clientcaps.go
		case "idleTimeout":
			s.IdleTimeout = p.idleTimeout(name, k, m.val)
		case "sandbox":
			s.Sandbox = p.sandbox(name, m.val)
		case keyPin:
			s.Pin = p.pinMode(name, k, m.val) // pin.go
		default:
			p.fail(name, "", "unknown key %q%s", k, suggest(k, serverKeys))
		}
	}
	p.checkKind(s, present)  // remote.go
	p.checkShare(s, present) // share.go
}

func (p *parser) checkName(mapKey, name string) bool {
	if name == "" {
		p.fail("", mapKey, "server name must not be empty")
		return false
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '-') {
			p.failFile(name, "", `invalid name: use only letters, digits, "_", "." and "-"`)
			return false
		}
	}
	if strings.Contains(name, "__") {
		p.failFile(name, "", `invalid name: "__" is reserved as the separator of aggregated tool names`)
		return false
	}
	return true
}

// command expands v and resolves a relative path containing a slash against
// the config file's directory.
func (p *parser) command(server, v string) string {
	if v == "" {
		p.fail(server, "command", "must not be empty")
		return ""
	}
	x, ok := p.expand(server, "command", v)
	if !ok {
		return ""
	}
	if x == "" {
		p.fail(server, "command", "%q expands to an empty string", v)
		return ""
	}
	if p.noExpand {
		return x // never run as it is: resolved once enabled
	}
	if strings.ContainsRune(x, '/') && !filepath.IsAbs(x) {
		return p.resolve(server, "command", x)
	}
	return x
}

func (p *parser) boolean(server, key string, raw json.RawMessage) bool {
	if k := Kind(raw); k != "boolean" {
		p.fail(server, key, "want a boolean, got %s", k)
		return false
	}
	return bytes.Equal(bytes.TrimSpace(raw), []byte("true"))
}

func (p *parser) enum(server, key string, raw json.RawMessage, allowed []string, def string) string {
	v, ok := p.str(server, key, raw)
	if !ok {
		return def
	}
	if !slices.Contains(allowed, v) {
		p.fail(server, key, "invalid value %q, want one of %s", v, quoteList(allowed))
		return def
	}
	return v
}

func (p *parser) positiveInt(server, key string, raw json.RawMessage) int {
	if k := Kind(raw); k != "number" {
		p.fail(server, key, "want a positive integer, got %s", k)
		return 0
	}
	var n json.Number
	_ = json.Unmarshal(raw, &n)
	v, err := n.Int64()
	if err != nil || v <= 0 || int64(int(v)) != v {
		p.fail(server, key, "invalid value %s: want a positive integer", n)
		return 0
	}
	return int(v)
}
