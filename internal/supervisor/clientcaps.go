package supervisor

import "encoding/json"

// clientCapabilities is what mcpd declares to a legacy child at initialize:
// Options.Capabilities when set, else the capabilities whose forwarding the
// spec leaves on ("Both sides must only use negotiated capabilities for the
// rest of the session", so a capability left off means the child never
// sends that request).
func (sv *server) clientCapabilities() json.RawMessage {
	if c := sv.sup.opts.Capabilities; c != nil {
		return c
	}
	on := func(b *bool) bool { return b == nil || *b }
	spec := sv.currentSpec() // a reload may change sv.spec (reload.go)
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
		// "elicitation: {form?: {}, url?: {}}": form only, the mode every
		// host that answers elicitation supports.
		caps["elicitation"] = map[string]any{"form": map[string]any{}}
	}
	b, _ := json.Marshal(caps)
	return b
}
