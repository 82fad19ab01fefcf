package config

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strings"
)

// Remote is a server reached over HTTP (keys "url", "type", "headers",
// "oauth") instead of a command.
type Remote struct {
	// URL is the MCP endpoint (http:// or https://), variables expanded;
	// for Type "sse", the event stream's URL.
	URL string
	// Type is "http" (Streamable HTTP, the default) or "sse" (the
	// 2024-11-05 HTTP+SSE transport).
	Type string
	// Headers are sent with every request, variables expanded in the
	// values. The values are secrets: never logged.
	Headers map[string]string
	// OAuth, when set, authorizes with OAuth (mcpdctl login NAME).
	OAuth *OAuth
}

// OAuth is the "oauth" object of a remote server: what mcpd's OAuth
// client uses instead of discovering it.
type OAuth struct {
	// ClientID is a pre-registered client id; "" registers dynamically.
	ClientID string
	// ClientSecret goes with ClientID (confidential clients); variables
	// expanded. A secret: never logged.
	ClientSecret string
	// Scopes requested at login; none: what the server asks for.
	Scopes []string
	// RedirectPort is the loopback port of the login's redirect URI; 0
	// picks a free one.
	RedirectPort int
}

// Remote server types (key "type"); "stdio" is a command server.
const (
	TypeStdio = "stdio"
	TypeHTTP  = "http"
	TypeSSE   = "sse"
)

// remoteKeys are the keys that only a remote server may have, and
// commandKeys those that only a command server may have.
var (
	remoteKeys  = []string{"url", "headers", "oauth"}
	commandKeys = []string{"command", "args", "env", "cwd", "stdinTimeout"}
	// managedHeaders are set by the HTTP transport itself.
	managedHeaders = []string{"mcp-session-id", "mcp-protocol-version", "mcp-method", "mcp-name",
		"last-event-id", "accept", "content-type", "content-length", "host", "connection", "transfer-encoding"}
)

// remoteKey reads a key of a remote server into s.Remote; it reports
// false for a key that is not one.
func (p *parser) remoteKey(s *Server, key string, raw json.RawMessage) bool {
	r := s.Remote
	if r == nil {
		r = &Remote{}
	}
	switch key {
	case "url":
		if v, ok := p.str(s.Name, key, raw); ok {
			r.URL = p.remoteURL(s.Name, v)
		}
	case "type":
		if v, ok := p.str(s.Name, key, raw); ok {
			switch v {
			case TypeStdio:
				return true // a command server, as VS Code writes it
			case TypeHTTP, TypeSSE:
				r.Type = v
			default:
				p.fail(s.Name, key, "invalid value %q, want one of %s", v, quoteList([]string{TypeStdio, TypeHTTP, TypeSSE}))
			}
		}
	case "headers":
		r.Headers = p.headers(s.Name, raw)
	case "oauth":
		r.OAuth = p.oauth(s.Name, raw)
	default:
		return false
	}
	s.Remote = r
	return true
}

func (p *parser) remoteURL(server, v string) string {
	x, ok := p.expand(server, "url", v)
	if !ok || p.noExpand {
		return x
	}
	u, err := url.Parse(x)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		p.fail(server, "url", "want an http:// or https:// URL")
		return ""
	}
	return x
}

func (p *parser) headers(server string, raw json.RawMessage) map[string]string {
	members, ok := p.object(raw, server, "headers", "")
	if !ok {
		return nil
	}
	out := make(map[string]string, len(members))
	for _, m := range members {
		key := "headers." + m.key
		if !validHeaderName(m.key) {
			p.fail(server, "headers", "invalid header name %q", m.key)
			continue
		}
		low := strings.ToLower(m.key)
		if slices.Contains(managedHeaders, low) || strings.HasPrefix(low, "mcp-param-") {
			p.fail(server, key, "set by mcpd's HTTP transport; remove it")
			continue
		}
		v, ok := p.str(server, key, m.val)
		if !ok {
			continue
		}
		x, ok := p.expandSecrets(server, key, v)
		if !ok {
			continue
		}
		if strings.ContainsAny(x, "\r\n\x00") {
			p.fail(server, key, "the value contains a line break or NUL") // the value itself is never shown
			continue
		}
		out[m.key] = x
	}
	return out
}

