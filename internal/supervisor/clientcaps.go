package supervisor

import (
	"encoding/json"
	"strings"

	"github.com/mcpd-dev/mcpd/internal/config"
)

// Extension ids and settings mcpd declares to a legacy child.
const (
	// ExtensionUI is the MCP Apps extension (ext-apps):
	// capabilities.extensions["io.modelcontextprotocol/ui"].
	ExtensionUI = "io.modelcontextprotocol/ui"
	// MimeTypeApp is the MIME type of an MCP Apps UI resource, which mcpd
	// passes through unchanged.
	MimeTypeApp = "text/html;profile=mcp-app"
)

// clientCapabilities is what mcpd declares to a legacy child at
// initialize: Options.Capabilities when set, else what mcpd can route end
// to end ("Both sides must only use negotiated capabilities for the rest of
// the session", so a capability left off means the child never sends that
// request), changed by the server's clientCapabilities config:
//
//   - roots, sampling and elicitation (form and url) unless the config
//     turns them off: the child's requests go to a host that declared the
//     capability (for url elicitation, the url mode), else -32601 naming
//     it;
//   - the MCP Apps extension with the MIME type mcpd passes through: UI
//     tools keep their _meta.ui, ui:// resources read through every door
//     byte for byte. A host that renders no UI gets the same tools (a UI
//     tool's result carries its text content too).
//
// One session serves every app, so this is one declaration for all of
// them; a modern child instead sees each request's own.
func (sv *server) clientCapabilities() json.RawMessage {
	if c := sv.sup.opts.Capabilities; c != nil {
		return c
	}
	spec := sv.currentSpec() // a reload may change sv.spec (reload.go)
	b, _ := json.Marshal(declaredCapabilities(spec))
	return b
}

// declaredCapabilities is clientCapabilities of spec, as a map.
func declaredCapabilities(spec Spec) map[string]any {
	on := func(b *bool) bool { return b == nil || *b }
	caps := map[string]any{}
	if on(spec.Roots) {
		// mcpd announces a reload that changes the configured roots
		// (roots.go).
		caps["roots"] = map[string]any{"listChanged": true}
	}
	if on(spec.Sampling) {
		caps["sampling"] = map[string]any{}
	}
	if on(spec.Elicitation) {
		// "elicitation: {form?: {}, url?: {}}": a url elicitation goes only
		// to a host that declared the url mode.
		caps["elicitation"] = map[string]any{"form": map[string]any{}, "url": map[string]any{}}
	}
	caps["extensions"] = map[string]any{
		ExtensionUI: map[string]any{"mimeTypes": []string{MimeTypeApp}},
	}
	applyClientCaps(caps, spec.ClientCapabilities)
	if ext, _ := caps["extensions"].(map[string]any); len(ext) == 0 {
		delete(caps, "extensions")
	}
	return caps
}

// applyClientCaps changes caps by the config's add (merged object by
// object) and then its remove.
func applyClientCaps(caps map[string]any, cc *config.ClientCaps) {
	if cc == nil {
		return
	}
	if len(cc.Add) > 0 {
		var add map[string]any
		if json.Unmarshal(cc.Add, &add) == nil {
			mergeCaps(caps, add)
		}
	}
	for _, name := range cc.Remove {
		if strings.Contains(name, "/") {
			if ext, ok := caps["extensions"].(map[string]any); ok {
				delete(ext, name)
			}
			continue
		}
		top, member, nested := strings.Cut(name, ".")
		if !nested {
			delete(caps, top)
			continue
		}
		if m, ok := caps[top].(map[string]any); ok {
			delete(m, member)
		}
	}
}

// mergeCaps merges src into dst: objects member by member, any other value
// replaced.
func mergeCaps(dst, src map[string]any) {
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				mergeCaps(dm, sm)
				continue
			}
			c := map[string]any{}
			mergeCaps(c, sm)
			dst[k] = c
			continue
		}
		dst[k] = v
	}
}
