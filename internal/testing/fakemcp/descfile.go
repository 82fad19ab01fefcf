package fakemcp

import (
	"encoding/json"
	"os"
)

// EnvDescriptions is the path of a JSON object {tool: description} read at
// every tools/list: a listed tool's description is replaced by its entry,
// so a test changes a tool's definition by rewriting the file (then the
// "changed" tool announces it, or a restart lists it). Default none.
const EnvDescriptions = "MCPD_FAKE_DESCRIPTIONS"

// describe returns the description tools/list gives tool name.
func describe(name, def string) string {
	path := os.Getenv(EnvDescriptions)
	if path == "" {
		return def
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return def
	}
	var m map[string]string
	if json.Unmarshal(data, &m) != nil {
		return def
	}
	if d, ok := m[name]; ok {
		return d
	}
	return def
}
