// Package apiconv converts between mcpd's gRPC contract (proto/mcpd/v1)
// and the in-process service's plain values (internal/service): each
// conversion once, for the server side of the socket (internal/api) and
// its client side (internal/bridgegrpc, mcpdctl) alike. It imports only
// the contract, the service's vocabulary, jsonrpc and the standard
// library, so that mcpdctl can link it without the daemon's runtime.
package apiconv
