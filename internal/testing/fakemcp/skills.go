package fakemcp

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"regexp"
	"sort"
	"strings"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
)

// The skills flag serves two skills (SEP-2640) named after the server's
// name (EnvName, lowercased, other than a-z0-9 as "-"): NAME-guide with
// SKILL.md, references/NOTES.md and templates/a.md, and NAME-extra with
// SKILL.md only; one skill a page of skills/list. It declares
// extensions["io.modelcontextprotocol/skills"] with directoryRead, answers
// skills/get, resources/directory/read and resources/read of every skill
// file, whose text names the server. SharedSkill is served by every
// skills fake alike.

// SharedSkill is the skill URI every fake with the skills flag serves.
const SharedSkill = "skill://shared-skill/SKILL.md"

// SkillNames are the skill names a skills fake named name serves, its
// own first.
func SkillNames(name string) []string {
	base := skillBase(name)
	return []string{base + "-guide", base + "-extra", "shared-skill"}
}

var notSkillChar = regexp.MustCompile(`[^a-z0-9]+`)

func skillBase(name string) string {
	return strings.Trim(notSkillChar.ReplaceAllString(strings.ToLower(name), "-"), "-")
}

// skillFile is one file of a fake skill.
type skillFile struct {
	uri, mimeType, text string
}

// fakeSkill is one fake skill.
type fakeSkill struct {
	name, description string
	files             []skillFile // SKILL.md first
}

// skills are the fake's skills.
func (s *server) skills() []fakeSkill {
	server, _ := s.info["name"].(string)
	names := SkillNames(server)
	var out []fakeSkill
	for i, name := range names {
		desc := "Skill " + name + " of server " + server
		if name == "shared-skill" {
			desc = "A skill every fake serves"
		}
		md := "---\nname: " + name + "\ndescription: " + desc + "\n---\n\n# " + name + "\n\nServed by " + server + ".\n"
		k := fakeSkill{name: name, description: desc, files: []skillFile{{uri: "skill://" + name + "/SKILL.md", mimeType: "text/markdown", text: md}}}
		if i == 0 {
			k.files = append(k.files,
				skillFile{uri: "skill://" + name + "/references/NOTES.md", mimeType: "text/markdown", text: "notes of " + server + "\n"},
				skillFile{uri: "skill://" + name + "/templates/a.md", mimeType: "text/markdown", text: "template a of " + server + "\n"})
		}
		out = append(out, k)
	}
	return out
}

// entry is k's skill entry.
func (k fakeSkill) entry() map[string]any {
	var res []any
	for _, f := range k.files {
		sum := sha256.Sum256([]byte(f.text))
		res = append(res, map[string]any{"uri": f.uri, "digest": "sha256:" + hex.EncodeToString(sum[:]), "size": len(f.text)})
	}
	return map[string]any{
		"uri":         k.files[0].uri,
		"frontmatter": map[string]any{"name": k.name, "description": k.description},
		"resources":   res,
	}
}

// skillCaps adds the skills extension to caps.
func skillCaps(caps map[string]any) map[string]any {
	out := maps.Clone(caps)
	exts, _ := out["extensions"].(map[string]any)
	exts = maps.Clone(exts)
	if exts == nil {
		exts = map[string]any{}
	}
	exts["io.modelcontextprotocol/skills"] = map[string]any{"directoryRead": true}
	out["extensions"] = exts
	return out
}

// skillsRequest serves what the skills flag adds; handled is false for
// any other request, and without the flag.
func (s *server) skillsRequest(r *req, cacheable func(map[string]any) map[string]any) (result map[string]any, rerr *jsonrpc.Error, handled bool) {
	if !s.flags["skills"] {
		return nil, nil, false
	}
	var uri string
	_ = json.Unmarshal(r.params["uri"], &uri)
	skills := s.skills()
	switch r.method {
	case "skills/list":
		var cursor string
		_ = json.Unmarshal(r.params["cursor"], &cursor)
		i := 0
		if cursor != "" {
			for i < len(skills) && "page-"+skills[i].name != cursor {
				i++
			}
			if i == len(skills) {
				return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid cursor %q", cursor), true
			}
		}
		res := map[string]any{"skills": []any{skills[i].entry()}}
		if i+1 < len(skills) {
			res["nextCursor"] = "page-" + skills[i+1].name
		}
		return cacheable(res), nil, true
	case "skills/get":
		for _, k := range skills {
			if k.files[0].uri == uri {
				return cacheable(map[string]any{"skill": k.entry()}), nil, true
			}
		}
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "no skill is served at %s", uri), true
	case "resources/read":
		for _, k := range skills {
			for _, f := range k.files {
				if f.uri == uri {
					return cacheable(map[string]any{"contents": []any{
						map[string]any{"uri": uri, "mimeType": f.mimeType, "text": f.text},
					}}), nil, true
				}
			}
		}
		return nil, nil, false
	case "resources/directory/read":
		children := map[string]string{} // uri → mimeType
		dir := false
		for _, k := range skills {
			for _, f := range k.files {
				rest, ok := strings.CutPrefix(f.uri, uri+"/")
				if !ok {
					continue
				}
				dir = true
				if first, _, nested := strings.Cut(rest, "/"); nested {
					children[uri+"/"+first] = "inode/directory"
				} else {
					children[f.uri] = f.mimeType
				}
			}
		}
		if !dir {
			return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "%s is not a directory resource", uri), true
		}
		uris := make([]string, 0, len(children))
		for u := range children {
			uris = append(uris, u)
		}
		sort.Strings(uris)
		list := []any{}
		for _, u := range uris {
			list = append(list, map[string]any{"uri": u, "name": u[strings.LastIndexByte(u, '/')+1:], "mimeType": children[u]})
		}
		res := map[string]any{"resources": list}
		if r.modern {
			res["resultType"] = "complete"
		}
		return res, nil, true
	}
	return nil, nil, false
}
