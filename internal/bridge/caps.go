package bridge

import "encoding/json"

// The host gets the served servers' own capabilities: one server's object
// as the server declared it, every member included (tasks, experimental,
// extensions and any the bridge does not know); several servers' merged.

// capabilities is what the bridge declares to the host.
func (b *bridge) capabilities() map[string]any {
	if !b.isUp() {
		return defaultCapabilities()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.capsMapLocked()
}

// capsMapLocked is the capabilities object the bridge declares once it is
// up. A server not described yet (it was not running) counts as one that
// may offer everything with list changes, which the bridge announces when
// it comes (missing.go). Serving several servers:
//   - objects are merged member by member, a flag is true if any server
//     sets it, and a member the servers disagree on otherwise keeps the
//     first server's value;
//   - extensions (skills, tasks) and tasks are merged like the rest: the
//     bridge routes their requests to the server that listed the skill or
//     returned the task (extensions.go);
//   - list changes are declared for every kind of item offered, and
//     logging: the bridge itself tells of servers going and coming.
//
// b.mu must be held.
func (b *bridge) capsMapLocked() map[string]any {
	out := map[string]any{}
	served, undescribed := b.servedCapsLocked()
	if !b.aggr {
		if len(served) == 1 {
			return served[0]
		}
		return defaultCapabilities()
	}
	for _, caps := range served {
		mergeInto(out, caps)
	}
	if undescribed {
		mergeInto(out, defaultCapabilities())
	}
	// The bridge announces servers coming and going as list changes, and
	// logs which server is missing.
	for _, kind := range []string{"tools", "prompts", "resources"} {
		if m, ok := out[kind].(map[string]any); ok {
			m["listChanged"] = true
		}
	}
	out["logging"] = map[string]any{}
	return out
}

// mergeInto merges src into dst: objects member by member, true wins over
// false, and otherwise dst's value stays.
func mergeInto(dst, src map[string]any) {
	for k, v := range src {
		old, ok := dst[k]
		if !ok {
			if m, isMap := v.(map[string]any); isMap {
				// A copy, so that later merges do not change src.
				c := map[string]any{}
				mergeInto(c, m)
				v = c
			}
			dst[k] = v
			continue
		}
		switch o := old.(type) {
		case map[string]any:
			if m, isMap := v.(map[string]any); isMap {
				mergeInto(o, m)
			}
		case bool:
			if nv, _ := v.(bool); nv {
				dst[k] = true
			}
		}
	}
}

// listCaps says which list_changed notifications the host may be sent.
type listCaps struct{ tools, prompts, resources, subscribe bool }

// capsLocked is what capsMapLocked declares about list changes and
// resource subscriptions. b.mu must be held.
func (b *bridge) capsLocked() listCaps {
	caps := b.capsMapLocked()
	on := func(k, f string) bool {
		m, _ := caps[k].(map[string]any)
		v, _ := m[f].(bool)
		return v
	}
	return listCaps{
		tools:     on("tools", "listChanged"),
		prompts:   on("prompts", "listChanged"),
		resources: on("resources", "listChanged"),
		subscribe: on("resources", "subscribe"),
	}
}

// servedCapsLocked returns the capabilities object of each served server
// that is described and sent a valid one, and reports whether any served
// server is not described. b.mu must be held.
func (b *bridge) servedCapsLocked() (caps []map[string]any, undescribed bool) {
	for _, n := range b.serverNames() {
		s := b.info[n]
		var c map[string]any
		if s == nil || json.Unmarshal(s.Capabilities, &c) != nil || c == nil {
			undescribed = true
			continue
		}
		caps = append(caps, c)
	}
	return caps, undescribed
}
