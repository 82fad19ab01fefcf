// Package bridgegrpc is the bridge's Backend over mcpd's gRPC socket: what
// `mcpdctl bridge` serves a host with when mcpd runs in another process.
// It turns the bridge's plain calls (internal/service values) into the
// mcpd.v1 RPCs and their streams back into callbacks: a request's events
// into onEvent and its response, the Host stream into the bridge's
// answers and notifications, the Subscribe stream into events. It links
// gRPC, the contract and its conversions (internal/apiconv), never the
// daemon's runtime, so that mcpdctl can carry it.
package bridgegrpc
