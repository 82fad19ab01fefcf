// Package httpface serves mcpd's MCP server for hosts (internal/bridge)
// over Streamable HTTP from inside the daemon: an in-process
// bridge.Backend over the core.Service (no gRPC hop, no socket), a listener
// that binds only loopback addresses or a private Unix socket, a check of
// every connection's peer uid, and DNS-rebinding protection (Host and
// Origin). Nothing below cmd/mcpd imports it.
package httpface
