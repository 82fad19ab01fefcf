package config

import (
	"encoding/json"
)

// keyAudit is the top-level key of the audit log settings.
const keyAudit = "audit"

// Defaults of the audit log.
const (
	DefaultAuditMaxSize = 16 << 20
	DefaultAuditKeep    = 3
)

// Audit is the top-level "audit" object: mcpd's log of the tool calls,
// prompt gets and resource reads of apps (internal/audit), kept in mcpd's
// state directory.
//
//	"audit": {"enabled": true, "arguments": false, "maxSize": 16777216, "keep": 3}
type Audit struct {
	// Enabled (key "enabled", default true) turns the log on.
	Enabled bool
	// Arguments (key "arguments", default false) records each call's full
	// arguments beside their digest.
	Arguments bool
	// MaxSize (key "maxSize", bytes, default 16 MiB) is the size at which
	// the file is rotated.
	MaxSize int64
	// Keep (key "keep", default 3) is how many rotated files are kept.
	Keep int
}

// DefaultAudit is the audit setting of a file without "audit".
func DefaultAudit() Audit {
	return Audit{Enabled: true, MaxSize: DefaultAuditMaxSize, Keep: DefaultAuditKeep}
}

var auditKeys = keysIn(InAudit)

// audit reads the top-level "audit" object.
func (p *parser) audit(raw json.RawMessage) Audit {
	a := DefaultAudit()
	members, ok := p.object(raw, "", keyAudit, "")
	if !ok {
		return a
	}
	for _, m := range members {
		key := keyAudit + "." + m.key
		switch known(m.key, auditKeys) {
		case "enabled":
			a.Enabled = p.boolean("", key, m.val)
		case "arguments":
			a.Arguments = p.boolean("", key, m.val)
		case "maxSize":
			a.MaxSize = int64(p.positiveInt("", key, m.val))
		case "keep":
			a.Keep = p.positiveInt("", key, m.val)
		default:
			p.fail("", keyAudit, "unknown key %q%s", m.key, suggest(m.key, auditKeys))
		}
	}
	if a.MaxSize <= 0 {
		a.MaxSize = DefaultAuditMaxSize
	}
	if a.Keep <= 0 {
		a.Keep = DefaultAuditKeep
	}
	return a
}
