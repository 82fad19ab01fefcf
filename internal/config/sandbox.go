package config

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	sandbox "github.com/mcpd-dev/mcpd/internal/sandbox/policy"
)

// The "sandbox" key of a server (Linux): the preset "strict", false (none,
// as when the key is absent) or an object that adds to strict:
//
//	"sandbox": {
//	  "read": ["${HOME}/projects"], "write": ["${XDG_CACHE_HOME}/tool"],
//	  "network": [443],            // true, false (the default) or TCP ports
//	  "limits": {"memory": "256MiB", "pids": 64, "cpu": 0.5, "openFiles": 256},
//	  "bestEffort": false
//	}
//
// Paths are absolute after ${VAR} expansion; ${XDG_CONFIG_HOME},
// ${XDG_CACHE_HOME}, ${XDG_DATA_HOME} and ${XDG_STATE_HOME} fall back to
// their XDG defaults under ${HOME} when unset.

// sandboxKeys are the keys of a "sandbox" object.
var sandboxKeys = keysIn(InSandbox)

// limitKeys are the keys of a sandbox's "limits".
var limitKeys = keysIn(InLimits)

// minMemoryLimit is the smallest memory limit accepted: below it not even
// a runtime starts, and a typo ("256" for "256MiB") is likelier.
const minMemoryLimit = 1 << 20

// xdgDefaults are the XDG base dirs under ${HOME} used when unset.
var xdgDefaults = map[string]string{
	"XDG_CONFIG_HOME": ".config", "XDG_CACHE_HOME": ".cache",
	"XDG_DATA_HOME": ".local/share", "XDG_STATE_HOME": ".local/state",
}

// sandbox parses a server's "sandbox" key.
func (p *parser) sandbox(server string, raw json.RawMessage) *sandbox.Policy {
	const key = "sandbox"
	switch Kind(raw) {
	case "boolean":
		if p.boolean(server, key, raw) {
			p.fail(server, key, `want "strict" or an object (true is not a preset)`)
		}
		return nil
	case "string":
		v, _ := p.str(server, key, raw)
		if v != sandbox.PresetStrict {
			p.fail(server, key, "unknown preset %q, want %q or an object", v, sandbox.PresetStrict)
			return nil
		}
		return &sandbox.Policy{}
	}
	members, ok := p.object(raw, server, key, "")
	if !ok {
		return nil
	}
	pol := &sandbox.Policy{}
	for _, m := range members {
		k := key + "." + m.key
		switch known(m.key, sandboxKeys) {
		case "preset":
			if v, ok := p.str(server, k, m.val); ok && v != sandbox.PresetStrict {
				p.fail(server, k, "unknown preset %q, want %q", v, sandbox.PresetStrict)
			}
		case "read":
			pol.Read = p.sandboxPaths(server, k, m.val)
		case "write":
			pol.Write = p.sandboxPaths(server, k, m.val)
		case "network":
			pol.Network = p.sandboxNetwork(server, k, m.val)
		case "limits":
			pol.Limits = p.sandboxLimits(server, k, m.val)
		case "bestEffort":
			pol.BestEffort = p.boolean(server, k, m.val)
		default:
			p.fail(server, key, "unknown key %q%s", m.key, suggest(m.key, sandboxKeys))
		}
	}
	return pol
}

// sandboxPaths parses an array of absolute paths (variables expanded).
func (p *parser) sandboxPaths(server, key string, raw json.RawMessage) []string {
	if k := Kind(raw); k != "array" {
		p.fail(server, key, "want an array of absolute paths, got %s", k)
		return nil
	}
	elems, _ := arrayElements(raw) // jsonscan.go; raw is an array of the valid file
	out := make([]string, 0, len(elems))
	for i, e := range elems {
		k := fmt.Sprintf("%s[%d]", key, i)
		v, ok := p.str(server, k, e)
		if !ok {
			continue
		}
		x, err := expand(v, p.xdgLookup, false)
		switch {
		case p.noExpand:
			out = append(out, v)
		case err != nil:
			p.fail(server, k, "%v", err)
		case !filepath.IsAbs(x):
			p.fail(server, k, "%q is not an absolute path (write /full/path or ${HOME}/dir)", v)
		default:
			out = append(out, filepath.Clean(x))
		}
	}
	return out
}

