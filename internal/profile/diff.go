package profile

import (
	"cmp"
	"maps"
	"slices"
)

// ListChange says which lists of one server a profile shows differently
// after a reload.
type ListChange struct {
	Profile, Server           string
	Tools, Prompts, Resources bool
}

// ListChanges compares two sets of profiles, before and after a reload,
// and says which lists of which servers a host under each profile now sees
// differently: for a server the profile serves before and after, the kinds
// whose rules changed (another allow or deny list, another override), and
// tools and prompts when the profile's prefix mode changed (their names
// change); for every server of a profile that gained or lost servers, and
// of a profile that is gone or new, every kind (a host may still run
// under a profile that was removed, and see it come back). Sorted by
// profile, then server.
func ListChanges(before, after Set) []ListChange {
	var out []ListChange
	all := func(profile, server string) ListChange {
		return ListChange{Profile: profile, Server: server, Tools: true, Prompts: true, Resources: true}
	}
	names := before.Names()
	for _, n := range after.Names() {
		if before[n] == nil {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		old, now := before[name], after[name]
		if old == nil || now == nil {
			for _, server := range cmp.Or(old, now).ServerNames() {
				out = append(out, all(name, server))
			}
			continue
		}
		servers := old.ServerNames()
		for _, s := range now.ServerNames() {
			if old.Servers[s] == nil {
				servers = append(servers, s)
			}
		}
		slices.Sort(servers)
		renamed := old.Prefix != now.Prefix
		// Servers gained or lost change the whole profile's lists, those of
		// the servers kept too (on collision their names may change), and
		// a host that watches only the servers it served learns so.
		regrouped := len(servers) != len(old.Servers) || len(servers) != len(now.Servers)
		for _, server := range servers {
			o, n := old.Servers[server], now.Servers[server]
			if o == nil || n == nil || regrouped {
				out = append(out, all(name, server))
				continue
			}
			c := ListChange{Profile: name, Server: server,
				Tools:     renamed || !o.Tools.same(&n.Tools),
				Prompts:   renamed || !o.Prompts.same(&n.Prompts),
				Resources: !o.Resources.same(&n.Resources)}
			if c.Tools || c.Prompts || c.Resources {
				out = append(out, c)
			}
		}
	}
	return out
}

// Diff names the profiles a reload adds, removes, and changes (what a
// host under it sees: its servers, rules or prefix mode), each sorted.
func Diff(before, after Set) (added, removed, changed []string) {
	for _, n := range after.Names() {
		if before[n] == nil {
			added = append(added, n)
		}
	}
	for _, n := range before.Names() {
		if after[n] == nil {
			removed = append(removed, n)
		}
	}
	for _, c := range ListChanges(before, after) {
		if before[c.Profile] != nil && after[c.Profile] != nil && !slices.Contains(changed, c.Profile) {
			changed = append(changed, c.Profile)
		}
	}
	return added, removed, changed
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
