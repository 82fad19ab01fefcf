package config

import (
	"encoding/json"
	"slices"
)

// keyPin is the server key of the tool pinning mode.
const keyPin = "pin"

// pinModes are the values of "pin" (internal/pin's modes).
var pinModes = []string{"off", "warn", "enforce"}

// pinMode reads "pin": off, warn or enforce.
func (p *parser) pinMode(server, key string, raw json.RawMessage) string {
	v, ok := p.str(server, key, raw)
	if !ok {
		return ""
	}
	if !slices.Contains(pinModes, v) {
		p.fail(server, key, "invalid value %q, want one of %s", v, quoteList(pinModes))
		return ""
	}
	return v
}
