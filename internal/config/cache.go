package config

import "encoding/json"

// cachePolicy parses a server's "cache" key: "never", "always", or a
// positive duration (a Go duration string or integer milliseconds), which
// is normalized to its time.Duration spelling.
func (p *parser) cachePolicy(server, key string, raw json.RawMessage) string {
	if Kind(raw) == "string" {
		var v string
		_ = json.Unmarshal(raw, &v)
		if v == "never" || v == "always" {
			return v
		}
	}
	switch Kind(raw) {
	case "string", "number":
		nerr := len(p.errs)
		d := p.duration(server, key, raw, 0)
		if len(p.errs) > nerr {
			// Say what else the key accepts.
			p.errs[len(p.errs)-1].Msg += `; want a duration, "never" or "always"`
			return ""
		}
		return d.String()
	}
	p.fail(server, key, `want a duration (a string like "30s" or integer milliseconds), "never" or "always", got %s`, Kind(raw))
	return ""
}
