package e2e

import (
	"encoding/json"
	"flag"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// chaosDuration is how long TestChaos keeps its apps calling; raise it for
// a longer run: go test ./internal/testing/e2e -run TestChaos -chaos.duration=5m
var chaosDuration = flag.Duration("chaos.duration", 15*time.Second, "how long TestChaos keeps its apps calling")

// chaosCall is one kind of call apps make on a chaos child.
type chaosCall struct {
	tool string
	args map[string]any // besides "message", the call's token
	// echo: a result must be the call's own token.
	echo bool
}

// chaosChild is one misbehaving server of TestChaos.
type chaosChild struct {
	mode   string         // MCPD_FAKE
	config map[string]any // extra keys of its config entry
	calls  []chaosCall    // drawn at random, repeats weigh more
}

var echoCall = chaosCall{tool: "echo", echo: true}

// chaosChildren are the servers of TestChaos by name: every misbehaviour
// of a child that mcpd must survive, each next to calls that must still
// work.
func chaosChildren() map[string]chaosChild {
	children := map[string]chaosChild{
		// A well-behaved child, the control.
		"echo": {mode: "dual,quiet", calls: []chaosCall{echoCall, {tool: "echo", args: map[string]any{"ms": 50}, echo: true}}},
		// Exits in the middle of a call; restarted every time.
		"crashy": {mode: "legacy,quiet", config: map[string]any{"restart": "always"},
			calls: []chaosCall{echoCall, echoCall, echoCall, {tool: "crash"}}},
		// Never answers: every such call ends at its deadline.
		"hang": {mode: "legacy,quiet", calls: []chaosCall{echoCall, {tool: "sleep", args: map[string]any{"ms": 600000}}}},
		// Junk, arrays, scalars and CRLF around every answer; a banner and
		// an oversize line at startup.
		"garbage": {mode: "legacy,garbage,quiet", calls: []chaosCall{echoCall}},
		// Responses with unknown ids, duplicate answers, objects that are
		// no message, a truncated line before the answer.
		"liar": {mode: "dual,quiet", calls: []chaosCall{echoCall,
			{tool: "unknownid", echo: true}, {tool: "invalid", echo: true},
			{tool: "twice", echo: true}, {tool: "truncated", echo: true}}},
		// Answers over its maxLineSize.
		"big": {mode: "legacy,quiet", config: map[string]any{"maxLineSize": 65536},
			calls: []chaosCall{echoCall, {tool: "big", args: map[string]any{"bytes": 200000}}}},
		// Floods stderr, in lines and without a single newline.
		"noisy": {mode: "legacy,quiet", calls: []chaosCall{echoCall,
			{tool: "stderrraw", args: map[string]any{"kb": 512}, echo: true},
			{tool: "stderrflood", args: map[string]any{"mb": 1}}}},
		// Ignores stdin EOF and SIGTERM: every stop ends in SIGKILL.
		"stubborn": {mode: "legacy,ignoreterm,ignorestdin,quiet", config: map[string]any{"shutdownGrace": "200ms"},
			calls: []chaosCall{echoCall}},
		// Notification storms: log messages, resource updates, list changes.
		"storm": {mode: "dual,quiet", calls: []chaosCall{echoCall,
			{tool: "logburst", args: map[string]any{"n": 3000}},
			{tool: "burst", args: map[string]any{"n": 500, "uris": 5}},
			{tool: "changed", args: map[string]any{"kind": "tools"}}}},
	}
	// "remote" (chaosRemote) is added by TestChaos: a Streamable HTTP
	// server that goes down and comes back.
	// Stops reading its stdin for a while, as apps keep sending it
	// requests larger than a pipe holds.
	pad := strings.Repeat("p", 48<<10)
	children["stopread"] = chaosChild{mode: "legacy,quiet", calls: []chaosCall{echoCall,
		{tool: "stallstdin", args: map[string]any{"ms": 1500}, echo: true},
		{tool: "echo", args: map[string]any{"pad": pad}, echo: true}}}
	return children
}

// writeChaosConfig writes the config of children to dir/config.json.
func writeChaosConfig(t *testing.T, dir string, children map[string]chaosChild) string {
	t.Helper()
	servers := map[string]entry{}
	for name, c := range children {
		servers[name] = entry{mode: c.mode, extra: c.config}
	}
	// A remote server's entry is its config alone (no command).
	var config struct {
		Servers map[string]map[string]any `json:"mcpServers"`
	}
	if err := json.Unmarshal(configJSON(t, servers), &config); err != nil {
		t.Fatal(err)
	}
	for name, c := range children {
		if _, remote := c.config["url"]; remote {
			config.Servers[name] = c.config
		}
	}
	data, err := json.MarshalIndent(config, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "config.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func sortedNames(children map[string]chaosChild) []string {
	return slices.Sorted(maps.Keys(children))
}
