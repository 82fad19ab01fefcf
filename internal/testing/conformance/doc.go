// Package conformance runs the official MCP conformance suite
// (npm @modelcontextprotocol/conformance) against mcpd's Streamable HTTP
// face, with two supervised stdio servers behind it: a fixture written with
// the TypeScript SDK (fixture/server.mjs) and the Go SDK's conformance
// everything-server. The test lives in conformance_test.go; the failures it
// accepts, each with its reason, are in expected-failures.txt. README.md says
// how to run it and how to update that file.
package conformance