// xdgLookup is the parser's lookup with the XDG base dirs defaulted.
func (p *parser) xdgLookup(name string) (string, bool) {
	if v, ok := p.lookup(name); ok && v != "" {
		return v, true
	}
	if rel, ok := xdgDefaults[name]; ok {
		if home, ok := p.lookup("HOME"); ok && filepath.IsAbs(home) {
			return filepath.Join(home, rel), true
		}
	}
	return p.lookup(name)
}

// sandboxNetwork parses "network": true, false or an array of TCP ports.
func (p *parser) sandboxNetwork(server, key string, raw json.RawMessage) sandbox.Network {
	switch k := Kind(raw); k {
	case "boolean":
		return sandbox.Network{All: p.boolean(server, key, raw)}
	case "array":
		elems, _ := arrayElements(raw) // jsonscan.go
		var n sandbox.Network
		for i, e := range elems {
			var port int
			if Kind(e) != "number" || json.Unmarshal(e, &port) != nil || port < 1 || port > 65535 {
				p.fail(server, fmt.Sprintf("%s[%d]", key, i), "invalid port %s: want an integer from 1 to 65535", e)
				continue
			}
			if !slices.Contains(n.Ports, uint16(port)) {
				n.Ports = append(n.Ports, uint16(port))
			}
		}
		return n
	default:
		p.fail(server, key, "want true, false or an array of TCP ports, got %s", k)
		return sandbox.Network{}
	}
}

// sandboxLimits parses "limits".
func (p *parser) sandboxLimits(server, key string, raw json.RawMessage) sandbox.Limits {
	members, ok := p.object(raw, server, key, "")
	if !ok {
		return sandbox.Limits{}
	}
	var l sandbox.Limits
	for _, m := range members {
		k := key + "." + m.key
		switch known(m.key, limitKeys) {
		case "memory":
			l.Memory = p.memorySize(server, k, m.val)
		case "pids":
			l.Pids = p.positiveInt(server, k, m.val)
		case "openFiles":
			l.OpenFiles = p.positiveInt(server, k, m.val)
		case "cpu":
			var f float64
			if Kind(m.val) != "number" || json.Unmarshal(m.val, &f) != nil || f < 0.01 || f > 1024 {
				p.fail(server, k, "invalid value %s: want a number of CPUs from 0.01 to 1024 (0.5: half of one)", m.val)
				continue
			}
			l.CPU = f
		default:
			p.fail(server, key, "unknown key %q%s", m.key, suggest(m.key, limitKeys))
		}
	}
	return l
}

// sizeUnits are the units of a memory size; K, M, G and T are binary, as
// in systemd's MemoryMax=.
var sizeUnits = map[string]int64{
	"": 1, "B": 1,
	"K": 1 << 10, "KiB": 1 << 10, "KB": 1e3,
	"M": 1 << 20, "MiB": 1 << 20, "MB": 1e6,
	"G": 1 << 30, "GiB": 1 << 30, "GB": 1e9,
	"T": 1 << 40, "TiB": 1 << 40, "TB": 1e12,
}

// memorySize parses a size in bytes: a number, or a string such as
// "256MiB", "1.5G", "512 M".
func (p *parser) memorySize(server, key string, raw json.RawMessage) int64 {
	const want = `want a size such as "256MiB", "1GiB" or a number of bytes, of at least 1 MiB`
	var num, unit string
	switch Kind(raw) {
	case "number":
		num = string(raw)
	case "string":
		var s string
		_ = json.Unmarshal(raw, &s)
		s = strings.TrimSpace(s)
		i := strings.IndexFunc(s, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
		if i < 0 {
			i = len(s)
		}
		num, unit = s[:i], strings.TrimSpace(s[i:])
	default:
		p.fail(server, key, "%s, got %s", want, Kind(raw))
		return 0
	}
	f, err := strconv.ParseFloat(num, 64)
	mult, okUnit := sizeUnits[unit]
	if err != nil || !okUnit || f*float64(mult) < minMemoryLimit || f*float64(mult) > math.MaxInt64/2 {
		p.fail(server, key, "invalid value %s: %s", raw, want)
		return 0
	}
	return int64(f * float64(mult))
}
