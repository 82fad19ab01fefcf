// Package profile is mcpd's per-client profiles: which servers, tools,
// prompts and resources a host sees, and how an aggregated host names
// them. The config package parses them (config.Config.Profiles); the api
// package enforces them on every call an app makes under a profile, so
// that each front (gRPC, the bridge, the HTTP face) shows the same view.
package profile

import (
	"slices"
	"sort"
)

// Prefix says how a host serving several servers names their tools and
// prompts.
type Prefix string

const (
	// PrefixAlways names every tool and prompt server__name.
	PrefixAlways Prefix = "always"
	// PrefixOnCollision keeps the names servers give, and prefixes only
	// a name that two or more of the served servers share.
	PrefixOnCollision Prefix = "on-collision"
)

// Prefixes are the valid Prefix values.
var Prefixes = []string{string(PrefixAlways), string(PrefixOnCollision)}

// ParsePrefix checks s; "" is PrefixAlways.
func ParsePrefix(s string) (Prefix, bool) {
	switch Prefix(s) {
	case "", PrefixAlways:
		return PrefixAlways, true
	case PrefixOnCollision:
		return PrefixOnCollision, true
	}
	return "", false
}

// Override replaces what a tool says of itself; nil fields keep the
// server's.
type Override struct {
	Title       *string
	Description *string
}

// Rules decide which items of one kind a profile shows. With an allow
// list only items matching one of its globs are shown; without one every
// item is. An item matching a deny glob is hidden either way.
type Rules struct {
	Allow    []Glob
	HasAllow bool // an allow list was given (it may be empty: nothing)
	Deny     []Glob
	// Overrides by exact tool name (tools only).
	Overrides map[string]Override
}

// Allows reports whether the rules show the item named name.
func (r *Rules) Allows(name string) bool {
	for _, g := range r.Deny {
		if g.Match(name) {
			return false
		}
	}
	if !r.HasAllow {
		return true
	}
	for _, g := range r.Allow {
		if g.Match(name) {
			return true
		}
	}
	return false
}

// open reports whether the rules show every item unchanged.
func (r *Rules) open() bool {
	return !r.HasAllow && len(r.Deny) == 0 && len(r.Overrides) == 0
}

// Server is what a profile shows of one server. Tools and prompts are
// matched by name, resources by URI and resource templates by their URI
// template.
type Server struct {
	Tools, Prompts, Resources Rules

	memo memos // the last list filtered per method (filter.go)
}

// Profile is one named profile.
type Profile struct {
	Name string
	// Prefix is how a host serving several of its servers names their
	// tools and prompts.
	Prefix Prefix
	// Servers are the servers it serves, by name.
	Servers map[string]*Server
}

// Server returns the rules of the named server, nil when the profile does
// not serve it.
func (p *Profile) Server(name string) *Server {
	return p.Servers[name]
}

// ServerNames are the servers the profile serves, sorted.
func (p *Profile) ServerNames() []string {
	out := make([]string, 0, len(p.Servers))
	for n := range p.Servers {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Set is the profiles of one config, by name. It is never changed once
// built; a reload builds a new one.
type Set map[string]*Profile

// Names are the profile names, sorted.
func (s Set) Names() []string {
	out := make([]string, 0, len(s))
	for n := range s {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}