// validHeaderName: an HTTP token.
func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("!#$%&'*+-.^_`|~", c)) {
			return false
		}
	}
	return true
}

var oauthKeys = keysIn(InOAuth)

func (p *parser) oauth(server string, raw json.RawMessage) *OAuth {
	members, ok := p.object(raw, server, "oauth", "")
	if !ok {
		return nil
	}
	o := &OAuth{}
	for _, m := range members {
		key := "oauth." + m.key
		switch known(m.key, oauthKeys) {
		case "clientId":
			if v, ok := p.str(server, key, m.val); ok {
				o.ClientID, _ = p.expand(server, key, v)
			}
		case "clientSecret":
			if v, ok := p.str(server, key, m.val); ok {
				o.ClientSecret, _ = p.expand(server, key, v)
			}
		case "scopes":
			o.Scopes = p.scopes(server, key, m.val)
		case "redirectPort":
			if n := p.positiveInt(server, key, m.val); n > 65535 {
				p.fail(server, key, "invalid port %d: want 1 to 65535", n)
			} else {
				o.RedirectPort = n
			}
		default:
			p.fail(server, "oauth", "unknown key %q%s", m.key, suggest(m.key, oauthKeys))
		}
	}
	if o.ClientSecret != "" && o.ClientID == "" {
		p.fail(server, "oauth.clientSecret", "needs oauth.clientId")
	}
	return o
}

// scopes reads an array of scope strings (or one space-separated string).
func (p *parser) scopes(server, key string, raw json.RawMessage) []string {
	if Kind(raw) == "string" {
		v, _ := p.str(server, key, raw)
		return strings.Fields(v)
	}
	if Kind(raw) != "array" {
		p.fail(server, key, "want an array of strings, got %s", Kind(raw))
		return nil
	}
	elems, _ := arrayElements(raw) // jsonscan.go; raw is an array of the valid file
	var out []string
	for i, e := range elems {
		v, ok := p.str(server, fmt.Sprintf("%s[%d]", key, i), e)
		if !ok {
			continue
		}
		if v == "" || strings.ContainsAny(v, " \t\"\\") {
			p.fail(server, fmt.Sprintf("%s[%d]", key, i), "invalid scope %q", v)
			continue
		}
		out = append(out, v)
	}
	return out
}

// checkKind checks that s is either a command or a remote server, and
// that it has no key of the other kind; present are the keys it has.
func (p *parser) checkKind(s *Server, present map[string]bool) {
	if s.Remote == nil {
		if !present["command"] {
			p.fail(s.Name, "", "missing required key %q", "command")
		}
		return
	}
	switch {
	case present["command"] && present["url"]:
		p.fail(s.Name, "", "has both %q and %q: a server is either a command or a remote url", "command", "url")
		return
	case present["command"] && s.Remote.URL == "" && !present["headers"] && !present["oauth"]:
		p.fail(s.Name, "type", "%q is for a remote server with a %q; a command server is %q", s.Remote.Type, "url", TypeStdio)
		return
	case present["command"]:
		p.fail(s.Name, "", "has %q and the keys of a remote server (%s): a server is either a command or a remote url", "command", presentList(present, remoteKeys))
		return
	}
	if !present["url"] {
		p.fail(s.Name, "", "missing required key %q for a remote server of type %q", "url", cmpType(s.Remote.Type))
		return
	}
	var wrong []string
	for _, k := range commandKeys {
		if present[k] {
			wrong = append(wrong, k)
		}
	}
	sort.Strings(wrong)
	for _, k := range wrong {
		p.fail(s.Name, k, "only for command servers; this server has a url")
	}
	if s.Remote.Type == "" {
		s.Remote.Type = TypeHTTP
	}
	if s.Remote.OAuth != nil && hasHeader(s.Remote.Headers, "authorization") {
		p.fail(s.Name, "headers.Authorization", "set by OAuth; remove it or the \"oauth\" key")
	}
}

func presentList(present map[string]bool, keys []string) string {
	var out []string
	for _, k := range keys {
		if present[k] {
			out = append(out, k)
		}
	}
	return quoteList(out)
}

func cmpType(t string) string {
	if t == "" {
		return TypeHTTP
	}
	return t
}

func hasHeader(h map[string]string, name string) bool {
	for k := range h {
		if strings.EqualFold(k, name) {
			return true
		}
	}
	return false
}
