package sandbox

import "github.com/mcpd-dev/mcpd/internal/sandbox/policy"

// The policy's vocabulary, defined where the config can use it without
// linking the helper (internal/sandbox/policy).
type (
	Policy  = policy.Policy
	Network = policy.Network
	Limits  = policy.Limits
)

// PresetStrict is the one preset (policy.PresetStrict).
const PresetStrict = policy.PresetStrict

// FormatBytes writes n in the largest binary unit that divides it.
func FormatBytes(n int64) string { return policy.FormatBytes(n) }
