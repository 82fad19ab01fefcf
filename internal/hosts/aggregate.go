package hosts

import (
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
)

// AggregateName is the name of the one entry connect --aggregate writes in
// place of a server map's entries.
const AggregateName = "mcpd"

// AggregateTarget is where h's one entry for all of mcpd points: mcpd's
// aggregate HTTP door, or the bridge serving names as one.
func (m Mcpd) AggregateTarget(h *Host, names []string) Target {
	if h.HTTP && m.HTTP != "" {
		return Target{URL: m.HTTP + "/mcp"}
	}
	args := append(slices.Clone(m.GlobalArgs), "bridge")
	return Target{Command: m.Ctl, Args: append(args, names...)}
}

// IsAggregate reports whether e is mcpd's own aggregate entry: named
// "mcpd", through mcpd, at its aggregate door or running the bridge.
func (e *Entry) IsAggregate() bool {
	if e.Name != AggregateName || e.State != Connected {
		return false
	}
	if e.Server.URL == "" {
		return true // mcpdctl bridge, as isMcpd has it
	}
	u, err := url.Parse(e.Server.URL)
	return err == nil && strings.TrimSuffix(u.Path, "/") == "/mcp"
}

// bridgeNames are the servers an entry running "mcpdctl [flags] bridge
// [flags] NAME…" serves.
func (e *Entry) bridgeNames() []string {
	if e.Server.URL != "" || strings.TrimSuffix(filepath.Base(e.Server.Command), ".exe") != "mcpdctl" {
		return nil
	}
	args := e.Server.Args
	i := slices.Index(args, "bridge")
	if i < 0 {
		return nil
	}
	var out []string
	for j := i + 1; j < len(args); j++ {
		switch a := args[j]; {
		case a == "--root" || a == "--profile" || a == "--prefix" || a == "--timeout" || a == "--max-line-size":
			j++
		case strings.HasPrefix(a, "-"):
		default:
			out = append(out, a)
		}
	}
	return out
}

// A Plan is what connect does to one file: entries pointed at mcpd one by
// one, and entries taken out for one entry named "mcpd" in their map.
type Plan struct {
	// Point are the entries rewritten in place, each to its target.
	Point map[*Entry]Target
	// Aggregate are the entries removed, each with the mcpd server it
	// reaches through the "mcpd" entry.
	Aggregate map[*Entry]string
	// Target is where the "mcpd" entry of a map points, given the servers
	// it is to serve (those of the map's existing "mcpd" entry and those
	// it replaces).
	Target func(names []string) Target
}

// Apply makes the changes of p to o's file, keeping every other byte. It
// returns the file's new content and what changed; o is left as read.
// An entry named "mcpd" that is not mcpd's aggregate, in a map whose
// entries are to be aggregated, is an error.
func (o *Opened) Apply(p Plan) ([]byte, []Change, error) {
	doc, err := parse(o.File.Format, o.Data)
	if err != nil {
		return nil, nil, err
	}
	changes, err := o.applyPoint(doc, p)
	if err != nil {
		return nil, nil, err
	}
	for _, g := range o.aggregateGroups(p) {
		more, err := o.applyAggregate(doc, g, p)
		if err != nil {
			return nil, nil, err
		}
		changes = append(changes, more...)
	}
	return doc.bytes(), changes, nil
}

// applyPoint rewrites in doc the entries p points one by one, in file
// order.
func (o *Opened) applyPoint(doc document, p Plan) ([]Change, error) {
	fresh, err := o.entriesOf(doc)
	if err != nil {
		return nil, err
	}
	var changes []Change
	for i, en := range o.Entries {
		t, ok := p.Point[en]
		if !ok {
			continue
		}
		e := fresh[i]
		orig := e.text
		if err := doc.rewrite(e, o.Host.shape.drops, o.Host.shape.encode(t)); err != nil {
			return nil, fmt.Errorf("server %q of %s: %w", en.Name, en.Where, err)
		}
		changes = append(changes, Change{Keys: slices.Clone(e.keys), Name: e.name, Original: orig, Written: e.text, Server: t.Server})
	}
	return changes, nil
}

// aggGroup is a server map whose entries are to be aggregated, with those
// entries.
type aggGroup struct {
	keys  []string
	where string
	ens   []*Entry
}

// aggregateGroups are the maps p aggregates entries of, in file order.
func (o *Opened) aggregateGroups(p Plan) []*aggGroup {
	var groups []*aggGroup
	for _, en := range o.Entries {
		if _, ok := p.Aggregate[en]; !ok {
			continue
		}
		i := slices.IndexFunc(groups, func(g *aggGroup) bool { return slices.Equal(g.keys, en.Keys) })
		if i < 0 {
			groups = append(groups, &aggGroup{keys: en.Keys, where: en.Where})
			i = len(groups) - 1
		}
		groups[i].ens = append(groups[i].ens, en)
	}
	return groups
}

