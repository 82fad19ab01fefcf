package profile

import (
	"maps"
	"slices"
)

// ListChange says which lists of one server a profile shows differently
// after a reload.
type ListChange struct {
	Profile, Server           string
	Tools, Prompts, Resources bool
}

// ListChanges compares two sets of profiles, before and after a reload:
// for every profile in both that serves a server in both, which of that
// server's lists its rules now show differently (another allow or deny
// list, another override). Sorted by profile, then server. Servers a
// profile gained or lost, and profiles added or removed, are not list
// changes: they change what a host is served, not what a list holds.
func ListChanges(before, after Set) []ListChange {
	var out []ListChange
	for _, name := range after.Names() {
		old, now := before[name], after[name]
		if old == nil {
			continue
		}
		for _, server := range now.ServerNames() {
			o, n := old.Servers[server], now.Servers[server]
			if o == nil {
				continue
			}
			c := ListChange{Profile: name, Server: server,
				Tools:     !o.Tools.same(&n.Tools),
				Prompts:   !o.Prompts.same(&n.Prompts),
				Resources: !o.Resources.same(&n.Resources)}
			if c.Tools || c.Prompts || c.Resources {
				out = append(out, c)
			}
		}
	}
	return out
}

// same reports whether r and q show the same items the same way.
func (r *Rules) same(q *Rules) bool {
	return r.HasAllow == q.HasAllow &&
		slices.EqualFunc(r.Allow, q.Allow, sameGlob) &&
		slices.EqualFunc(r.Deny, q.Deny, sameGlob) &&
		maps.EqualFunc(r.Overrides, q.Overrides, sameOverride)
}

func sameGlob(a, b Glob) bool { return a.text == b.text }

func sameOverride(a, b Override) bool {
	return sameText(a.Title, b.Title) && sameText(a.Description, b.Description)
}

func sameText(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
