package config

import (
	"encoding/json"
	"time"
)

// idleTimeout parses the "idleTimeout" key: a duration like the other
// duration keys, except that zero ("0", "0s", 0) is accepted and means the
// same as leaving the key out: the server is never stopped for idleness.
func (p *parser) idleTimeout(server, key string, raw json.RawMessage) time.Duration {
	switch Kind(raw) {
	case "number":
		var n json.Number
		if json.Unmarshal(raw, &n) == nil && n.String() == "0" {
			return 0
		}
	case "string":
		var s string
		if json.Unmarshal(raw, &s) == nil {
			if d, err := time.ParseDuration(s); err == nil && d == 0 {
				return 0
			}
		}
	}
	return p.duration(server, key, raw, 0)
}