// applyAggregate replaces in doc the entries of g by the one "mcpd" entry
// of their map: it writes that entry first, in the style of the entries
// still there, then removes the others. The changes list the removals,
// then the "mcpd" entry's, if it changed.
func (o *Opened) applyAggregate(doc document, g *aggGroup, p Plan) ([]Change, error) {
	agg, names, err := o.aggregateOf(g)
	if err != nil {
		return nil, err
	}
	for _, en := range g.ens {
		if server := p.Aggregate[en]; !slices.Contains(names, server) {
			names = append(names, server)
		}
	}
	slices.Sort(names)
	add, err := o.writeAggregate(doc, g, agg, p.Target(names))
	if err != nil {
		return nil, err
	}
	var changes []Change
	for _, en := range g.ens {
		e, err := o.lookup(doc, g.keys, en.Name)
		if err == nil && e == nil {
			err = fmt.Errorf("server %q of %s is gone", en.Name, en.Where)
		}
		if err != nil {
			return nil, err
		}
		orig := e.text
		if err := doc.remove(e); err != nil {
			return nil, fmt.Errorf("server %q of %s: %w", en.Name, en.Where, err)
		}
		changes = append(changes, Change{Keys: slices.Clone(g.keys), Name: en.Name, Original: orig, Server: p.Aggregate[en]})
	}
	if add != nil {
		changes = append(changes, *add)
	}
	return changes, nil
}

// aggregateOf is the existing "mcpd" entry of g's map, if any, and the
// servers it serves; an entry of that name that is not mcpd's aggregate is
// an error.
func (o *Opened) aggregateOf(g *aggGroup) (*Entry, []string, error) {
	var names []string
	var agg *Entry
	for _, en := range o.Entries {
		if en.Name == AggregateName && slices.Equal(en.Keys, g.keys) {
			if !en.IsAggregate() {
				return nil, nil, fmt.Errorf("%s already has an entry %q that is not mcpd's aggregate; rename it, or connect without --aggregate", g.where, AggregateName)
			}
			agg = en
			names = append(names, en.bridgeNames()...)
		}
	}
	return agg, names, nil
}

// writeAggregate points the "mcpd" entry of g's map at t in doc: leaves
// agg, the existing one, if it already reaches t, rewrites it if not, or
// inserts a new one. The change is nil when nothing changed.
func (o *Opened) writeAggregate(doc document, g *aggGroup, agg *Entry, t Target) (*Change, error) {
	switch {
	case agg != nil && sameTarget(agg.Server, t):
		return nil, nil
	case agg != nil:
		e, err := o.lookup(doc, g.keys, AggregateName)
		if err == nil && e == nil {
			err = fmt.Errorf("server %q of %s is gone", AggregateName, g.where)
		}
		if err != nil {
			return nil, err
		}
		orig := e.text
		if err := doc.rewrite(e, o.Host.shape.drops, o.Host.shape.encode(t)); err != nil {
			return nil, fmt.Errorf("server %q of %s: %w", AggregateName, g.where, err)
		}
		return &Change{Keys: slices.Clone(g.keys), Name: AggregateName, Original: orig, Written: e.text}, nil
	default:
		sm, _ := o.mapAt(g.keys)
		e, err := doc.insert(g.keys, sm.list, AggregateName, o.Host.newEntry(AggregateName, t))
		if err != nil {
			return nil, fmt.Errorf("add %q to %s: %w", AggregateName, g.where, err)
		}
		return &Change{Keys: slices.Clone(g.keys), Name: AggregateName, Written: e.text}, nil
	}
}

// sameTarget reports whether s already reaches t.
func sameTarget(s Server, t Target) bool {
	if t.URL != "" {
		return s.URL == t.URL
	}
	return s.URL == "" && s.Command == t.Command && slices.Equal(s.Args, t.Args)
}

// newEntry is the members of a new entry name of h pointing at t: those
// that point an entry at t, and those h requires of every entry.
func (h *Host) newEntry(name string, t Target) []member {
	enc := h.shape.encode(t)
	switch h {
	case goose:
		return append([]member{{"name", name}, {"description", "MCP servers through mcpd"}, {"enabled", true}}, enc...)
	case continueDev:
		return append([]member{{"name", name}}, enc...)
	}
	return enc
}

// mapAt is the server map of o's file that holds the map at keys.
func (o *Opened) mapAt(keys []string) (serverMap, bool) {
	for _, sm := range o.File.maps {
		if len(sm.path) != len(keys) {
			continue
		}
		ok := true
		for i, k := range sm.path {
			if k != "*" && k != keys[i] {
				ok = false
			}
		}
		if ok {
			return sm, true
		}
	}
	return serverMap{}, false
}

// lookup finds the entry name of the map at keys in doc as it now stands;
// nil without an error when there is none.
func (o *Opened) lookup(doc document, keys []string, name string) (*entry, error) {
	sm, ok := o.mapAt(keys)
	if !ok {
		return nil, fmt.Errorf("%s is not where %s keeps its servers", where(keys), o.Host.Name)
	}
	es, err := mapEntries(doc, sm)
	if err != nil {
		return nil, err
	}
	for _, e := range es {
		if e.name == name && slices.Equal(e.keys, keys) {
			return e, nil
		}
	}
	return nil, nil
}

// Unaggregated says why e, a direct entry, keeps an entry of its own
// (pointed at mcpd) under connect --aggregate; "" when it can go into
// the "mcpd" entry.
func (e *Entry) Unaggregated() string {
	if r := e.Root(); r != "" {
		return fmt.Sprintf("its server is tied to the workspace %s, which one entry for all servers cannot pass on", r)
	}
	if e.Disabled {
		return "it is disabled, which one entry for all servers cannot keep"
	}
	return ""
}
