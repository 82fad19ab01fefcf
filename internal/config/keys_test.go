package config

import (
	"encoding/json"
	"testing"
)

// keyExamples holds a valid value of every key of the table, so that a key
// the table lists but the parser does not read (or reads under another
// name) fails TestEveryKeyIsRead.
var keyExamples = map[string]string{
	InTop + ".mcpServers": `{}`, InTop + ".servers": `{}`, InTop + ".httpListen": `"off"`,
	InTop + ".profiles": `{}`, InTop + ".audit": `{}`, InTop + ".registry": `"https://registry.example"`,
	InTop + ".dashboard": `false`, InTop + ".$schema": `"x"`, InTop + ".inputs": `[]`,

	"server.command": `"/bin/true"`, "server.args": `["a"]`, "server.env": `{"A": "b"}`,
	"server.cwd": `"/"`, "server.type": `"stdio"`, "server.protocol": `"legacy"`,
	"server.autostart": `true`, "server.restart": `"never"`, "server.requestTimeout": `"5s"`,
	"server.shutdownGrace": `"1s"`, "server.discoverTimeout": `"1s"`, "server.disabled": `true`,
	"server.maxLineSize": `1048576`, "server.cache": `"never"`, "server.roots": `true`,
	"server.sampling": `false`, "server.elicitation": `false`, "server.idleTimeout": `"1m"`,
	"server.stdinTimeout": `"5s"`, "server.sandbox": `false`, "server.pin": `"off"`,
	"server.share": `"client"`, "server.maxInstances": `2`, "server.clientCapabilities": `{}`,
	"server.url": `"https://mcp.example/mcp"`, "server.headers": `{"X-A": "b"}`, "server.oauth": `{}`,

	"server.oauth.clientId": `"id"`, "server.oauth.clientSecret": `"s"`,
	"server.oauth.scopes": `"a b"`, "server.oauth.redirectPort": `8123`,

	"server.sandbox.preset": `"strict"`, "server.sandbox.read": `["/usr"]`,
	"server.sandbox.write": `["/tmp"]`, "server.sandbox.network": `[443]`,
	"server.sandbox.limits": `{}`, "server.sandbox.bestEffort": `true`,

	"server.sandbox.limits.memory": `"256MiB"`, "server.sandbox.limits.pids": `64`,
	"server.sandbox.limits.cpu": `0.5`, "server.sandbox.limits.openFiles": `256`,

	"audit.enabled": `true`, "audit.arguments": `true`, "audit.maxSize": `1048576`, "audit.keep": `2`,
}

// fileWith returns a config file that sets key k to val, inside a server
// where k belongs to one.
func fileWith(k Key, val string) string {
	remote := k.In == InOAuth || k.Name == "url" || k.Name == "headers" || k.Name == "oauth" || k.Name == "type"
	base := `"command": "/bin/true"`
	if remote {
		base = `"url": "https://mcp.example/mcp"`
		if k.Name == "type" {
			val = `"http"`
		}
	}
	if k.Name == "command" || k.Name == "url" {
		base = ""
	}
	member := func(name, v string) string { return `"` + name + `": ` + v }
	sep := func(a, b string) string {
		if a == "" {
			return b
		}
		return a + ", " + b
	}
	switch k.In {
	case InTop:
		return "{" + member(k.Name, val) + "}"
	case InAudit:
		return `{"audit": {` + member(k.Name, val) + "}}"
	case InServer:
		return `{"mcpServers": {"s": {` + sep(base, member(k.Name, val)) + "}}}"
	case InOAuth:
		return `{"mcpServers": {"s": {` + base + `, "oauth": {"clientId": "id", ` + member(k.Name, val) + "}}}}"
	case InSandbox:
		return `{"mcpServers": {"s": {` + base + `, "sandbox": {` + member(k.Name, val) + "}}}}"
	case InLimits:
		return `{"mcpServers": {"s": {` + base + `, "sandbox": {"limits": {` + member(k.Name, val) + "}}}}}"
	}
	return ""
}

// Every key of the table is read by the parser: a file setting it to a
// valid value has no problem.
func TestEveryKeyIsRead(t *testing.T) {
	for _, k := range Keys() {
		id := k.In + "." + k.Name
		val, ok := keyExamples[id]
		if !ok {
			t.Errorf("key %s has no example in keyExamples", id)
			continue
		}
		file := fileWith(k, val)
		switch id {
		case "server.oauth.clientId":
			file = `{"mcpServers": {"s": {"url": "https://mcp.example/mcp", "oauth": {"clientId": "id"}}}}`
		case "server.maxInstances":
			file = `{"mcpServers": {"s": {"command": "/bin/true", "share": "client", "maxInstances": 2}}}`
		}
		if !json.Valid([]byte(file)) {
			t.Fatalf("key %s: test file is not JSON: %s", id, file)
		}
		cfg, err := Parse("config.json", []byte(file))
		if err != nil {
			t.Errorf("key %s: %s: %v", id, file, err)
			continue
		}
		if cerr := cfg.Err(); cerr != nil {
			t.Errorf("key %s: %s: %v", id, file, cerr)
		}
	}
}

// A key outside the table is refused in every object.
func TestKeyOutsideTableRefused(t *testing.T) {
	for _, in := range []string{InTop, InServer, InOAuth, InSandbox, InLimits, InAudit} {
		file := fileWith(Key{In: in, Name: "notAKey"}, "1")
		cfg, err := Parse("config.json", []byte(file))
		if err == nil && cfg.Err() == nil {
			t.Errorf("%s: a key outside the table was accepted: %s", in, file)
		}
	}
}

// Every key is documented.
func TestKeysDocumented(t *testing.T) {
	seen := map[string]bool{}
	for _, k := range Keys() {
		id := k.In + "." + k.Name
		if seen[id] {
			t.Errorf("key %s is listed twice", id)
		}
		seen[id] = true
		if k.Type == "" || k.Default == "" || k.Doc == "" {
			t.Errorf("key %s lacks a type, default or doc", id)
		}
	}
}
