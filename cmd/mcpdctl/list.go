package main

import (
	"encoding/json"
	"fmt"
	"sort"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// serverItems is one server's part of an aggregated list: Tool, Prompt,
// Resource or ResourceTemplate objects exactly as the server sent them.
type serverItems struct {
	server string
	items  []json.RawMessage
}

// gatherLists checks the per-server parts of a list answer, sorted by
// server name. When the operator named one server (explicit), a server that
// could not be listed fails the command; in an aggregate list it is a
// warning on stderr and the others go on. warned, if not nil, keeps a
// server from being reported twice by verbs that make two list calls.
// optional marks a list some servers lack on purpose (resource templates):
// a server without it is not worth a warning.
func (c *cli) gatherLists(kind, explicit string, lists []*mcpdv1.ServerList, warned map[string]bool, optional bool) ([]serverItems, error) {
	lists = append([]*mcpdv1.ServerList(nil), lists...)
	sort.SliceStable(lists, func(i, j int) bool { return lists[i].GetServer() < lists[j].GetServer() })
	var out []serverItems
	for _, l := range lists {
		name := l.GetServer()
		var problem error
		switch {
		case l.GetUnavailable() != "":
			problem = fmt.Errorf("server %s is unavailable: %s", name, l.GetUnavailable())
		case l.GetError() != nil && l.GetError().GetCode() == jsonRPCMethodNotFound:
			// A server without the capability has nothing of this kind.
			if explicit != "" && !optional {
				c.warnf("server %s does not list %s: %s", name, kind, l.GetError().GetMessage())
			}
			continue
		case l.GetError() != nil:
			problem = mcpError(name, l.GetError())
		}
		var items []json.RawMessage
		if problem == nil && l.GetItemsJson() != "" {
			if err := json.Unmarshal([]byte(l.GetItemsJson()), &items); err != nil {
				problem = fmt.Errorf("server %s: bad %s list: %w", name, kind, err)
			}
		}
		if problem != nil {
			if explicit != "" {
				return nil, problem
			}
			if warned == nil || !warned[name] {
				c.warnf("%s", problem)
			}
			if warned != nil {
				warned[name] = true
			}
			continue
		}
		out = append(out, serverItems{server: name, items: items})
	}
	return out, nil
}

// itemsJSON returns every item of lists with a "server" member added, for
// --json output.
func itemsJSON(lists []serverItems) ([]json.RawMessage, error) {
	out := []json.RawMessage{}
	for _, l := range lists {
		for _, it := range l.items {
			tagged, err := withServer(it, l.server)
			if err != nil {
				return nil, fmt.Errorf("server %s: %w", l.server, err)
			}
			out = append(out, tagged)
		}
	}
	return out, nil
}

// listItem holds the members of a list item that the tables show.
type listItem struct {
	Name        string `json:"name"`
	Title       string `json:"title"`
	Description string `json:"description"`
	URI         string `json:"uri"`
	URITemplate string `json:"uriTemplate"`
	MimeType    string `json:"mimeType"`
	Arguments   []struct {
		Name     string `json:"name"`
		Required bool   `json:"required"`
	} `json:"arguments"`
}

func decodeItem(raw json.RawMessage) listItem {
	var it listItem
	_ = json.Unmarshal(raw, &it) // a malformed item shows as empty cells
	return it
}

// describe is an item's description on one line, else its title.
func (it listItem) describe() string {
	if it.Description != "" {
		return oneLine(it.Description, 60)
	}
	return dash(oneLine(it.Title, 60))
}
