// Package e2e holds mcpd's end-to-end tests: the real mcpd binary, built
// once per run, serving real fake MCP servers (this test binary re-executed
// through internal/testing/fakemcp) to gRPC clients over the real Unix socket.
package e2e
