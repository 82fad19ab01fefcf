package config

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/mcpd-dev/mcpd/internal/profile"
)

// This file parses the top-level "profiles" map: per-client views of the
// servers, enforced by mcpd on every call made under a profile.
//
//	"profiles": {
//	  "coding": {
//	    "prefix": "on-collision",
//	    "github": {"tools": {"allow": ["get_*", "search_*"], "deny": ["*_secret"],
//	                         "overrides": {"search_code": {"description": "..."}}}},
//	    "fs": {}
//	  }
//	}
//
// A profile serves exactly the servers it names, each as its object says:
// "tools", "prompts" and "resources" each take "allow" and "deny" lists of
// globs ("*" matches any run of characters) over the server's own names
// (resources by URI, resource templates by URI template); without "allow"
// everything not denied is shown, and deny wins. "tools" also takes
// "overrides": by exact tool name, a "title" and/or "description" that
// replace the server's. A profile's "prefix" (a string, where a server's
// value is an object) is how a host serving several of its servers names
// tools and prompts: "always" (server__name, the default) or
// "on-collision" (a server named "prefix" can be in a profile that does
// not set it). A profile that names an unknown server, a bad glob or
// an override of a tool it hides is a problem of the file.

// keyProfiles is the top-level key of the profiles.
const keyProfiles = "profiles"

// ruleKinds are the keys of a profile's server object; listKeys those of
// one of its kinds.
var (
	ruleKinds = []string{"tools", "prompts", "resources"}
	listKeys  = []string{"allow", "deny", "overrides"}
)

// profiles parses the "profiles" map against the servers declared.
func (p *parser) profiles(raw json.RawMessage, servers []Server) profile.Set {
	members, ok := p.object(raw, "", keyProfiles, "")
	if !ok {
		return nil
	}
	names := make([]string, len(servers))
	for i, s := range servers {
		names[i] = s.Name
	}
	set := profile.Set{}
	for _, m := range members {
		key := keyProfiles + "." + m.key
		if !validProfileName(m.key) {
			p.fail("", key, `invalid profile name: use only letters, digits, "_", "." and "-"`)
			continue
		}
		if pr, ok := p.profile(key, m.key, m.val, names); ok {
			set[m.key] = pr
		}
	}
	return set
}

// validProfileName: a profile name goes into URL paths and gRPC metadata.
func validProfileName(name string) bool {
	if name == "" {
		return false
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '-') {
			return false
		}
	}
	return true
}

// profile parses one profile object.
func (p *parser) profile(key, name string, raw json.RawMessage, servers []string) (*profile.Profile, bool) {
	members, ok := p.object(raw, "", key, "a profile")
	if !ok {
		return nil, false
	}
	pr := &profile.Profile{Name: name, Prefix: profile.PrefixAlways, Servers: map[string]*profile.Server{}}
	nerr := len(p.errs)
	for _, m := range members {
		k := key + "." + m.key
		if m.key == "prefix" && Kind(m.val) == "string" {
			var v string
			_ = json.Unmarshal(m.val, &v)
			px, ok := profile.ParsePrefix(v)
			if !ok {
				p.fail("", k, "want one of %s, got %q", quoteList(profile.Prefixes), v)
			}
			pr.Prefix = px
			continue
		}
		if !slices.Contains(servers, m.key) {
			p.fail("", k, "profile %q names unknown server %q%s", name, m.key, suggest(m.key, servers))
			continue
		}
		if s, ok := p.profileServer(k, m.val); ok {
			pr.Servers[m.key] = s
		}
	}
	if len(p.errs) == nerr && len(pr.Servers) == 0 {
		p.fail("", key, "profile %q names no server: it would serve nothing", name)
	}
	return pr, len(p.errs) == nerr
}

// profileServer parses the rules of one server of a profile.
func (p *parser) profileServer(key string, raw json.RawMessage) (*profile.Server, bool) {
	members, ok := p.object(raw, "", key, `a server of a profile (an object of "tools", "prompts", "resources")`)
	if !ok {
		return nil, false
	}
	s := &profile.Server{}
	nerr := len(p.errs)
	for _, m := range members {
		k := key + "." + m.key
		switch m.key {
		case "tools":
			p.rules(k, m.val, &s.Tools, true)
		case "prompts":
			p.rules(k, m.val, &s.Prompts, false)
		case "resources":
			p.rules(k, m.val, &s.Resources, false)
		default:
			p.fail("", key, "unknown key %q%s", m.key, suggest(m.key, ruleKinds))
		}
	}
	return s, len(p.errs) == nerr
}

// rules parses one kind's allow, deny and (tools only) overrides.
func (p *parser) rules(key string, raw json.RawMessage, r *profile.Rules, tools bool) {
	members, ok := p.object(raw, "", key, "")
	if !ok {
		return
	}
	var overrides json.RawMessage
	for _, m := range members {
		switch {
		case m.key == "allow":
			r.Allow, r.HasAllow = p.globs(key+".allow", m.val), true
		case m.key == "deny":
			r.Deny = p.globs(key+".deny", m.val)
		case m.key == "overrides" && tools:
			overrides = m.val
		default:
			known := listKeys[:2]
			if tools {
				known = listKeys
			}
			p.fail("", key, "unknown key %q%s", m.key, suggest(m.key, known))
		}
	}
	if overrides != nil {
		p.overrides(key+".overrides", overrides, r)
	}
}

// globs parses an array of glob patterns.
func (p *parser) globs(key string, raw json.RawMessage) []profile.Glob {
	if k := Kind(raw); k != "array" {
		p.fail("", key, "want an array of name patterns, got %s", k)
		return nil
	}
	items, _ := arrayElements(raw) // jsonscan.go; raw is an array of the valid file
	out := make([]profile.Glob, 0, len(items))
	for i, it := range items {
		k := fmt.Sprintf("%s[%d]", key, i)
		var s string
		if Kind(it) != "string" || json.Unmarshal(it, &s) != nil {
			p.fail("", k, "want a string, got %s", Kind(it))
			continue
		}
		g, err := profile.ParseGlob(s)
		if err != nil {
			p.fail("", k, "%v", err)
			continue
		}
		out = append(out, g)
	}
	return out
}

// overrides parses the per-tool title and description overrides; one for
// a tool the rules hide is a problem.
func (p *parser) overrides(key string, raw json.RawMessage, r *profile.Rules) {
	members, ok := p.object(raw, "", key, "")
	if !ok {
		return
	}
	r.Overrides = map[string]profile.Override{}
	for _, m := range members {
		k := key + "." + m.key
		fields, ok := p.object(m.val, "", k, "")
		if !ok {
			continue
		}
		var ov profile.Override
		for _, f := range fields {
			if f.key != "title" && f.key != "description" {
				p.fail("", k, "unknown key %q%s", f.key, suggest(f.key, []string{"title", "description"}))
				continue
			}
			v, ok := p.str("", k+"."+f.key, f.val)
			switch {
			case !ok:
			case f.key == "title":
				ov.Title = &v
			default:
				ov.Description = &v
			}
		}
		if !r.Allows(m.key) {
			p.fail("", k, "override of tool %q, which this profile hides", m.key)
			continue
		}
		r.Overrides[m.key] = ov
	}
}
